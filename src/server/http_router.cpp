#include "server/http_router.h"

#include <utility>

#include <fmt/format.h>

#include "base/error.h"
#include "server/http_error.h"

namespace paceline {

HttpRouter::HttpRouter() {
  not_found_ = [](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
    writer->send(
        404, "application/json",
        http_error_body(404, fmt::format("No route for {} {}.", request.method, request.path)));
  };
  method_not_allowed_ = [this](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
    writer->send(405, "application/json",
                 http_error_body(405, fmt::format("Method {} is not allowed for {}.",
                                                  request.method, request.path)),
                 {{"Allow", allowed_methods(request.path)}});
  };
}

void HttpRouter::add(std::string method, std::string path, HttpHandler handler) {
  if (!handler) fail("route {} {}: empty handler", method, path);
  routes_[std::move(path)][std::move(method)] = std::move(handler);
}

void HttpRouter::set_not_found(HttpHandler handler) {
  if (handler) not_found_ = std::move(handler);
}

void HttpRouter::set_method_not_allowed(HttpHandler handler) {
  if (handler) method_not_allowed_ = std::move(handler);
}

void HttpRouter::dispatch(const HttpRequest& request,
                          std::shared_ptr<ResponseWriter> writer) const {
  auto path = routes_.find(request.path);
  if (path == routes_.end()) return not_found_(request, std::move(writer));
  auto method = path->second.find(request.method);
  if (method == path->second.end()) return method_not_allowed_(request, std::move(writer));
  method->second(request, std::move(writer));
}

std::string HttpRouter::allowed_methods(const std::string& path) const {
  std::string out;
  auto it = routes_.find(path);
  if (it == routes_.end()) return out;
  for (const auto& [method, handler] : it->second) {
    if (!out.empty()) out += ", ";
    out += method;
  }
  return out;
}

}  // namespace paceline
