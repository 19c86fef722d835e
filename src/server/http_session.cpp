#include "server/http_session.h"

#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "server/http_context.h"
#include "server/http_error.h"
#include "server/http_request.h"
#include "server/http_wire.h"
#include "server/http_writer.h"
#include "server/request_id.h"

namespace paceline {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
// While a response is produced, what a pipelining client sends ahead is buffered up to this;
// beyond it the session stops reading (and so stops noticing a disconnect before a write fails).
constexpr size_t kMaxReadAheadBytes = 64 * 1024;
constexpr size_t kWatchReadBytes = 4096;
constexpr auto kLingerTime = std::chrono::milliseconds(500);
constexpr size_t kMaxLingerBytes = 1 << 20;
// The read buffer's bound: a header (64 KiB) or the read-ahead (64 KiB plus one watch read) fits
// with room to spare; a body goes on into the request's string, bounded by max_body_bytes.
constexpr size_t kMaxReadBufferBytes = 256 * 1024;

}  // namespace

std::shared_ptr<HttpSession> HttpSession::create(asio::ip::tcp::socket socket,
                                                 std::shared_ptr<HttpContext> context) {
  auto session = std::make_shared<HttpSession>(std::move(socket), context);
  std::lock_guard lock(context->sessions_mutex);
  context->sessions.emplace(session.get(), session);
  return session;
}

HttpSession::HttpSession(asio::ip::tcp::socket socket, std::shared_ptr<HttpContext> context)
    : context_(std::move(context)),
      socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      buffer_(kMaxReadBufferBytes) {
  context_->open_connections.fetch_add(1, std::memory_order_relaxed);
}

HttpSession::~HttpSession() {
  if (request_active_) context_->active_requests.fetch_sub(1, std::memory_order_relaxed);
  context_->open_connections.fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard lock(context_->sessions_mutex);
  context_->sessions.erase(this);
}

void HttpSession::start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->read_request(); });
}

void HttpSession::start_over_capacity() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == Phase::kClosed) return;
    spdlog::warn("http: {} connections open (--max-connections); answering 503",
                 self->context_->options.max_connections);
    self->send_and_close(
        503, "application/json",
        http_error_body(503, fmt::format("The server has {} connections open, its limit; retry "
                                         "later.",
                                         self->context_->options.max_connections)),
        {{"Retry-After", "1"}});
  });
}

void HttpSession::shutdown() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
}

void HttpSession::post_deliver(uint64_t exchange, std::string bytes, bool last, bool close_after) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), exchange, bytes = std::move(bytes),
                                      last, close_after]() mutable {
    self->deliver(exchange, std::move(bytes), last, close_after);
  });
}

// ---- reading a request ----

void HttpSession::read_request() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kReading;
  request_id_.clear();
  parser_.emplace();
  parser_->header_limit(kMaxHeaderBytes);
  parser_->body_limit(context_->options.max_body_bytes);
  arm_timer(context_->options.header_timeout);
  http::async_read_header(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void HttpSession::on_header(error_code ec) {
  if (phase_ == Phase::kClosed) return;
  if (ec) return on_read_error(ec);
  const auto sent = parser_->get()["X-Request-Id"];
  request_id_ = request_id_for(std::string_view(sent.data(), sent.size()));
  if (!check_header()) return;
  if (parser_->is_done()) return dispatch();
  auto expect = parser_->get()[http::field::expect];
  if (boost::beast::iequals(expect, "100-continue")) enqueue("HTTP/1.1 100 Continue\r\n\r\n");
  arm_timer(context_->options.body_timeout);
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, size_t) { self->on_body(ec); });
}

bool HttpSession::check_header() {
  std::string problem = http_framing_problem(parser_->get());
  if (!problem.empty()) {
    reply_and_close(400, problem);
    return false;
  }
  if (!context_->header_check) return true;
  std::optional<HttpRejection> rejection;
  try {
    HttpRequest head = http_request_head(parser_->get());
    head.request_id = request_id_;
    rejection = context_->header_check(head);
  } catch (const std::exception& e) {
    spdlog::error("http: request {}: header check threw: {}", request_id_, e.what());
    rejection =
        HttpRejection{500, "application/json", http_error_body(500, "Internal server error."), {}};
  }
  if (!rejection) return true;
  send_and_close(rejection->status, rejection->content_type, rejection->body, rejection->headers);
  return false;
}

