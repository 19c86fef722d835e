#pragma once
// How every OpenAI-style handler answers a failure: the exception becomes OpenAI's error object
// with its status, and a server-side failure (5xx) is logged under the request's X-Request-Id.
#include <map>
#include <string>

#include "base/log.h"
#include "server/http_types.h"
#include "server/openai_error.h"

namespace paceline {

inline void send_api_error(ResponseWriter& w, const ApiError& err,
                           const std::map<std::string, std::string>& headers = {}) {
  w.send(err.status, "application/json", error_json(err), headers);
}

// Runs a handler body; any exception becomes OpenAI's error object with its status.
template <typename F>
void guarded(const HttpRequest& req, ResponseWriter& w, F&& body) {
  try {
    body();
  } catch (...) {
    ApiError err = api_error_from_current_exception();
    if (err.status >= 500) spdlog::error("request {}: failed: {}", req.request_id, err.message);
    send_api_error(w, err);
  }
}

}  // namespace paceline
