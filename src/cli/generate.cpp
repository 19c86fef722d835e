#include "cli/generate.h"

#include <chrono>
#include <cstdio>
#include <future>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "engine/engine.h"
#include "model/chat_template.h"
#include "model/tokenizer_stream.h"

namespace paceline {

void add_generate_options(CLI::App& cmd, GenerateOptions& o) {
  add_model_options(cmd, o.model);
  cmd.add_option("--prompt,-p", o.prompt, "the user message (or the raw text with --raw)")
      ->capture_default_str();
  cmd.add_flag("--raw", o.raw, "send the prompt as is, without the chat template");
  cmd.add_option("--enable-thinking", o.enable_thinking, "chat template's enable_thinking");
  cmd.add_option("--max-tokens", o.max_tokens, "tokens to generate")->capture_default_str();
  cmd.add_option("--temperature", o.temperature, "0 is greedy")->capture_default_str();
  cmd.add_option("--top-p", o.top_p, "nucleus sampling mass")->capture_default_str();
  cmd.add_option("--top-k", o.top_k, "-1: all tokens")->capture_default_str();
  cmd.add_flag("--ignore-eos", o.ignore_eos, "keep generating past end-of-sequence tokens");
}

int run_generate(const GenerateOptions& o) {
  if (o.max_tokens < 1) fail("--max-tokens must be at least 1, got {}", o.max_tokens);
  LoadedModel m = load_model(o.model);

  std::string text = o.prompt;
  if (!o.raw) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    messages.push_back({{"role", "user"}, {"content", o.prompt}});
    ChatTemplateOptions chat;
    chat.add_generation_prompt = true;
    chat.enable_thinking = o.enable_thinking;
    if (!m.chat_template) {
      fail("the model has no chat template: pass --chat-template FILE, or --raw to send the "
           "prompt as is");
    }
    text = m.chat_template->render(messages, nullptr, chat);
  }
  std::vector<int32_t> prompt = m.tokenizer->encode(text);

  SchedulerConfig sched;
  sched.max_model_len = m.config.max_position_embeddings;
  sched.seed = o.model.seed;
  SteadyClock clock;
  Engine engine(sched, make_executor(o.model, m, sched), clock);
  engine.start();

  RequestParams params;
  params.max_tokens = o.max_tokens;
  params.ignore_eos = o.ignore_eos;
  params.sampling.temperature = o.temperature;
  params.sampling.top_p = o.top_p;
  params.sampling.top_k = o.top_k;
  for (int64_t id : m.config.eos_token_ids)
    params.eos_token_ids.push_back(static_cast<int32_t>(id));

  std::printf("prompt (%zu tokens): %s\n--- answer ---\n", prompt.size(), o.prompt.c_str());
  std::fflush(stdout);
  IncrementalDecoder detok(*m.tokenizer, /*skip_special_tokens=*/true);
  const int64_t vocab = m.tokenizer->vocab_size();
  std::promise<TokenEvent> done;
  const int64_t t0 = clock.now_ns();
  int64_t first_token_ns = -1;
  engine.submit(prompt, params, [&](const TokenEvent& ev) {
    for (int32_t id : ev.token_ids) {
      if (first_token_ns < 0) first_token_ns = clock.now_ns();
      if (id < 0 || id >= vocab) continue;  // beyond the tokenizer: no text
      std::string piece = detok.push(id);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    }
    std::fflush(stdout);
    if (ev.finished) done.set_value(ev);
  });
  TokenEvent last = done.get_future().get();
  const int64_t t1 = clock.now_ns();
  std::string rest = detok.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  engine.stop();
  if (!last.error.empty()) fail("{}", last.error);

  const double total_s = static_cast<double>(t1 - t0) * 1e-9;
  const double ttft_ms = first_token_ns >= 0 ? static_cast<double>(first_token_ns - t0) * 1e-6 : 0;
  const int64_t n = last.usage.completion_tokens;
  const double decode_s =
      static_cast<double>(t1 - (first_token_ns >= 0 ? first_token_ns : t0)) * 1e-9;
  std::printf(
      "\n--- %lld tokens, finish_reason=%s, ttft %.1f ms, %.1f tok/s decode, %.2f s total ---\n",
      static_cast<long long>(n),
      std::string(finish_reason_name(last.finish_reason.value_or(FinishReason::kAbort))).c_str(),
      ttft_ms, n > 1 && decode_s > 0 ? static_cast<double>(n - 1) / decode_s : 0.0, total_s);
  if (last.finish_reason.value_or(FinishReason::kAbort) == FinishReason::kAbort) {
    // The engine gave up on the request (no error text): not an answer, so not a success.
    std::fflush(stdout);
    std::fprintf(stderr, "error: the engine aborted the request after %lld tokens\n",
                 static_cast<long long>(n));
    return 1;
  }
  return 0;
}

}  // namespace paceline
