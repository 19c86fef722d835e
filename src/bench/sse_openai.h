#pragma once
// What an OpenAI-compatible streaming answer says, event by event: which chunks carry content
// (they time TTFT, ITL and E2EL), the final usage (token counts), the end marker, and errors
// (an error object inside the stream, or an HTTP error body). Server-neutral: only standard
// OpenAI fields, plus the reasoning fields vLLM and SGLang add to a delta.
#include <optional>
#include <string>
#include <string_view>

#include "bench/sse_parser.h"
#include "bench/transport.h"

namespace paceline::bench {

struct OpenAiChunk {
  bool done = false;     // the "[DONE]" sentinel
  bool content = false;  // a choice with text, reasoning text or tool-call deltas
  std::optional<Usage> usage;
  bool error = false;  // an error object instead of a chunk
  int error_status = 0;
  std::string error_text;
};

// Interprets one event's data. Data that is not JSON comes back as an error.
OpenAiChunk parse_openai_chunk(std::string_view data);

// The message of an error answer: OpenAI's {"error": {"message": ...}}, {"message": ...},
// FastAPI's {"detail": ...}, else the body itself (cut to 2 KiB).
std::string error_message_from_body(std::string_view body);

// One response stream: raw body bytes in, content chunks and the outcome out.
class OpenAiStreamReader {
 public:
  struct Step {
    int content_chunks = 0;  // content chunks completed by these bytes
    bool done = false;       // "[DONE]" seen: the answer is complete
    bool error = false;
    int error_status = 0;
    std::string error_text;
  };

  Step feed(std::string_view bytes);
  // The body ended (possibly without "[DONE]"): completes a last unterminated event.
  Step finish();

  // The last usage any chunk carried; all -1 when none did (the caller falls back to counting).
  const Usage& usage() const { return usage_; }
  bool usage_seen() const { return usage_seen_; }
  int64_t content_chunks() const { return content_chunks_; }

 private:
  Step consume();

  SseParser parser_;
  std::vector<SseEvent> events_;
  Usage usage_;
  bool usage_seen_ = false;
  bool done_ = false;
  int64_t content_chunks_ = 0;
};

}  // namespace paceline::bench
