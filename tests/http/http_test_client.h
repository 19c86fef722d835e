#pragma once
// A small blocking HTTP/1.1 client over a raw POSIX socket, for the transport tests: it sends
// bytes as given (malformed ones included) and reads responses with a receive timeout, decoding
// chunked bodies by hand so that the framing itself is checked.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace paceline::test {

struct TestResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
  std::vector<std::string> chunks;             // the chunks as framed, when chunked
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class TestClient {
 public:
  explicit TestClient(uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
      throw std::runtime_error("connect() failed");
    }
  }
  ~TestClient() { close(); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  void send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send() failed");
      sent += static_cast<size_t>(n);
    }
  }

  // Reads one response; throws on timeout or a connection closed mid-response.
  TestResponse read_response() {
    TestResponse response;
    std::string head = read_until("\r\n\r\n");
    size_t line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    response.status = std::stoi(status_line.substr(status_line.find(' ') + 1, 3));
    size_t pos = line_end + 2;
    while (pos < head.size() - 2) {
      size_t end = head.find("\r\n", pos);
      std::string line = head.substr(pos, end - pos);
      size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      response.headers[name] = value;
      pos = end + 2;
    }
    if (response.status == 100) return read_response();
    if (response.header("transfer-encoding") == "chunked") {
      while (true) {
        std::string size_line = read_until("\r\n");
        size_t size = std::stoul(size_line, nullptr, 16);
        std::string data = read_exact(size + 2);
        if (data.substr(size) != "\r\n") throw std::runtime_error("chunk not ended by CRLF");
        if (size == 0) break;
        response.chunks.push_back(data.substr(0, size));
        response.body += response.chunks.back();
      }
    } else if (!response.header("content-length").empty()) {
      response.body = read_exact(std::stoul(response.header("content-length")));
    } else {
      response.body = read_to_eof();
    }
    return response;
  }

  // The next chunk of a chunked body whose head was read with read_head(); nullopt at its end.
  std::optional<std::string> read_chunk() {
    size_t size = std::stoul(read_until("\r\n"), nullptr, 16);
    std::string data = read_exact(size + 2);
    if (size == 0) return std::nullopt;
    return data.substr(0, size);
  }
  std::string read_head() { return read_until("\r\n\r\n"); }

  // True when the server closes the connection (EOF or reset) before the timeout.
  bool closed_by_peer() {
    char c;
    ssize_t n = ::recv(fd_, &c, 1, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
    buffer_.push_back(c);
    return false;
  }

 private:
  void fill() {
    char chunk[16384];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n == 0) throw std::runtime_error("connection closed by the server");
    if (n < 0) throw std::runtime_error("recv() timed out or failed");
    buffer_.append(chunk, static_cast<size_t>(n));
  }
  std::string read_until(const std::string& marker) {
    size_t at;
    while ((at = buffer_.find(marker)) == std::string::npos) fill();
    std::string out = buffer_.substr(0, at + marker.size());
    buffer_.erase(0, at + marker.size());
    return out;
  }
  std::string read_exact(size_t size) {
    while (buffer_.size() < size) fill();
    std::string out = buffer_.substr(0, size);
    buffer_.erase(0, size);
    return out;
  }
  std::string read_to_eof() {
    try {
      while (true) fill();
    } catch (const std::runtime_error&) {
    }
    return std::exchange(buffer_, std::string());
  }

  int fd_ = -1;
  std::string buffer_;
};

inline std::string get_request(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + extra + "\r\n";
}

inline std::string post_request(const std::string& path, const std::string& body,
                                const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

// Polls `condition` until it holds or `timeout` passes.
template <typename Condition>
bool eventually(Condition condition,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return condition();
}

}  // namespace paceline::test
