#include "server/http_error.h"

#include <nlohmann/json.hpp>

namespace paceline {

namespace {

const char* error_type(int status) {
  if (status == 404) return "not_found_error";
  if (status >= 500) return "internal_server_error";
  return "invalid_request_error";
}

}  // namespace

std::string http_error_body(int status, const std::string& message, const std::string& code) {
  nlohmann::json error = {{"message", message},
                          {"type", error_type(status)},
                          {"param", nullptr},
                          {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}};
  return nlohmann::json{{"error", std::move(error)}}.dump();
}

}  // namespace paceline
