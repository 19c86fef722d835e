// GET /v1/models/{id} (OpenAI's retrieve-model route) and POST /reset_prefix_cache (vLLM's).
// The reset goes through the engine's inbox and is done on the engine thread between two steps;
// the I/O thread only queues it, and the engine thread answers.
#include <fmt/format.h>

#include "server/api_guard.h"
#include "server/openai_response.h"
#include "server/openai_service.h"

namespace paceline {

namespace {

constexpr std::string_view kModelsPrefix = "/v1/models/";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%2F" → "/": a model id with a slash ("meta-llama/Llama-3.1-8B") may come either way.
std::string percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
        hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
      continue;
    }
    out += text[i];
  }
  return out;
}

}  // namespace

void OpenAiService::install_admin_routes(HttpServer& server) {
  server.route_prefix("GET", std::string(kModelsPrefix),
                      [this](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
                        model_by_id(req, std::move(w));
                      });
  server.route("POST", "/reset_prefix_cache",
               [this](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
                 reset_prefix_cache(req, std::move(w));
               });
}

void OpenAiService::model_by_id(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  if (!authorized(req, *w)) return;
  const std::string id = percent_decoded(std::string_view(req.path).substr(kModelsPrefix.size()));
  if (id != options_.served_model_name) {
    send_api_error(*w, model_not_found_error(id));
    return;
  }
  ModelCard card{options_.served_model_name, created_, options_.model_root, options_.max_model_len};
  w->send(200, "application/json", model_card_json(card));
}

void OpenAiService::reset_prefix_cache(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  if (!authorized(req, *w)) return;
  // vLLM's option to preempt running requests first: their blocks are always kept here.
  const std::string_view query = std::string_view(req.target).substr(req.path.size());
  if (query.find("reset_running_requests=true") != std::string_view::npos ||
      query.find("reset_running_requests=1") != std::string_view::npos) {
    send_api_error(*w,
                   invalid_request_error("'reset_running_requests' is not supported: the blocks "
                                         "of running requests are always kept",
                                         "reset_running_requests"));
    return;
  }
  const std::string request_id = req.request_id;
  engine_.reset_prefix_cache([w, request_id](int64_t dropped) {
    spdlog::info("request {}: reset the prefix cache ({} blocks dropped)", request_id, dropped);
    w->send(200, "application/json", fmt::format("{{\"dropped_blocks\":{}}}", dropped));
  });
}

}  // namespace paceline
