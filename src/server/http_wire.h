#pragma once
// HTTP/1.1 response bytes as they go on the wire: status line and headers, chunked transfer
// coding, and Server-Sent Events framing. Plain strings; the session only queues them.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace paceline {

using HttpHeaderList = std::vector<std::pair<std::string, std::string>>;

// "HTTP/1.1 <status> <reason>\r\n", each "Name: value\r\n", then "\r\n". A header whose name or
// value holds CR or LF is dropped (no response splitting through handler-supplied values).
std::string http_response_head(int status, const HttpHeaderList& headers);

// Appends `extra` to `headers`, skipping names that `headers` already has (case-insensitive): the
// transport owns framing headers such as Content-Length and Connection.
void http_add_headers(HttpHeaderList& headers, const HttpHeaderList& extra);

// One chunk: "<hex size>\r\n<data>\r\n". Empty data would end the body, so callers skip it.
std::string http_chunk(std::string_view data);
inline constexpr std::string_view kHttpLastChunk = "0\r\n\r\n";

// "data: <payload>\n\n"; a payload with line breaks becomes one "data:" line per line, which SSE
// clients join back with "\n".
std::string sse_data(std::string_view payload);

}  // namespace paceline
