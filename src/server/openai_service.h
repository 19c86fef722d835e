#pragma once
// The OpenAI-compatible routes of `paceline serve`, wired to the engine: parse and validate,
// render the chat template, tokenize, submit, and stream the engine's tokens back as SSE chunks
// (or one JSON body). The I/O thread runs only the cheap checks (the API key and the queue, on
// the header, before the body is read); the generation routes run on RequestWorkers. The
// engine's callbacks only format and post.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "engine/metrics.h"
#include "model/chat_template.h"
#include "model/config.h"
#include "model/tokenizer.h"
#include "model/tokenizer_post_processor.h"
#include "server/http_server.h"
#include "server/request_workers.h"

namespace paceline {

struct ChatCompletionRequest;

struct OpenAiServiceOptions {
  std::string served_model_name;
  std::string model_root;  // what --model named, for /v1/models
  std::string api_key;     // empty: no authentication
  int64_t max_model_len = 0;
  int64_t max_waiting = 4096;  // requests beyond running + waiting get 503
  int64_t max_num_seqs = 256;
  std::string version;
  int request_threads = 2;  // bulk threads of RequestWorkers (the small-body lane has its own)
  std::shared_ptr<const ChatTemplate> chat_template;  // none: chat completions answer 400
};

class OpenAiService {
 public:
  OpenAiService(OpenAiServiceOptions options, const ModelConfig& config, const Tokenizer& tokenizer,
                Engine& engine, MetricsRegistry& metrics);
  ~OpenAiService();  // stop_workers()
  // Adds every route (and the 404/405 answers, and the header check) to the server.
  void install(HttpServer& server);
  // Requests not yet prepared get 503; those being prepared finish (and reach the engine).
  void stop_workers();

 private:
  using Route = void (OpenAiService::*)(const HttpRequest&, std::shared_ptr<ResponseWriter>);
  std::optional<HttpRejection> check_header(const HttpRequest& head) const;
  bool key_ok(const HttpRequest& req) const;
  bool queue_full(int64_t preparing_self) const;
  bool authorized(const HttpRequest& req, ResponseWriter& w) const;
  bool admit(ResponseWriter& w);
  // Runs `route` on a worker after the cheap checks.
  void offload(const HttpRequest& req, std::shared_ptr<ResponseWriter> w, Route route);
  // The prompt's tokens are at least bytes / max_token_bytes: too many bytes fail the context
  // check before the (much slower) tokenize.
  void check_prompt_bytes(size_t bytes, const char* input_name) const;
  void chat_completions(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);
  std::string render_chat(const ChatCompletionRequest& r, bool add_generation_prompt = true) const;
  void completions(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);
  void models(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);
  void check_model(const std::string& requested) const;
  // POST /tokenize, POST /detokenize (tokenize_routes.cpp).
  void install_tokenize_routes(HttpServer& server);
  void tokenize(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);
  void detokenize(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);
  // The tokenizer's special tokens for add_special_tokens; read from its file on first use.
  const SpecialTokensAround& special_tokens_around() const;
  // GET /v1/models/{id}, POST /reset_prefix_cache (admin_routes.cpp).
  void install_admin_routes(HttpServer& server);
  void model_by_id(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);
  void reset_prefix_cache(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);

  OpenAiServiceOptions options_;
  const ModelConfig& config_;
  const Tokenizer& tokenizer_;
  Engine& engine_;
  MetricsRegistry& metrics_;
  int64_t created_;
  // Seeds response and tool-call ids; random per process, so two servers never share ids.
  std::atomic<uint64_t> next_seed_;
  size_t max_token_bytes_ = 1;  // the longest token's bytes, special tokens included
  std::unique_ptr<RequestWorkers> workers_;
  mutable std::once_flag special_once_;
  mutable std::optional<SpecialTokensAround> special_;
  mutable std::string special_error_;  // why special_ could not be read
};

}  // namespace paceline
