#include "server/http_request.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <utility>

namespace paceline {

namespace http = boost::beast::http;

namespace {

std::string to_string(boost::beast::string_view text) {
  return {text.data(), text.size()};
}

std::string lower(boost::beast::string_view text) {
  std::string out = to_string(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

HttpRequest http_request_head(const http::request<http::string_body>& message) {
  HttpRequest request;
  request.method = to_string(message.method_string());
  request.target = to_string(message.target());
  request.path = request.target.substr(0, request.target.find('?'));
  for (const auto& field : message) {
    auto [it, inserted] =
        request.headers.emplace(lower(field.name_string()), to_string(field.value()));
    if (!inserted) {
      it->second += ", ";
      it->second += to_string(field.value());
    }
  }
  return request;
}

HttpRequest http_request_from(http::request<http::string_body>&& message) {
  HttpRequest request = http_request_head(message);
  request.body = std::move(message.body());
  return request;
}

std::string http_framing_problem(const http::request<http::string_body>& message) {
  std::string codings;
  bool present = false;
  for (const auto& field : message) {
    if (field.name() != http::field::transfer_encoding) continue;
    if (present) codings += ", ";
    codings += to_string(field.value());
    present = true;
  }
  if (!present) return {};
  if (message.version() < 11) return "Transfer-Encoding is not allowed in an HTTP/1.0 request.";
  if (message.find(http::field::content_length) != message.end()) {
    return "A request may not carry both Transfer-Encoding and Content-Length.";
  }
  std::string_view coding = codings;
  while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t'))
    coding.remove_prefix(1);
  while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
    coding.remove_suffix(1);
  if (lower({coding.data(), coding.size()}) == "chunked") return {};
  return "Transfer-Encoding '" + codings + "' is not supported; only 'chunked' is.";
}

}  // namespace paceline
