#pragma once
// A scripted HTTP/1.1 server on loopback for the HTTP client's tests: plain blocking sockets, one
// thread per connection. Each request's body goes to a script that answers with raw byte pieces
// (written one by one, with pauses between them), so tests control chunk boundaries exactly.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace paceline::bench::test_util {

struct FakeAnswer {
  std::vector<std::string> pieces;  // raw bytes: status line, headers, body
  std::chrono::milliseconds pause{0};
  bool close_after = false;  // close the connection after the answer
  bool stall = false;        // after the pieces, hold the connection until the client leaves
};

// "HTTP/1.1 200 OK" head for a chunked SSE body, then each event as its own chunk.
inline std::string chunk(const std::string& bytes) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", bytes.size());
  return size + bytes + "\r\n";
}
inline const std::string kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
inline const std::string kLastChunk = "0\r\n\r\n";

class FakeSseServer {
 public:
  using Script = std::function<FakeAnswer(const std::string& body, int request_index)>;

  explicit FakeSseServer(Script script) : script_(std::move(script)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(listen_fd_, 64);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~FakeSseServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    std::vector<int> fds;
    std::vector<std::thread> workers;
    {
      std::lock_guard lock(mu_);  // not held while joining: workers take it too
      fds = fds_;
      workers.swap(workers_);
    }
    for (int fd : fds) ::shutdown(fd, SHUT_RDWR);
    for (auto& t : workers) t.join();
    for (int fd : fds) ::close(fd);
  }

  int port() const { return port_; }
  int connections() const { return connections_.load(); }
  std::vector<std::string> bodies() const {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  std::vector<std::string> heads() const {
    std::lock_guard lock(mu_);
    return heads_;
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      std::lock_guard lock(mu_);
      fds_.push_back(fd);
      workers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    std::string in;
    char buf[65536];
    for (;;) {
      size_t head_end;
      while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) return close_fd(fd);
        in.append(buf, static_cast<size_t>(n));
      }
      std::string head = in.substr(0, head_end);
      size_t cl = head.find("Content-Length: ");
      size_t length = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
      while (in.size() < head_end + 4 + length) {
        ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) return close_fd(fd);
        in.append(buf, static_cast<size_t>(n));
      }
      std::string body = in.substr(head_end + 4, length);
      in.erase(0, head_end + 4 + length);
      int index;
      {
        std::lock_guard lock(mu_);
        index = static_cast<int>(bodies_.size());
        bodies_.push_back(body);
        heads_.push_back(head);
      }
      FakeAnswer answer = script_(body, index);
      for (const std::string& piece : answer.pieces) {
        if (::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL) < 0) return close_fd(fd);
        if (answer.pause.count() > 0) std::this_thread::sleep_for(answer.pause);
      }
      if (answer.stall) {
        while (::recv(fd, buf, sizeof(buf), 0) > 0) {
        }
        return close_fd(fd);
      }
      if (answer.close_after) return close_fd(fd);
    }
  }

  void close_fd(int fd) { ::shutdown(fd, SHUT_RDWR); }

  Script script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> workers_;
  std::vector<std::string> bodies_;
  std::vector<std::string> heads_;
};

}  // namespace paceline::bench::test_util
