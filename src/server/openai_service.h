#pragma once
// The OpenAI-compatible routes of `paceline serve`, wired to the engine: parse and validate,
// render the chat template, tokenize, submit, and stream the engine's tokens back as SSE chunks
// (or one JSON body). Runs on the HTTP threads; the engine's callbacks only format and post.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/metrics.h"
#include "model/chat_template.h"
#include "model/config.h"
#include "model/tokenizer.h"
#include "server/http_server.h"

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
  std::shared_ptr<const ChatTemplate> chat_template;  // none: chat completions answer 400
};

class OpenAiService {
 public:
  OpenAiService(OpenAiServiceOptions options, const ModelConfig& config, const Tokenizer& tokenizer,
                Engine& engine, MetricsRegistry& metrics);
  // Adds every route (and the 404/405 answers) to the server.
  void install(HttpServer& server);

 private:
  bool authorized(const HttpRequest& req, ResponseWriter& w) const;
  bool admit(ResponseWriter& w);
  void chat_completions(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);
  std::string render_chat(const ChatCompletionRequest& r) const;
  void completions(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);
  void models(const HttpRequest& req, std::shared_ptr<ResponseWriter> w);
  void check_model(const std::string& requested) const;

  OpenAiServiceOptions options_;
  const ModelConfig& config_;
  const Tokenizer& tokenizer_;
  Engine& engine_;
  MetricsRegistry& metrics_;
  int64_t created_;
  std::atomic<uint64_t> next_seed_{1};
};

}  // namespace paceline
