#pragma once
// The route table: exact path, then method. A path no exact route has may still fall under a
// prefix route ("/v1/models/" serves /v1/models/{id}; the longest prefix wins). An unknown path
// goes to the not-found handler, a known path with another method to the method-not-allowed
// handler; both can be replaced.
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "server/http_types.h"

namespace paceline {

class HttpRouter {
 public:
  HttpRouter();
  HttpRouter(const HttpRouter&) = delete;  // the default 405 handler points back at its table
  HttpRouter& operator=(const HttpRouter&) = delete;

  void add(std::string method, std::string path, HttpHandler handler);
  // Serves every path that starts with `prefix` (and is longer than it) that no exact route has.
  void add_prefix(std::string method, std::string prefix, HttpHandler handler);
  void set_not_found(HttpHandler handler);
  void set_method_not_allowed(HttpHandler handler);

  // Calls the matching handler on the caller's thread; what it throws propagates.
  void dispatch(const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) const;

  // "GET, POST" for a known path, empty for an unknown one.
  std::string allowed_methods(const std::string& path) const;

 private:
  using Methods = std::map<std::string, HttpHandler>;
  // The methods for `path`: its exact route, else its longest prefix route; null when none.
  const Methods* find(const std::string& path) const;

  std::unordered_map<std::string, Methods> routes_;  // path → method
  std::map<std::string, Methods> prefixes_;          // prefix → method
  HttpHandler not_found_;
  HttpHandler method_not_allowed_;
};

}  // namespace paceline
