#pragma once
// The boundary between the HTTP transport (http_server) and the handlers (OpenAI routes): plain
// structs, no Beast types. A handler may answer from any thread; the writer posts to the
// connection's own strand.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace paceline {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // path with query, e.g. "/v1/models"
  std::string path;                            // without the query
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  // The client's X-Request-Id, or a generated one (server/request_id.h); every response echoes it.
  std::string request_id;
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// One response: either send() once, or start_sse() then any number of sse_event() and one end().
// Every method is thread-safe and never blocks on the network. After the client has gone away the
// calls are no-ops and closed() is true.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  virtual void send(int status, const std::string& content_type, std::string body,
                    const std::map<std::string, std::string>& extra_headers = {}) = 0;
  virtual void start_sse(const std::map<std::string, std::string>& extra_headers = {}) = 0;
  // Writes "data: <payload>\n\n".
  virtual void sse_event(const std::string& payload) = 0;
  virtual void end() = 0;
  // Called once, from the server's thread, when the client disconnects before end()/send().
  virtual void on_disconnect(std::function<void()> callback) = 0;
  virtual bool closed() const = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, std::shared_ptr<ResponseWriter>)>;

// An answer given from the request's header alone, before its body is read (a missing API key,
// a full queue). The transport sends it with `Connection: close` and closes the connection, so
// the unread body can never be taken for the next request.
struct HttpRejection {
  int status = 400;
  std::string content_type = "application/json";
  std::string body;
  std::map<std::string, std::string> headers;
};

// Runs on the I/O thread for every request once its header is in (`body` is still empty), so it
// must be cheap. nullopt lets the request through.
using HttpHeaderCheck = std::function<std::optional<HttpRejection>(const HttpRequest& head)>;

}  // namespace paceline
