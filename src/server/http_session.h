#pragma once
// One TCP connection. It reads a request (Beast's parser, with size and time limits), hands it to
// the router together with a writer, then writes what that writer posts, in order, one write at a
// time. While the response is produced a read stays posted on the socket, so a client that goes
// away mid-stream is noticed at once. Everything runs on the connection's strand; other threads
// only post to it.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace paceline {

struct HttpContext;
class HttpSessionWriter;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // The socket's executor must be a strand: every handler of this session runs on it.
  static std::shared_ptr<HttpSession> create(boost::asio::ip::tcp::socket socket,
                                             std::shared_ptr<HttpContext> context);
  HttpSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<HttpContext> context);
  ~HttpSession();

  void start();
  // For a connection over HttpServerOptions::max_connections: answers 503 and closes.
  void start_over_capacity();
  // Any thread: closes the connection; a request in flight sees on_disconnect.
  void shutdown();
  // Any thread: queues bytes of response `exchange`; `last` ends it.
  void post_deliver(uint64_t exchange, std::string bytes, bool last, bool close_after);

 private:
  enum class Phase {
    kReading,     // the parser owns the read side
    kResponding,  // a response is being produced; a watch read looks for the client leaving
    kLingering,   // the error response is out; drain the input briefly, then close
    kClosed,
  };

  void read_request();
  void on_header(boost::system::error_code ec);
  void on_body(boost::system::error_code ec);
  void on_read_error(boost::system::error_code ec);
  void dispatch();
  void reply_and_close(int status, const std::string& message, const std::string& code = "");
  void send_and_close(int status, const std::string& content_type, const std::string& body,
                      const std::map<std::string, std::string>& extra_headers);
  // The framing and header checks, before any body byte is read; false: answered and closing.
  bool check_header();

  void watch();
  void on_watch(boost::system::error_code ec, size_t bytes);

  void deliver(uint64_t exchange, std::string bytes, bool last, bool close_after);
  void enqueue(std::string bytes);
  void write_next();
  void on_write(boost::system::error_code ec);
  void finish_response();
  void linger();
  void close();

  void arm_timer(std::chrono::steady_clock::duration timeout);
  void disarm_timer();

  std::shared_ptr<HttpContext> context_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  uint64_t timer_generation_ = 0;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  Phase phase_ = Phase::kReading;

  uint64_t exchange_ = 0;                    // number of the current request
  std::string request_id_;                   // its X-Request-Id; empty until its header is in
  std::weak_ptr<HttpSessionWriter> writer_;  // its writer, to tell it about a disconnect
  bool request_active_ = false;              // counted in HttpContext::active_requests
  bool response_done_ = false;               // the last bytes of the response are queued
  bool close_after_ = false;
  bool watching_ = false;
  size_t lingered_bytes_ = 0;

  std::vector<std::string> queue_;      // waiting for the write in flight
  std::vector<std::string> in_flight_;  // owned by the write in flight
  size_t queued_bytes_ = 0;
  bool writing_ = false;
};

}  // namespace paceline
