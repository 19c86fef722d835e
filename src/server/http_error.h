#pragma once
// The transport's own error answers (unknown route, wrong method, oversized or malformed request,
// a handler that never answered) in OpenAI's shape:
//   {"error": {"message": ..., "type": ..., "param": null, "code": ...|null}}
#include <string>

namespace paceline {

// type: "invalid_request_error" for 4xx except 404 ("not_found_error"), "internal_server_error"
// for 5xx. code: null unless given.
std::string http_error_body(int status, const std::string& message, const std::string& code = "");

}  // namespace paceline
