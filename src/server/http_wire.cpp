#include "server/http_wire.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/beast/http/status.hpp>

namespace paceline {

namespace {

bool has_line_break(std::string_view text) {
  return text.find_first_of("\r\n") != std::string_view::npos;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string http_response_head(int status, const HttpHeaderList& headers) {
  namespace http = boost::beast::http;
  auto reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", status,
                                reason.empty() ? std::string_view("Unknown")
                                               : std::string_view(reason.data(), reason.size()));
  for (const auto& [name, value] : headers) {
    if (name.empty() || has_line_break(name) || has_line_break(value)) {
      spdlog::warn("http: dropped response header '{}' with a line break", name);
      continue;
    }
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

void http_add_headers(HttpHeaderList& headers, const HttpHeaderList& extra) {
  size_t own = headers.size();
  for (const auto& header : extra) {
    bool taken = std::any_of(headers.begin(), headers.begin() + static_cast<std::ptrdiff_t>(own),
                             [&](const auto& h) { return iequals(h.first, header.first); });
    if (!taken) headers.push_back(header);
  }
}

std::string http_chunk(std::string_view data) {
  std::string out = fmt::format("{:x}\r\n", data.size());
  out.reserve(out.size() + data.size() + 2);
  out += data;
  out += "\r\n";
  return out;
}

std::string sse_data(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  size_t start = 0;
  while (true) {
    size_t end = payload.find('\n', start);
    std::string_view line =
        payload.substr(start, end == std::string_view::npos ? end : end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out += "data: ";
    out += line;
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  out += '\n';
  return out;
}

}  // namespace paceline
