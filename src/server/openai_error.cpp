#include "server/openai_error.h"

#include <utility>

#include <fmt/format.h>

#include "server/openai_response.h"

namespace paceline {

ApiException::ApiException(ApiError error) : Error(error.message), error_(std::move(error)) {}

void throw_api_error(ApiError error) {
  throw ApiException(std::move(error));
}

ApiError invalid_request_error(std::string message, std::string param, std::string code) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param),
                  std::move(code)};
}

ApiError authentication_error() {
  return ApiError{401, "Incorrect API key provided.", "authentication_error", "",
                  "invalid_api_key"};
}

ApiError model_not_found_error(std::string_view model) {
  return ApiError{404, fmt::format("The model `{}` does not exist.", model), "not_found_error",
                  "model", "model_not_found"};
}

ApiError route_not_found_error(std::string_view method, std::string_view path) {
  return ApiError{404, fmt::format("No route for {} {}.", method, path), "not_found_error", "", ""};
}

ApiError method_not_allowed_error(std::string_view method, std::string_view path) {
  return ApiError{405, fmt::format("Method {} is not allowed for {}.", method, path),
                  "invalid_request_error", "", ""};
}

ApiError payload_too_large_error(size_t limit_bytes) {
  return ApiError{413, fmt::format("Request body is larger than {} bytes.", limit_bytes),
                  "invalid_request_error", "", "request_too_large"};
}

ApiError unsupported_media_type_error(std::string_view content_type) {
  std::string got = content_type.empty() ? "no Content-Type" : fmt::format("'{}'", content_type);
  return invalid_request_error(
      fmt::format("Unsupported Media Type: only 'application/json' is allowed, got {}.", got));
}

ApiError overloaded_error(std::string message) {
  return ApiError{503, std::move(message), "service_unavailable_error", "", ""};
}

ApiError internal_error(std::string message) {
  return ApiError{500, std::move(message), "internal_server_error", "", ""};
}

ApiError api_error_from_exception(const std::exception& error) {
  if (const auto* api = dynamic_cast<const ApiException*>(&error)) return api->error();
  if (dynamic_cast<const Error*>(&error) != nullptr) return invalid_request_error(error.what());
  return internal_error(fmt::format("Internal error: {}", error.what()));
}

ApiError api_error_from_current_exception() {
  try {
    throw;
  } catch (const std::exception& error) {
    return api_error_from_exception(error);
  } catch (...) {
    return internal_error("Internal error.");
  }
}

std::string error_json(const ApiError& error) {
  std::string out = R"({"error":{"message":)";
  append_json_string(out, error.message);
  out += R"(,"type":)";
  append_json_string(out, error.type);
  out += R"(,"param":)";
  if (error.param.empty()) {
    out += "null";
  } else {
    append_json_string(out, error.param);
  }
  out += R"(,"code":)";
  if (error.code.empty()) {
    out += "null";
  } else {
    append_json_string(out, error.code);
  }
  out += "}}";
  return out;
}

}  // namespace paceline