void HttpSession::on_body(error_code ec) {
  if (phase_ == Phase::kClosed) return;
  if (ec) return on_read_error(ec);
  dispatch();
}

void HttpSession::on_read_error(error_code ec) {
  disarm_timer();
  if (ec == http::error::body_limit) {
    return reply_and_close(
        413, fmt::format("Request body is larger than {} bytes.", context_->options.max_body_bytes),
        "request_too_large");
  }
  if (ec == http::error::header_limit) {
    return reply_and_close(431,
                           fmt::format("Request header is larger than {} bytes.", kMaxHeaderBytes));
  }
  bool client_left = ec == http::error::end_of_stream || ec == http::error::partial_message;
  if (!client_left && ec.category() == http::make_error_code(http::error::bad_method).category()) {
    return reply_and_close(400, fmt::format("Malformed HTTP request: {}.", ec.message()));
  }
  spdlog::debug("http: read ended: {}", ec.message());
  close();
}

void HttpSession::dispatch() {
  disarm_timer();
  http::request<http::string_body> message = parser_->release();
  parser_.reset();
  phase_ = Phase::kResponding;
  response_done_ = false;
  close_after_ = false;
  request_active_ = true;
  context_->active_requests.fetch_add(1, std::memory_order_relaxed);

  HttpExchange exchange;
  exchange.context = context_;
  exchange.session = weak_from_this();
  exchange.id = ++exchange_;
  exchange.keep_alive = message.keep_alive() && context_->options.keep_alive;
  exchange.chunked = message.version() >= 11;
  exchange.request_id = request_id_;
  auto writer = std::make_shared<HttpSessionWriter>(std::move(exchange));
  writer_ = writer;
  watch();

  HttpRequest request = http_request_from(std::move(message));
  request.request_id = request_id_;
  spdlog::debug("http: request {}: {} {}", request.request_id, request.method, request.path);
  try {
    context_->router.dispatch(request, writer);
  } catch (const std::exception& e) {
    spdlog::error("http: request {}: handler for {} {} threw: {}", request.request_id,
                  request.method, request.path, e.what());
    writer->send(500, "application/json", http_error_body(500, "Internal server error."));
  }
  // A handler that kept no copy has answered or will never answer: the writer's destructor
  // sends a 500 then.
}

void HttpSession::reply_and_close(int status, const std::string& message, const std::string& code) {
  send_and_close(status, "application/json", http_error_body(status, message, code), {});
}

void HttpSession::send_and_close(int status, const std::string& content_type,
                                 const std::string& body,
                                 const std::map<std::string, std::string>& extra_headers) {
  disarm_timer();
  HttpHeaderList headers = {{"Content-Type", content_type},
                            {"Content-Length", std::to_string(body.size())},
                            {"Connection", "close"}};
  http_add_headers(headers, HttpHeaderList(extra_headers.begin(), extra_headers.end()));
  http_add_headers(headers,
                   {{"X-Request-Id", request_id_.empty() ? generate_request_id() : request_id_}});
  phase_ = Phase::kResponding;
  parser_.reset();
  ++exchange_;  // no writer may deliver into this answer
  enqueue(http_response_head(status, headers) + body);
  response_done_ = true;
  close_after_ = true;
  write_next();
}

// ---- watching the read side while a response is produced ----

void HttpSession::watch() {
  if (watching_ || phase_ == Phase::kClosed || phase_ == Phase::kReading) return;
  if (phase_ == Phase::kResponding && buffer_.size() >= kMaxReadAheadBytes) return;
  watching_ = true;
  socket_.async_read_some(
      buffer_.prepare(kWatchReadBytes),
      [self = shared_from_this()](error_code ec, size_t bytes) { self->on_watch(ec, bytes); });
}

