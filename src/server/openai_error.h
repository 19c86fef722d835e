#pragma once
// Errors of the OpenAI-compatible API: a status and OpenAI's error object
// {"error": {"message", "type", "param", "code"}}. Parsers throw ApiException; the HTTP layer
// catches any exception, turns it into an ApiError with api_error_from_exception, and sends
// error_json(error) with error.status.
#include <cstddef>
#include <exception>
#include <string>
#include <string_view>

#include "base/error.h"

namespace paceline {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending request field ("messages[0].role"); empty: null
  std::string code;   // OpenAI's machine-readable code ("context_length_exceeded"); empty: null
};

// What the parsers and validators throw. A paceline::Error, so a plain catch still works.
class ApiException : public Error {
 public:
  explicit ApiException(ApiError error);
  const ApiError& error() const { return error_; }

 private:
  ApiError error_;
};

[[noreturn]] void throw_api_error(ApiError error);

// 400 invalid_request_error.
ApiError invalid_request_error(std::string message, std::string param = {}, std::string code = {});
// 401 authentication_error, code "invalid_api_key".
ApiError authentication_error();
// 404 not_found_error, param "model", code "model_not_found".
ApiError model_not_found_error(std::string_view model);
// 404 not_found_error for a path the server does not serve.
ApiError route_not_found_error(std::string_view method, std::string_view path);
// 405 invalid_request_error: a known path with the wrong method.
ApiError method_not_allowed_error(std::string_view method, std::string_view path);
// 413 invalid_request_error, code "request_too_large".
ApiError payload_too_large_error(size_t limit_bytes);
// A Content-Type other than application/json. Status 400, as vLLM answers (its FastAPI
// validation error; older versions answered 415), message naming the type received.
ApiError unsupported_media_type_error(std::string_view content_type);
// 503 service_unavailable_error: the waiting queue is full (send Retry-After with it).
ApiError overloaded_error(std::string message);
// 500 internal_server_error.
ApiError internal_error(std::string message);

// ApiException → its error; any other paceline::Error (bad chat messages from the template,
// an out-of-vocabulary token) → 400 invalid_request_error with its message; anything else → 500.
ApiError api_error_from_exception(const std::exception& error);
// The same for the exception in flight: call only inside a catch block.
ApiError api_error_from_current_exception();

// {"error":{"message":...,"type":...,"param":...|null,"code":...|null}}
std::string error_json(const ApiError& error);

}  // namespace paceline
