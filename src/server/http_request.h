#pragma once
// A request as Beast parsed it → the plain HttpRequest that handlers see.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/http_types.h"

namespace paceline {

// Header names are lower-cased; repeated headers are joined with ", ". The path is the target
// up to '?', not percent-decoded.
HttpRequest http_request_from(
    boost::beast::http::request<boost::beast::http::string_body>&& message);
// The same without the body: what a header check sees before the body is read.
HttpRequest http_request_head(
    const boost::beast::http::request<boost::beast::http::string_body>& message);

// Why a request's framing cannot be trusted (RFC 9112 §6.1, §6.3), or empty when it can: any
// Transfer-Encoding other than exactly `chunked` (this server decodes no other coding, and one
// it skipped would leave the body to be read as the next request), Transfer-Encoding together
// with Content-Length, or Transfer-Encoding in HTTP/1.0. Such a request is answered 400 and the
// connection closed: behind a proxy that reads the framing differently it is request smuggling.
std::string http_framing_problem(
    const boost::beast::http::request<boost::beast::http::string_body>& message);

}  // namespace paceline
