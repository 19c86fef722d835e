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

}  // namespace paceline
