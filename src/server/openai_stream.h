#pragma once
// One response in flight: its n choices (OpenAI's `n`), each one engine request over the same
// prompt, whose token events become OpenAI output. Each choice's token ids are detokenized
// incrementally, matched against stop strings, split into reasoning and content and scanned for
// tool calls; then sent as SSE chunks carrying the choice's index (chunks of different choices
// interleave as the engine steps them), or gathered into one JSON body once every choice ended.
// The engine thread calls on_event; the HTTP thread may call on_disconnect; a mutex orders them.
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/tokenizer.h"
#include "model/tokenizer_stream.h"
#include "server/continuous_usage_writer.h"
#include "server/http_types.h"
#include "server/openai_logprobs.h"
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
  int64_t n = 1;      // choices
  bool logprobs = false;     // the request asked for logprobs (RequestParams::logprobs >= 0)
  std::string echo_text;     // completions with echo: the prompt's text, first in each choice
  std::vector<int32_t> echo_tokens;  // echo with logprobs: the prompt, first in the logprobs
};

class OpenAiStream : public std::enable_shared_from_this<OpenAiStream> {
 public:
  OpenAiStream(OpenAiStreamOptions options, ResponseMeta meta, const Tokenizer& tokenizer,
               std::shared_ptr<ResponseWriter> writer, Engine& engine);
  ~OpenAiStream();

  // Submits the n engine requests and hooks the client's disconnect to cancelling them all. With
  // a sampling seed s, choice i samples with seed s + i (choice 0 as a request with n = 1).
  void start(std::vector<int32_t> prompt, RequestParams params);
  void on_event(size_t choice, const TokenEvent& ev);
  void on_disconnect();

 private:
  struct Choice;
  // Text that passed the stop-string matcher, through the reasoning and tool-call parsers.
  void emit_text(Choice& c, const std::string& text, bool final);
  void send_content(Choice& c, const std::string& reasoning, const std::string& content,
                    const std::vector<ToolCall>& calls);
  void start_stream();
  void fail_response(const std::string& error);
  void finish(Choice& c, std::string_view finish_reason, const Usage& usage);
  void finish_response();
  // The choice's logprobs not yet sent, as the JSON of its kind (empty: none), and forgets them.
  std::string take_logprobs(Choice& c);
  // Completions' echo in a stream: the prompt's text (and its logprobs), once per choice.
  void send_echo(Choice& c);
  std::string choice_json(Choice& c);
  // Ends one choice's engine request early (stop string, client gone); the caller holds mu_.
  void cancel_locked(Choice& c);

  OpenAiStreamOptions options_;
  ResponseMeta meta_;
  const Tokenizer& tokenizer_;
  std::shared_ptr<ResponseWriter> writer_;
  std::shared_ptr<ContinuousUsageWriter> usage_writer_;  // in front of writer_; null when off
  Engine& engine_;
  TokenBytes token_bytes_;

  std::mutex mu_;
  std::vector<std::unique_ptr<Choice>> choices_;
  bool started_ = false;  // SSE headers and the role chunks sent
  bool done_ = false;     // the response has ended (or the client left)
  int64_t num_finished_ = 0;
};

}  // namespace paceline
