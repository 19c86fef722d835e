#include "server/openai_stream.h"

#include "base/error.h"
#include "server/openai_error.h"

namespace paceline {

struct OpenAiStream::Choice {
  Choice(int64_t i, const OpenAiStreamOptions& options, const Tokenizer& tokenizer)
      : index(i),
        detok(tokenizer, /*skip_special_tokens=*/true),
        stops(options.stop),
        reasoning(options.reasoning),
        tools(options.seed + static_cast<uint64_t>(i)) {}

  int64_t index;
  IncrementalDecoder detok;
  StopStringMatcher stops;
  ReasoningStreamParser reasoning;
  ToolCallStreamParser tools;
  uint64_t request_id = 0;  // 0 until submit returns
  bool cancel_wanted = false;
  bool finished = false;
  std::string full_text;  // non-streaming: everything after stop strings
  std::string finish_reason;
  // Logprobs of tokens not yet sent (streaming) or of every token (non-streaming).
  std::vector<RowLogprobs> logprobs;
  std::vector<RowLogprobs> prompt_logprobs;  // echo with logprobs: prompt tokens 1..
  bool echo_sent = false;                    // the prompt's text and logprobs are out
  int64_t text_offset = 0;              // completions stream: characters sent so far
  Usage usage;
  int64_t tokens_seen = 0;
};

OpenAiStream::OpenAiStream(OpenAiStreamOptions options, ResponseMeta meta,
                           const Tokenizer& tokenizer, std::shared_ptr<ResponseWriter> writer,
                           Engine& engine)
    : options_(std::move(options)),
      meta_(std::move(meta)),
      tokenizer_(tokenizer),
      writer_(std::move(writer)),
      engine_(engine) {
  token_bytes_ = [&tokenizer](int32_t id) -> std::string {
    // A model vocabulary larger than the tokenizer's has ids without text.
    if (id < 0 || id >= tokenizer.vocab_size()) return {};
    try {
      return std::string(tokenizer.token_bytes(id));
    } catch (const Error&) {
      return {};
    }
  };
  if (options_.continuous_usage) {
    usage_writer_ = std::make_shared<ContinuousUsageWriter>(writer_);
    writer_ = usage_writer_;
  }
  for (int64_t i = 0; i < options_.n; ++i) {
    choices_.push_back(std::make_unique<Choice>(i, options_, tokenizer_));
  }
}

OpenAiStream::~OpenAiStream() = default;

void OpenAiStream::start(std::vector<int32_t> prompt, RequestParams params) {
  auto self = shared_from_this();
  writer_->on_disconnect([self] { self->on_disconnect(); });
  for (size_t i = 0; i < choices_.size(); ++i) {
    RequestParams p = params;
    if (p.sampling.seed) *p.sampling.seed += i;
    // The last choice takes the prompt; the others copy it.
    std::vector<int32_t> tokens = i + 1 == choices_.size() ? std::move(prompt) : prompt;
    uint64_t id = engine_.submit(std::move(tokens), std::move(p),
                                 [self, i](const TokenEvent& ev) { self->on_event(i, ev); });
    std::lock_guard lock(mu_);
    Choice& c = *choices_[i];
    c.request_id = id;
    if (c.cancel_wanted) engine_.cancel(id);
  }
}

void OpenAiStream::cancel_locked(Choice& c) {
  if (c.request_id != 0) {
    engine_.cancel(c.request_id);
  } else {
    c.cancel_wanted = true;
  }
}

void OpenAiStream::on_disconnect() {
  std::lock_guard lock(mu_);
  if (done_) return;
  done_ = true;
  for (auto& c : choices_) {
    if (!c->finished) cancel_locked(*c);
  }
}

void OpenAiStream::fail_response(const std::string& error) {
  done_ = true;
  for (auto& c : choices_) {
    if (!c->finished) cancel_locked(*c);
  }
  ApiError err = invalid_request_error(error);
  if (error.find("maximum context length") != std::string::npos) {
    err.code = "context_length_exceeded";
  }
  if (!started_) {
    writer_->send(err.status, "application/json", error_json(err));
  } else {
    writer_->sse_event(error_json(err));
    writer_->end();
  }
}

void OpenAiStream::on_event(size_t index, const TokenEvent& ev) {
  std::lock_guard lock(mu_);
  Choice& c = *choices_[index];
  if (done_ || c.finished) return;
  if (!ev.error.empty()) {
    c.finished = true;
    fail_response(ev.error);
    return;
  }
  c.usage = ev.usage;
  c.tokens_seen += static_cast<int64_t>(ev.token_ids.size());
  if (usage_writer_) {  // the counts so far on every chunk: the prompt once, every choice's tokens
    Usage so_far = ev.usage;
    so_far.completion_tokens = 0;
    for (const auto& other : choices_) so_far.completion_tokens += other->tokens_seen;
    usage_writer_->set_usage(so_far);
  }
  if (options_.logprobs) {
    c.logprobs.insert(c.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
    c.prompt_logprobs.insert(c.prompt_logprobs.end(), ev.prompt_logprobs.begin(),
                             ev.prompt_logprobs.end());
  }
  std::string text;
  for (int32_t id : ev.token_ids) {
    // A model vocabulary larger than the tokenizer's (Qwen3 pads to 151,936) can sample ids the
    // tokenizer has no text for: they count as tokens and add no text.
    if (id >= 0 && id < tokenizer_.vocab_size()) text += c.detok.push(id);
  }
  if (ev.finished) text += c.detok.flush();

  StopStringMatcher::Result r = c.stops.push(text);
  if (r.stopped) {
    emit_text(c, r.emit, /*final=*/true);
    Usage usage = c.usage;
    usage.completion_tokens = c.tokens_seen;
    finish(c, finish_reason_text(FinishReason::kStop, c.tools.num_calls() > 0), usage);
    cancel_locked(c);
    return;
  }
  if (!ev.finished) {
    emit_text(c, r.emit, /*final=*/false);
    return;
  }
  emit_text(c, r.emit + c.stops.flush(), /*final=*/true);
  const FinishReason reason = ev.finish_reason.value_or(FinishReason::kStop);
  if (reason == FinishReason::kAbort && writer_->closed()) {
    done_ = true;
    return;
  }
  finish(c, finish_reason_text(reason, c.tools.num_calls() > 0), ev.usage);
}

void OpenAiStream::emit_text(Choice& c, const std::string& text, bool final) {
  if (!options_.stream) {
    c.full_text += text;
    return;
  }
  if (!options_.chat) {
    send_content(c, "", text, {});
    return;
  }
  ReasoningStreamParser::Delta rd = c.reasoning.push(text);
  if (final) {
    ReasoningStreamParser::Delta tail = c.reasoning.flush();
    rd.reasoning += tail.reasoning;
    rd.content += tail.content;
  }
  if (!options_.parse_tool_calls) {
    send_content(c, rd.reasoning, rd.content, {});
    return;
  }
  ToolCallStreamParser::Delta td = c.tools.push(rd.content);
  if (final) {
    ToolCallStreamParser::Delta tail = c.tools.flush();
    td.content += tail.content;
    td.calls.insert(td.calls.end(), tail.calls.begin(), tail.calls.end());
  }
  if (!options_.parallel_tool_calls) {
    std::erase_if(td.calls, [](const ToolCall& call) { return call.index > 0; });
  }
  send_content(c, rd.reasoning, td.content, td.calls);
}

std::string OpenAiStream::take_logprobs(Choice& c) {
  if (!options_.logprobs) return {};
  std::string json;
  if (options_.chat) {
    json = chat_logprobs_json(c.logprobs, token_bytes_);
  } else {
    std::vector<CompletionToken> tokens;
    tokens.reserve(c.logprobs.size() + c.prompt_logprobs.size() + 1);
    if (!c.echo_sent && !options_.echo_tokens.empty()) {
      // The prompt's first token has nothing before it to be scored by.
      tokens.push_back({options_.echo_tokens.front(), std::nullopt});
      for (const RowLogprobs& row : c.prompt_logprobs) tokens.push_back({row.chosen.token, row});
      c.prompt_logprobs.clear();
    }
    c.echo_sent = true;
    for (const RowLogprobs& row : c.logprobs) tokens.push_back({row.chosen.token, row});
    json = completion_logprobs_json(tokens, token_bytes_, c.text_offset);
    c.text_offset += completion_text_length(tokens, token_bytes_);
  }
  c.logprobs.clear();
  return json;
}

void OpenAiStream::start_stream() {
  if (started_) return;
  writer_->start_sse();
  started_ = true;
  if (!options_.chat) return;
  for (auto& c : choices_) {
    writer_->sse_event(chat_chunk(meta_, ChatDelta{.role = true}, std::nullopt, c->index));
  }
}

void OpenAiStream::send_echo(Choice& c) {
  if (c.echo_sent || options_.echo_text.empty()) return;
  std::string logprobs;
  if (options_.logprobs) {
    // Only the prompt's entries: the tokens after it ride on their own chunks.
    std::vector<RowLogprobs> generated = std::move(c.logprobs);
    c.logprobs.clear();
    logprobs = take_logprobs(c);
    c.logprobs = std::move(generated);
  }
  c.echo_sent = true;
  writer_->sse_event(completion_chunk(meta_, options_.echo_text, std::nullopt, c.index, logprobs));
}

// A choice's logprobs ride on its first chunk after their tokens; those of tokens that added no
// text yet (held by the stop matcher or an unfinished character) wait for the next, or for the
// finish chunk.
void OpenAiStream::send_content(Choice& c, const std::string& reasoning, const std::string& content,
                                const std::vector<ToolCall>& calls) {
  start_stream();
  if (!options_.chat) {
    send_echo(c);
    if (!content.empty()) {
      const std::string logprobs = take_logprobs(c);
      writer_->sse_event(completion_chunk(meta_, content, std::nullopt, c.index, logprobs));
    }
    return;
  }
  if (!reasoning.empty()) {
    const std::string logprobs = take_logprobs(c);
    writer_->sse_event(chat_chunk(meta_, ChatDelta{.reasoning_content = reasoning}, std::nullopt,
                                  c.index, logprobs));
  }
  if (!content.empty()) {
    const std::string logprobs = c.logprobs.empty() ? std::string() : take_logprobs(c);
    writer_->sse_event(
        chat_chunk(meta_, ChatDelta{.content = content}, std::nullopt, c.index, logprobs));
  }
  if (!calls.empty()) {
    const std::string logprobs = c.logprobs.empty() ? std::string() : take_logprobs(c);
    writer_->sse_event(
        chat_chunk(meta_, ChatDelta{.tool_calls = calls}, std::nullopt, c.index, logprobs));
  }
}

std::string OpenAiStream::choice_json(Choice& c) {
  if (!options_.chat) {
    return text_choice_json(c.index, options_.echo_text + c.full_text, take_logprobs(c),
                            c.finish_reason);
  }
  ReasoningSplit split = split_reasoning(c.full_text, options_.reasoning);
  ChatMessageOut message;
  message.reasoning_content = split.reasoning;
  if (options_.parse_tool_calls) {
    ToolCallParse parsed = parse_tool_calls(split.content, options_.seed + static_cast<uint64_t>(c.index));
    message.tool_calls = std::move(parsed.calls);
    if (!options_.parallel_tool_calls && message.tool_calls.size() > 1) {
      message.tool_calls.resize(1);
    }
    if (!message.tool_calls.empty() && c.finish_reason == "stop") c.finish_reason = "tool_calls";
    if (!parsed.content.empty() || message.tool_calls.empty()) message.content = parsed.content;
  } else {
    message.content = split.content;
  }
  return chat_choice_json(c.index, message, take_logprobs(c), c.finish_reason);
}

void OpenAiStream::finish(Choice& c, std::string_view finish_reason, const Usage& usage) {
  c.finished = true;
  c.finish_reason = std::string(finish_reason);
  c.usage = usage;
  ++num_finished_;
  if (options_.stream) {
    start_stream();
    if (!options_.chat) send_echo(c);
    const std::string logprobs = c.logprobs.empty() ? std::string() : take_logprobs(c);
    if (options_.chat) {
      writer_->sse_event(chat_chunk(meta_, ChatDelta{}, finish_reason, c.index, logprobs));
    } else {
      writer_->sse_event(completion_chunk(meta_, "", finish_reason, c.index, logprobs));
    }
  }
  if (num_finished_ == static_cast<int64_t>(choices_.size())) finish_response();
}

// Every choice has ended: the usage counts the prompt once and every choice's completion.
void OpenAiStream::finish_response() {
  done_ = true;
  Usage usage = choices_.front()->usage;
  usage.completion_tokens = 0;
  for (const auto& c : choices_) usage.completion_tokens += c->usage.completion_tokens;
  const char* object = options_.chat ? "chat.completion" : "text_completion";
  if (options_.stream) {
    if (options_.include_usage) {
      writer_->sse_event(options_.chat ? chat_usage_chunk(meta_, usage)
                                       : completion_usage_chunk(meta_, usage));
    }
    writer_->sse_event("[DONE]");
    writer_->end();
    return;
  }
  std::vector<std::string> choices;
  choices.reserve(choices_.size());
  for (auto& c : choices_) choices.push_back(choice_json(*c));
  writer_->send(200, "application/json", completion_body_json(meta_, object, choices, usage));
}

}  // namespace paceline