void HttpSession::on_watch(error_code ec, size_t bytes) {
  watching_ = false;
  if (!ec) buffer_.commit(bytes);
  switch (phase_) {
    case Phase::kClosed:
      return;
    case Phase::kResponding:  // EOF or an error: the client is gone
      if (ec) return close();
      return watch();
    case Phase::kLingering:
      lingered_bytes_ += bytes;
      buffer_.consume(buffer_.size());
      if (ec || lingered_bytes_ > kMaxLingerBytes) return close();
      return watch();
    case Phase::kReading:  // the response ended while this read was out (and maybe cancelled it)
      if (ec && ec != asio::error::operation_aborted) return close();
      return read_request();
  }
}

// ---- writing ----

void HttpSession::deliver(uint64_t exchange, std::string bytes, bool last, bool close_after) {
  if (phase_ != Phase::kResponding || exchange != exchange_ || response_done_) return;
  size_t limit = context_->options.max_write_queue_bytes;
  if (queued_bytes_ > 0 && queued_bytes_ + bytes.size() > limit) {
    spdlog::warn("http: client is not reading ({} bytes unsent); closing", queued_bytes_);
    return close();
  }
  if (!bytes.empty()) enqueue(std::move(bytes));
  if (last) {
    response_done_ = true;
    close_after_ = close_after;
  }
  write_next();
}

void HttpSession::enqueue(std::string bytes) {
  queued_bytes_ += bytes.size();
  queue_.push_back(std::move(bytes));
  write_next();
}

void HttpSession::write_next() {
  if (writing_ || phase_ == Phase::kClosed) return;
  if (queue_.empty()) {
    if (response_done_) finish_response();
    return;
  }
  writing_ = true;
  in_flight_.swap(queue_);
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(in_flight_.size());
  for (const auto& bytes : in_flight_) buffers.emplace_back(asio::buffer(bytes));
  asio::async_write(socket_, buffers,
                    [self = shared_from_this()](error_code ec, size_t) { self->on_write(ec); });
}

void HttpSession::on_write(error_code ec) {
  writing_ = false;
  for (const auto& bytes : in_flight_) queued_bytes_ -= bytes.size();
  in_flight_.clear();
  if (phase_ == Phase::kClosed) return;
  if (ec) {
    spdlog::debug("http: write failed: {}", ec.message());
    return close();
  }
  write_next();
}

void HttpSession::finish_response() {
  if (request_active_) {
    request_active_ = false;
    context_->active_requests.fetch_sub(1, std::memory_order_relaxed);
  }
  writer_.reset();
  response_done_ = false;
  if (close_after_) return linger();
  phase_ = Phase::kReading;
  if (!watching_) return read_request();
  error_code ignored;
  socket_.cancel(ignored);  // on_watch continues with the next request
}

// Closing with unread input makes the kernel send RST, which can destroy the response before the
// client reads it; so half-close, and drop what still comes in for a short while.
void HttpSession::linger() {
  phase_ = Phase::kLingering;
  lingered_bytes_ = 0;
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  buffer_.consume(buffer_.size());
  arm_timer(kLingerTime);
  watch();
}

void HttpSession::close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  disarm_timer();
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  queue_.clear();
  std::shared_ptr<HttpSessionWriter> writer = writer_.lock();
  writer_.reset();
  if (request_active_) {
    request_active_ = false;
    context_->active_requests.fetch_sub(1, std::memory_order_relaxed);
    if (writer) writer->notify_disconnect();
  }
}

// ---- timeouts ----

void HttpSession::arm_timer(std::chrono::steady_clock::duration timeout) {
  uint64_t generation = ++timer_generation_;
  timer_.expires_after(timeout);
  timer_.async_wait([self = shared_from_this(), generation](error_code ec) {
    if (ec || generation != self->timer_generation_ || self->phase_ == Phase::kClosed) return;
    if (self->phase_ == Phase::kReading) spdlog::debug("http: request read timed out");
    self->close();
  });
}

void HttpSession::disarm_timer() {
  ++timer_generation_;
  timer_.cancel();
}

}  // namespace paceline
