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

void HttpRouter::add_prefix(std::string method, std::string prefix, HttpHandler handler) {
  if (!handler) fail("route {} {}*: empty handler", method, prefix);
  if (prefix.empty()) fail("route {}: empty prefix", method);
  prefixes_[std::move(prefix)][std::move(method)] = std::move(handler);
}

const HttpRouter::Methods* HttpRouter::find(const std::string& path) const {
  if (auto it = routes_.find(path); it != routes_.end()) return &it->second;
  const Methods* best = nullptr;
  size_t best_length = 0;
  for (const auto& [prefix, methods] : prefixes_) {
    if (path.size() > prefix.size() && path.starts_with(prefix) && prefix.size() > best_length) {
      best = &methods;
      best_length = prefix.size();
    }
  }
  return best;
}

void HttpRouter::set_not_found(HttpHandler handler) {
  if (handler) not_found_ = std::move(handler);
}

void HttpRouter::set_method_not_allowed(HttpHandler handler) {
  if (handler) method_not_allowed_ = std::move(handler);
}

void HttpRouter::dispatch(const HttpRequest& request,
                          std::shared_ptr<ResponseWriter> writer) const {
  const Methods* methods = find(request.path);
  if (methods == nullptr) return not_found_(request, std::move(writer));
  auto method = methods->find(request.method);
  if (method == methods->end()) return method_not_allowed_(request, std::move(writer));
  method->second(request, std::move(writer));
}

std::string HttpRouter::allowed_methods(const std::string& path) const {
  std::string out;
  const Methods* methods = find(path);
  if (methods == nullptr) return out;
  for (const auto& [method, handler] : *methods) {
    if (!out.empty()) out += ", ";
    out += method;
  }
  return out;
}

}  // namespace paceline
