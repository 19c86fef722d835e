#include "server/openai_service.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "base/error.h"
#include "base/log.h"
#include "model/chat_template.h"
#include "server/api_guard.h"
#include "server/openai_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/openai_stream.h"

namespace paceline {

namespace {

// Logprobs are the raw logits' (vLLM's raw_logprobs); an executor that adjusts the logits in place
// for logit_bias and penalties cannot give them for such a row yet: a 400 naming the field.
void check_logprobs_support(const RequestParams& params, const ExecutorCapabilities& caps) {
  if (params.logprobs < 0 || !params.sampling.adjusts_logits() ||
      caps.logprobs_with_logits_processing) {
    return;
  }
  throw_api_error(invalid_request_error(
      "'logprobs' together with 'logit_bias' or a penalty is not supported on this device yet "
      "(use --device cpu, or drop one of them)",
      "logprobs"));
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Bodies up to this size are prepared on the small-body lane (RequestWorkers): a chat turn of a
// few thousand tokens, not a 30 MB prompt.
constexpr size_t kSmallBodyBytes = 64 * 1024;
// NFC can shrink text to a third of its bytes (three Hangul jamo compose into one syllable), so
// a prompt of B bytes holds at least B / (3 * longest token) tokens.
constexpr size_t kNormalizationShrink = 3;

const std::map<std::string, std::string> kAuthenticateHeader = {{"WWW-Authenticate", "Bearer"}};
const std::map<std::string, std::string> kRetryAfterHeader = {{"Retry-After", "1"}};

uint64_t random_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

size_t longest_token_bytes(const Tokenizer& tokenizer) {
  size_t longest = 1;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    try {
      longest = std::max(longest, tokenizer.token_bytes(id).size());
    } catch (const Error&) {  // an id the vocabulary skips
    }
  }
  return longest;
}

// Every route but /health, /version and /metrics (which probes and scrapers call without a key).
bool needs_key(const std::string& path) {
  return path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/models" ||
         path.starts_with("/v1/models/") || path == "/tokenize" || path == "/detokenize" ||
         path == "/reset_prefix_cache";
}

bool generates(const HttpRequest& req) {
  return req.method == "POST" && (req.path == "/v1/chat/completions" || req.path == "/v1/completions");
}

HttpRejection header_rejection(const ApiError& err, std::map<std::string, std::string> headers) {
  return HttpRejection{err.status, "application/json", error_json(err), std::move(headers)};
}

}  // namespace

OpenAiService::OpenAiService(OpenAiServiceOptions options, const ModelConfig& config,
                             const Tokenizer& tokenizer, Engine& engine, MetricsRegistry& metrics)
    : options_(std::move(options)),
      config_(config),
      tokenizer_(tokenizer),
      engine_(engine),
      metrics_(metrics),
      created_(unix_seconds()),
      next_seed_(random_seed()),
      max_token_bytes_(longest_token_bytes(tokenizer)),
      workers_(std::make_unique<RequestWorkers>(options_.request_threads, kSmallBodyBytes)) {}

OpenAiService::~OpenAiService() { stop_workers(); }

void OpenAiService::stop_workers() { workers_->stop(); }

bool OpenAiService::key_ok(const HttpRequest& req) const {
  return options_.api_key.empty() || req.header("authorization") == "Bearer " + options_.api_key;
}

// Requests the engine holds plus those being prepared; `preparing_self` is 1 on a worker, whose
// own job is among the prepared ones.
bool OpenAiService::queue_full(int64_t preparing_self) const {
  int64_t queued = engine_.num_unfinished() + static_cast<int64_t>(workers_->pending()) -
                   preparing_self;
  return queued >= options_.max_num_seqs + options_.max_waiting;
}

std::optional<HttpRejection> OpenAiService::check_header(const HttpRequest& head) const {
  if (needs_key(head.path) && !key_ok(head)) {
    return header_rejection(authentication_error(), kAuthenticateHeader);
  }
  if (generates(head) && queue_full(0)) {
    return header_rejection(overloaded_error("the waiting queue is full; retry later"),
                     kRetryAfterHeader);
  }
  return std::nullopt;
}

bool OpenAiService::authorized(const HttpRequest& req, ResponseWriter& w) const {
  if (key_ok(req)) return true;
  send_api_error(w, authentication_error(), kAuthenticateHeader);
  return false;
}

bool OpenAiService::admit(ResponseWriter& w) {
  if (!queue_full(1)) return true;
  send_api_error(w, overloaded_error("the waiting queue is full; retry later"), kRetryAfterHeader);
  return false;
}

void OpenAiService::offload(const HttpRequest& req, std::shared_ptr<ResponseWriter> w,
                            Route route) {
  if (!authorized(req, *w)) return;
  auto request = std::make_shared<HttpRequest>(req);
  workers_->post(req.body.size(), [this, request, w = std::move(w), route](bool shutting_down) {
    if (shutting_down) {
      send_api_error(*w, overloaded_error("the server is shutting down"), kRetryAfterHeader);
      return;
    }
    if (w->closed()) return;  // the client left while the request waited
    (this->*route)(*request, w);
  });
}

void OpenAiService::check_prompt_bytes(size_t bytes, const char* input_name) const {
  const size_t divisor = kNormalizationShrink * max_token_bytes_;
  check_prompt_length_bound(static_cast<int64_t>(bytes / divisor), static_cast<int64_t>(bytes),
                            options_.max_model_len, input_name);
}

void OpenAiService::check_model(const std::string& requested) const {
  if (!requested.empty() && requested != options_.served_model_name) {
    throw_api_error(model_not_found_error(requested));
  }
}

void OpenAiService::install(HttpServer& server) {
  server.set_header_check([this](const HttpRequest& head) { return check_header(head); });
  server.route("POST", "/v1/chat/completions",
               [this](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
                 offload(req, std::move(w), &OpenAiService::chat_completions);
               });
  server.route("POST", "/v1/completions",
               [this](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
                 offload(req, std::move(w), &OpenAiService::completions);
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
    w->send(200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render_prometheus());
  });
  install_tokenize_routes(server);
  install_admin_routes(server);
}

void OpenAiService::models(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  if (!authorized(req, *w)) return;
  ModelCard card{options_.served_model_name, created_, options_.model_root, options_.max_model_len};
  w->send(200, "application/json", models_list_json(std::span<const ModelCard>(&card, 1)));
}

void OpenAiService::chat_completions(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  if (!authorized(req, *w)) return;
  guarded(req, *w, [&] {
    ChatCompletionRequest r = parse_chat_completion_request(req.body, req.header("content-type"));
    check_model(r.model);
    check_logit_bias(r.options.sampling, config_.vocab_size);
    std::string rendered = render_chat(r);
    check_prompt_bytes(rendered.size(), "messages");
    std::vector<int32_t> prompt = tokenizer_.encode(rendered);
    const int64_t max_tokens = resolve_max_tokens(r.options, static_cast<int64_t>(prompt.size()),
                                                  options_.max_model_len, "messages");
    if (!admit(*w)) return;
    RequestParams params = to_request_params(r.options, max_tokens);
    check_logprobs_support(params, engine_.capabilities());
    for (int64_t id : config_.eos_token_ids) params.eos_token_ids.push_back(static_cast<int32_t>(id));

    const uint64_t seed = next_seed_.fetch_add(1);
    OpenAiStreamOptions so;
    so.chat = true;
    so.stream = r.options.stream;
    so.include_usage = r.options.include_usage;
    so.continuous_usage = r.options.include_usage && r.options.continuous_usage_stats;
    so.parse_tool_calls = r.parses_tool_calls();
    so.parallel_tool_calls = r.parallel_tool_calls;
    so.reasoning = reasoning_mode_for(r.enable_thinking, rendered);
    so.stop = r.options.stop;
    so.seed = seed;
    so.n = r.options.n;
    so.logprobs = r.options.logprobs >= 0;
    ResponseMeta meta{make_response_id("chatcmpl-", seed), options_.served_model_name, unix_seconds()};
    auto stream = std::make_shared<OpenAiStream>(std::move(so), std::move(meta), tokenizer_, w, engine_);
    stream->start(std::move(prompt), std::move(params));
  });
}

// The model's own chat template (or --chat-template's), as vLLM renders it.
std::string OpenAiService::render_chat(const ChatCompletionRequest& r,
                                       bool add_generation_prompt) const {
  if (!options_.chat_template) {
    throw_api_error(invalid_request_error(
        "this model has no chat template (its tokenizer_config.json has none); start the server "
        "with --chat-template FILE",
        "messages"));
  }
  ChatTemplateOptions chat;
  chat.add_generation_prompt = add_generation_prompt;
  chat.enable_thinking = r.enable_thinking;
  try {
    return options_.chat_template->render(r.messages, r.tools, chat);
  } catch (const Error& e) {
    throw_api_error(invalid_request_error(e.what(), "messages"));
  }
}

void OpenAiService::completions(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  if (!authorized(req, *w)) return;
  guarded(req, *w, [&] {
    CompletionRequest r = parse_completion_request(req.body, req.header("content-type"));
    check_model(r.model);
    check_logit_bias(r.options.sampling, config_.vocab_size);
    std::vector<int32_t> prompt;
    if (r.has_token_prompt()) {
      check_prompt_token_ids(r.prompt_token_ids, config_.vocab_size);
      prompt = std::move(r.prompt_token_ids);
    } else {
      check_prompt_bytes(r.prompt_text->size(), "prompt");
      prompt = tokenizer_.encode(*r.prompt_text);
    }
    if (prompt.empty()) throw_api_error(invalid_request_error("prompt is empty", "prompt"));
    const int64_t max_tokens = resolve_max_tokens(r.options, static_cast<int64_t>(prompt.size()),
                                                  options_.max_model_len, "prompt");
    if (!admit(*w)) return;
    RequestParams params = to_request_params(r.options, max_tokens);
    check_logprobs_support(params, engine_.capabilities());
    for (int64_t id : config_.eos_token_ids) params.eos_token_ids.push_back(static_cast<int32_t>(id));
    params.prompt_logprobs = r.echo && r.options.logprobs >= 0;
    if (params.prompt_logprobs && !engine_.capabilities().prompt_logprobs) {
      throw_api_error(invalid_request_error(
          "'echo' with 'logprobs' needs the prompt's logprobs, which this executor does not "
          "compute (use --device cpu or null)",
          "echo"));
    }

    const uint64_t seed = next_seed_.fetch_add(1);
    OpenAiStreamOptions so;
    so.chat = false;
    so.stream = r.options.stream;
    so.include_usage = r.options.include_usage;
    so.continuous_usage = r.options.include_usage && r.options.continuous_usage_stats;
    so.stop = r.options.stop;
    so.seed = seed;
    so.n = r.options.n;
    so.logprobs = r.options.logprobs >= 0;
    if (r.echo) so.echo_text = r.prompt_text ? *r.prompt_text : tokenizer_.decode(prompt);
    if (params.prompt_logprobs) so.echo_tokens = prompt;
    ResponseMeta meta{make_response_id("cmpl-", seed), options_.served_model_name, unix_seconds()};
    auto stream = std::make_shared<OpenAiStream>(std::move(so), std::move(meta), tokenizer_, w, engine_);
    stream->start(std::move(prompt), std::move(params));
  });
}

}  // namespace paceline
