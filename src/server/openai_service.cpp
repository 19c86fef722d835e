#include "server/openai_service.h"

#include <chrono>

#include "base/error.h"
#include "base/log.h"
#include "model/chat_template.h"
#include "server/openai_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/openai_stream.h"

namespace paceline {

namespace {

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void send_error(ResponseWriter& w, const ApiError& err,
                const std::map<std::string, std::string>& headers = {}) {
  w.send(err.status, "application/json", error_json(err), headers);
}

// Runs a handler body; any exception becomes OpenAI's error object with its status.
template <typename F>
void guarded(ResponseWriter& w, F&& body) {
  try {
    body();
  } catch (...) {
    ApiError err = api_error_from_current_exception();
    if (err.status >= 500) spdlog::error("request failed: {}", err.message);
    send_error(w, err);
  }
}

}  // namespace

OpenAiService::OpenAiService(OpenAiServiceOptions options, const ModelConfig& config,
                             const Tokenizer& tokenizer, Engine& engine, MetricsRegistry& metrics)
    : options_(std::move(options)),
      config_(config),
      tokenizer_(tokenizer),
      engine_(engine),
      metrics_(metrics),
      created_(unix_seconds()) {}

bool OpenAiService::authorized(const HttpRequest& req, ResponseWriter& w) const {
  if (options_.api_key.empty()) return true;
  if (req.header("authorization") == "Bearer " + options_.api_key) return true;
  send_error(w, authentication_error());
  return false;
}

bool OpenAiService::admit(ResponseWriter& w) {
  if (engine_.num_unfinished() < options_.max_num_seqs + options_.max_waiting) return true;
  send_error(w, overloaded_error("the waiting queue is full; retry later"), {{"Retry-After", "1"}});
  return false;
}

void OpenAiService::check_model(const std::string& requested) const {
  if (!requested.empty() && requested != options_.served_model_name) {
    throw_api_error(model_not_found_error(requested));
  }
}

void OpenAiService::install(HttpServer& server) {
  server.route("POST", "/v1/chat/completions",
               [this](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
                 chat_completions(req, std::move(w));
               });
  server.route("POST", "/v1/completions",
               [this](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
                 completions(req, std::move(w));
               });
  server.route("GET", "/v1/models", [this](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
    models(req, std::move(w));
  });
  server.route("GET", "/health", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->send(200, "application/json", "{\"status\":\"ok\"}");
  });
  server.route("GET", "/version", [this](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->send(200, "application/json", "{\"version\":\"" + options_.version + "\"}");
  });
  server.route("GET", "/metrics", [this](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->send(200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render_prometheus("paceline:"));
  });
}

void OpenAiService::models(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  if (!authorized(req, *w)) return;
  ModelCard card{options_.served_model_name, created_, options_.model_root, options_.max_model_len};
  w->send(200, "application/json", models_list_json(std::span<const ModelCard>(&card, 1)));
}

void OpenAiService::chat_completions(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  if (!authorized(req, *w)) return;
  guarded(*w, [&] {
    ChatCompletionRequest r = parse_chat_completion_request(req.body, req.header("content-type"));
    check_model(r.model);
    std::string rendered = render_chat(r);
    std::vector<int32_t> prompt = tokenizer_.encode(rendered);
    const int64_t max_tokens = resolve_max_tokens(r.options, static_cast<int64_t>(prompt.size()),
                                                  options_.max_model_len, "messages");
    if (!admit(*w)) return;
    RequestParams params = to_request_params(r.options, max_tokens);
    for (int64_t id : config_.eos_token_ids) params.eos_token_ids.push_back(static_cast<int32_t>(id));

    const uint64_t seed = next_seed_.fetch_add(1);
    OpenAiStreamOptions so;
    so.chat = true;
    so.stream = r.options.stream;
    so.include_usage = r.options.include_usage;
    so.parse_tool_calls = r.parses_tool_calls();
    so.reasoning = reasoning_mode_for(r.enable_thinking, rendered);
    so.stop = r.options.stop;
    so.seed = seed;
    ResponseMeta meta{make_response_id("chatcmpl-", seed), options_.served_model_name, unix_seconds()};
    auto stream = std::make_shared<OpenAiStream>(std::move(so), std::move(meta), tokenizer_, w, engine_);
    stream->start(std::move(prompt), std::move(params));
  });
}

// The model's own chat template (or --chat-template's), as vLLM renders it.
std::string OpenAiService::render_chat(const ChatCompletionRequest& r) const {
  if (!options_.chat_template) {
    throw_api_error(invalid_request_error(
        "this model has no chat template (its tokenizer_config.json has none); start the server "
        "with --chat-template FILE",
        "messages"));
  }
  ChatTemplateOptions chat;
  chat.add_generation_prompt = true;
  chat.enable_thinking = r.enable_thinking;
  try {
    return options_.chat_template->render(r.messages, r.tools, chat);
  } catch (const Error& e) {
    throw_api_error(invalid_request_error(e.what(), "messages"));
  }
}

void OpenAiService::completions(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  if (!authorized(req, *w)) return;
  guarded(*w, [&] {
    CompletionRequest r = parse_completion_request(req.body, req.header("content-type"));
    check_model(r.model);
    std::vector<int32_t> prompt;
    if (r.has_token_prompt()) {
      check_prompt_token_ids(r.prompt_token_ids, config_.vocab_size);
      prompt = std::move(r.prompt_token_ids);
    } else {
      prompt = tokenizer_.encode(*r.prompt_text);
    }
    if (prompt.empty()) throw_api_error(invalid_request_error("prompt is empty", "prompt"));
    const int64_t max_tokens = resolve_max_tokens(r.options, static_cast<int64_t>(prompt.size()),
                                                  options_.max_model_len, "prompt");
    if (!admit(*w)) return;
    RequestParams params = to_request_params(r.options, max_tokens);
    for (int64_t id : config_.eos_token_ids) params.eos_token_ids.push_back(static_cast<int32_t>(id));

    const uint64_t seed = next_seed_.fetch_add(1);
    OpenAiStreamOptions so;
    so.chat = false;
    so.stream = r.options.stream;
    so.include_usage = r.options.include_usage;
    so.stop = r.options.stop;
    so.seed = seed;
    ResponseMeta meta{make_response_id("cmpl-", seed), options_.served_model_name, unix_seconds()};
    auto stream = std::make_shared<OpenAiStream>(std::move(so), std::move(meta), tokenizer_, w, engine_);
    stream->start(std::move(prompt), std::move(params));
  });
}

}  // namespace paceline
