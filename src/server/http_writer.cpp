#include "server/http_writer.h"

#include <shared_mutex>
#include <utility>

#include <spdlog/spdlog.h>

#include "server/http_context.h"
#include "server/http_error.h"
#include "server/http_session.h"
#include "server/http_wire.h"

namespace paceline {

namespace {

HttpHeaderList header_list(const std::map<std::string, std::string>& headers) {
  return HttpHeaderList(headers.begin(), headers.end());
}

}  // namespace

HttpSessionWriter::HttpSessionWriter(HttpExchange exchange) : exchange_(std::move(exchange)) {}

HttpSessionWriter::~HttpSessionWriter() {
  std::lock_guard lock(mutex_);
  if (closed()) return;
  if (state_ == State::kFresh) {
    spdlog::warn("http: handler dropped its response writer without answering; sending 500");
    send_locked(500, "application/json",
                http_error_body(500, "The server produced no response for this request."), {});
  } else if (state_ == State::kStreaming) {
    end_locked();
  }
}

void HttpSessionWriter::send(int status, const std::string& content_type, std::string body,
                             const std::map<std::string, std::string>& extra_headers) {
  std::function<void()> released;
  std::lock_guard lock(mutex_);
  if (state_ != State::kFresh) {
    if (!closed()) spdlog::warn("http: send() after the response was started; ignored");
    return;
  }
  released = std::move(on_disconnect_);
  send_locked(status, content_type, std::move(body), extra_headers);
}

void HttpSessionWriter::send_locked(int status, const std::string& content_type, std::string body,
                                    const std::map<std::string, std::string>& extra_headers) {
  state_ = State::kDone;
  if (closed()) return;
  bool close = close_after();
  HttpHeaderList headers = {{"Content-Type", content_type},
                            {"Content-Length", std::to_string(body.size())},
                            {"Connection", close ? "close" : "keep-alive"}};
  http_add_headers(headers, header_list(extra_headers));
  add_request_id(headers);
  std::string bytes = http_response_head(status, headers);
  bytes += body;
  deliver(std::move(bytes), true, close);
}

void HttpSessionWriter::start_sse(const std::map<std::string, std::string>& extra_headers) {
  std::lock_guard lock(mutex_);
  if (state_ != State::kFresh) {
    if (!closed()) spdlog::warn("http: start_sse() after the response was started; ignored");
    return;
  }
  state_ = State::kStreaming;
  if (closed()) return;
  bool keep = exchange_.chunked && !close_after();
  HttpHeaderList headers = {{"Content-Type", "text/event-stream"},
                            {"Cache-Control", "no-cache"},
                            {"Connection", keep ? "keep-alive" : "close"},
                            {"X-Accel-Buffering", "no"}};
  if (exchange_.chunked) headers.emplace_back("Transfer-Encoding", "chunked");
  http_add_headers(headers, header_list(extra_headers));
  add_request_id(headers);
  deliver(http_response_head(200, headers), false, false);
}

void HttpSessionWriter::sse_event(const std::string& payload) {
  std::lock_guard lock(mutex_);
  if (state_ != State::kStreaming) {
    if (state_ == State::kFresh && !closed())
      spdlog::warn("http: sse_event() before start_sse(); ignored");
    return;
  }
  if (closed()) return;
  std::string event = sse_data(payload);
  deliver(exchange_.chunked ? http_chunk(event) : std::move(event), false, false);
}

void HttpSessionWriter::end() {
  std::function<void()> released;
  std::lock_guard lock(mutex_);
  if (state_ != State::kStreaming) {
    if (state_ == State::kFresh && !closed())
      spdlog::warn("http: end() before start_sse(); ignored");
    return;
  }
  released = std::move(on_disconnect_);
  end_locked();
}

void HttpSessionWriter::end_locked() {
  state_ = State::kDone;
  if (closed()) return;
  if (exchange_.chunked) {
    deliver(std::string(kHttpLastChunk), true, close_after());
  } else {
    deliver(std::string(), true, true);
  }
}

void HttpSessionWriter::on_disconnect(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::kDone) return;
    if (!disconnected_) {
      on_disconnect_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

void HttpSessionWriter::notify_disconnect() {
  std::function<void()> callback;
  {
    std::lock_guard lock(mutex_);
    if (disconnected_) return;
    disconnected_ = true;
    closed_.store(true, std::memory_order_release);
    if (state_ == State::kDone) return;
    callback = std::move(on_disconnect_);
  }
  if (!callback) return;
  try {
    callback();
  } catch (const std::exception& e) {
    spdlog::error("http: on_disconnect callback threw: {}", e.what());
  }
}

void HttpSessionWriter::deliver(std::string bytes, bool last, bool close_after) {
  std::shared_lock life(exchange_.context->life_mutex);
  std::shared_ptr<HttpSession> session =
      exchange_.context->loop_alive ? exchange_.session.lock() : nullptr;
  if (!session) {
    closed_.store(true, std::memory_order_release);
    return;
  }
  session->post_deliver(exchange_.id, std::move(bytes), last, close_after);
}

// After the handler's own headers: one that set X-Request-Id itself keeps its value.
void HttpSessionWriter::add_request_id(HttpHeaderList& headers) const {
  http_add_headers(headers, {{"X-Request-Id", exchange_.request_id}});
}

bool HttpSessionWriter::close_after() const {
  return !exchange_.keep_alive || exchange_.context->draining.load(std::memory_order_acquire);
}

}  // namespace paceline
