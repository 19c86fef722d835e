#include "server/http_request.h"

#include <algorithm>
#include <cctype>
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

HttpRequest http_request_from(http::request<http::string_body>&& message) {
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
  request.body = std::move(message.body());
  return request;
}

}  // namespace paceline
