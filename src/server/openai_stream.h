#pragma once
// One generation in flight: turns the engine's token events into OpenAI output. Token ids are
// detokenized incrementally, matched against stop strings, split into reasoning and content and
// scanned for tool calls; then sent as SSE chunks, or gathered into one JSON body at the end.
// The engine thread calls on_event; the HTTP thread may call on_disconnect; a mutex orders them.
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "model/tokenizer.h"
#include "model/tokenizer_stream.h"
#include "server/continuous_usage_writer.h"
#include "server/http_types.h"
#include "server/openai_response.h"
#include "server/reasoning_parser.h"
#include "server/stop_strings.h"
#include "server/tool_call_parser.h"

namespace paceline {

struct OpenAiStreamOptions {
  bool chat = true;  // chat.completion(.chunk) objects; false: text_completion
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;  // usage on every chunk (ContinuousUsageWriter)
  bool parse_tool_calls = false;
  bool parallel_tool_calls = true;  // false: only the first tool call is sent
  ReasoningMode reasoning = ReasoningMode::kOff;
  std::vector<std::string> stop;
  uint64_t seed = 0;  // tool-call ids
};

class OpenAiStream : public std::enable_shared_from_this<OpenAiStream> {
 public:
  OpenAiStream(OpenAiStreamOptions options, ResponseMeta meta, const Tokenizer& tokenizer,
               std::shared_ptr<ResponseWriter> writer, Engine& engine);

  // Submits to the engine and hooks the client's disconnect to a cancel.
  void start(std::vector<int32_t> prompt, RequestParams params);
  void on_event(const TokenEvent& ev);
  void on_disconnect();

 private:
  // Text that passed the stop-string matcher, through the reasoning and tool-call parsers.
  void emit_text(const std::string& text, bool final);
  void send_content(const std::string& reasoning, const std::string& content,
                    const std::vector<ToolCall>& calls);
  void finish(std::string_view finish_reason, const Usage& usage);

  OpenAiStreamOptions options_;
  ResponseMeta meta_;
  std::shared_ptr<ResponseWriter> writer_;
  std::shared_ptr<ContinuousUsageWriter> usage_writer_;  // in front of writer_; null when off
  Engine& engine_;
  int64_t tokenizer_vocab_;
  IncrementalDecoder detok_;
  StopStringMatcher stops_;
  ReasoningStreamParser reasoning_;
  ToolCallStreamParser tools_;

  // Ends the engine request early (stop string, client gone); the caller holds mu_.
  void cancel_locked();

  std::mutex mu_;
  uint64_t request_id_ = 0;  // 0 until submit returns
  bool cancel_wanted_ = false;
  bool started_ = false;  // SSE headers and the role chunk sent
  bool done_ = false;
  std::string full_text_;  // non-streaming: everything after stop strings
  Usage last_usage_;
  int64_t tokens_seen_ = 0;
};

}  // namespace paceline
