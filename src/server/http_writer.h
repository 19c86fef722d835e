#pragma once
// The ResponseWriter a handler receives. It formats the bytes on the caller's thread and posts
// them to its session's strand; it never touches the socket. It holds the session weakly: a
// handler that keeps its writer does not keep the connection, and a writer whose connection or
// server is gone turns every call into a no-op.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "server/http_types.h"
#include "server/http_wire.h"

namespace paceline {

struct HttpContext;
class HttpSession;

struct HttpExchange {
  std::shared_ptr<HttpContext> context;
  std::weak_ptr<HttpSession> session;
  uint64_t id = 0;         // the session's request number; stale deliveries are dropped
  bool keep_alive = true;  // the request allows another one on this connection
  bool chunked = true;     // HTTP/1.1; an HTTP/1.0 stream is framed by closing the connection
  std::string request_id;  // sent back as X-Request-Id
};

class HttpSessionWriter final : public ResponseWriter {
 public:
  explicit HttpSessionWriter(HttpExchange exchange);
  // Without a response: sends 500. With an open stream: ends it.
  ~HttpSessionWriter() override;

  void send(int status, const std::string& content_type, std::string body,
            const std::map<std::string, std::string>& extra_headers = {}) override;
  void start_sse(const std::map<std::string, std::string>& extra_headers = {}) override;
  void sse_event(const std::string& payload) override;
  void end() override;
  // If the client is already gone, the callback runs at once on the calling thread.
  void on_disconnect(std::function<void()> callback) override;
  bool closed() const override { return closed_.load(std::memory_order_acquire); }

  // The session's strand, once, when the connection closes before the response was written.
  void notify_disconnect();

 private:
  enum class State { kFresh, kStreaming, kDone };

  // The caller holds mutex_.
  void send_locked(int status, const std::string& content_type, std::string body,
                   const std::map<std::string, std::string>& extra_headers);
  void end_locked();
  void deliver(std::string bytes, bool last, bool close_after);
  bool close_after() const;
  void add_request_id(HttpHeaderList& headers) const;

  HttpExchange exchange_;
  std::mutex mutex_;
  State state_ = State::kFresh;
  bool disconnected_ = false;
  std::function<void()> on_disconnect_;
  std::atomic<bool> closed_{false};
};

}  // namespace paceline
