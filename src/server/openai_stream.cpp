#include "server/openai_stream.h"

#include "server/openai_error.h"

namespace paceline {

OpenAiStream::OpenAiStream(OpenAiStreamOptions options, ResponseMeta meta,
                           const Tokenizer& tokenizer, std::shared_ptr<ResponseWriter> writer,
                           Engine& engine)
    : options_(std::move(options)),
      meta_(std::move(meta)),
      writer_(std::move(writer)),
      engine_(engine),
      tokenizer_vocab_(tokenizer.vocab_size()),
      detok_(tokenizer, /*skip_special_tokens=*/true),
      stops_(options_.stop),
      reasoning_(options_.reasoning),
      tools_(options_.seed) {
  if (options_.continuous_usage) {
    usage_writer_ = std::make_shared<ContinuousUsageWriter>(writer_);
    writer_ = usage_writer_;
  }
}

void OpenAiStream::start(std::vector<int32_t> prompt, RequestParams params) {
  auto self = shared_from_this();
  writer_->on_disconnect([self] { self->on_disconnect(); });
  uint64_t id = engine_.submit(std::move(prompt), std::move(params),
                               [self](const TokenEvent& ev) { self->on_event(ev); });
  std::lock_guard lock(mu_);
  request_id_ = id;
  if (cancel_wanted_) engine_.cancel(id);
}

void OpenAiStream::cancel_locked() {
  if (request_id_ != 0) {
    engine_.cancel(request_id_);
  } else {
    cancel_wanted_ = true;
  }
}

void OpenAiStream::on_disconnect() {
  std::lock_guard lock(mu_);
  if (done_) return;
  done_ = true;
  cancel_locked();
}

void OpenAiStream::on_event(const TokenEvent& ev) {
  std::lock_guard lock(mu_);
  if (done_) return;
  if (!ev.error.empty()) {
    done_ = true;
    ApiError err = invalid_request_error(ev.error);
    if (ev.error.find("maximum context length") != std::string::npos) {
      err.code = "context_length_exceeded";
    }
    if (!started_) {
      writer_->send(err.status, "application/json", error_json(err));
    } else {
      writer_->sse_event(error_json(err));
      writer_->end();
    }
    return;
  }
  last_usage_ = ev.usage;
  tokens_seen_ += static_cast<int64_t>(ev.token_ids.size());
  if (usage_writer_) {
    Usage so_far = ev.usage;
    so_far.completion_tokens = tokens_seen_;
    usage_writer_->set_usage(so_far);
  }
  std::string text;
  for (int32_t id : ev.token_ids) {
    // A model vocabulary larger than the tokenizer's (Qwen3 pads to 151,936) can sample ids the
    // tokenizer has no text for: they count as tokens and add no text.
    if (id >= 0 && id < tokenizer_vocab_) text += detok_.push(id);
  }
  if (ev.finished) text += detok_.flush();

  StopStringMatcher::Result r = stops_.push(text);
  if (r.stopped) {
    emit_text(r.emit, /*final=*/true);
    Usage usage = last_usage_;
    usage.completion_tokens = tokens_seen_;
    finish(finish_reason_text(FinishReason::kStop, tools_.num_calls() > 0), usage);
    cancel_locked();
    return;
  }
  if (!ev.finished) {
    emit_text(r.emit, /*final=*/false);
    return;
  }
  emit_text(r.emit + stops_.flush(), /*final=*/true);
  const FinishReason reason = ev.finish_reason.value_or(FinishReason::kStop);
  if (reason == FinishReason::kAbort && writer_->closed()) {
    done_ = true;
    return;
  }
  finish(finish_reason_text(reason, tools_.num_calls() > 0), ev.usage);
}

void OpenAiStream::emit_text(const std::string& text, bool final) {
  if (!options_.stream) {
    full_text_ += text;
    return;
  }
  if (!options_.chat) {
    send_content("", text, {});
    return;
  }
  ReasoningStreamParser::Delta rd = reasoning_.push(text);
  if (final) {
    ReasoningStreamParser::Delta tail = reasoning_.flush();
    rd.reasoning += tail.reasoning;
    rd.content += tail.content;
  }
  if (!options_.parse_tool_calls) {
    send_content(rd.reasoning, rd.content, {});
    return;
  }
  ToolCallStreamParser::Delta td = tools_.push(rd.content);
  if (final) {
    ToolCallStreamParser::Delta tail = tools_.flush();
    td.content += tail.content;
    td.calls.insert(td.calls.end(), tail.calls.begin(), tail.calls.end());
  }
  if (!options_.parallel_tool_calls) {
    std::erase_if(td.calls, [](const ToolCall& call) { return call.index > 0; });
  }
  send_content(rd.reasoning, td.content, td.calls);
}

void OpenAiStream::send_content(const std::string& reasoning, const std::string& content,
                                const std::vector<ToolCall>& calls) {
  if (!started_) {
    writer_->start_sse();
    if (options_.chat) writer_->sse_event(chat_chunk(meta_, ChatDelta{.role = true}));
    started_ = true;
  }
  if (!options_.chat) {
    if (!content.empty()) writer_->sse_event(completion_chunk(meta_, content));
    return;
  }
  if (!reasoning.empty()) {
    writer_->sse_event(chat_chunk(meta_, ChatDelta{.reasoning_content = reasoning}));
  }
  if (!content.empty()) writer_->sse_event(chat_chunk(meta_, ChatDelta{.content = content}));
  if (!calls.empty()) writer_->sse_event(chat_chunk(meta_, ChatDelta{.tool_calls = calls}));
}

void OpenAiStream::finish(std::string_view finish_reason, const Usage& usage) {
  done_ = true;
  if (options_.stream) {
    send_content("", "", {});  // makes sure the stream has started
    if (options_.chat) {
      writer_->sse_event(chat_chunk(meta_, ChatDelta{}, finish_reason));
      if (options_.include_usage) writer_->sse_event(chat_usage_chunk(meta_, usage));
    } else {
      writer_->sse_event(completion_chunk(meta_, "", finish_reason));
      if (options_.include_usage) writer_->sse_event(completion_usage_chunk(meta_, usage));
    }
    writer_->sse_event("[DONE]");
    writer_->end();
    return;
  }
  if (!options_.chat) {
    writer_->send(200, "application/json", text_completion_json(meta_, full_text_, finish_reason, usage));
    return;
  }
  ReasoningSplit split = split_reasoning(full_text_, options_.reasoning);
  ChatMessageOut message;
  message.reasoning_content = split.reasoning;
  std::string reason(finish_reason);
  if (options_.parse_tool_calls) {
    ToolCallParse parsed = parse_tool_calls(split.content, options_.seed);
    message.tool_calls = std::move(parsed.calls);
    if (!options_.parallel_tool_calls && message.tool_calls.size() > 1) {
      message.tool_calls.resize(1);
    }
    if (!message.tool_calls.empty() && reason == "stop") reason = "tool_calls";
    if (!parsed.content.empty() || message.tool_calls.empty()) message.content = parsed.content;
  } else {
    message.content = split.content;
  }
  writer_->send(200, "application/json", chat_completion_json(meta_, message, reason, usage));
}

}  // namespace paceline
