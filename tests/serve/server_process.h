#pragma once
// Starts the real `paceline serve` binary on a free port, as a user would, and talks HTTP to it
// over plain blocking sockets. Test-only helpers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace paceline::testing {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
};

inline int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

inline void send_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

inline std::string dechunk(const std::string& raw) {
  std::string out;
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t len = std::stoul(raw.substr(pos, eol - pos), nullptr, 16);
    if (len == 0) break;
    out += raw.substr(eol + 2, len);
    pos = eol + 2 + len + 2;
  }
  return out;
}

inline HttpReply parse_reply(const std::string& raw) {
  HttpReply r;
  size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos || raw.size() < 12) return r;
  r.status = std::stoi(raw.substr(9, 3));
  size_t pos = raw.find("\r\n") + 2;
  while (pos < head_end) {
    size_t eol = raw.find("\r\n", pos);
    std::string line = raw.substr(pos, eol - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t v = line.find_first_not_of(' ', colon + 1);
      r.headers[name] = v == std::string::npos ? "" : line.substr(v);
    }
    pos = eol + 2;
  }
  std::string body = raw.substr(head_end + 4);
  r.body = r.headers["transfer-encoding"] == "chunked" ? dechunk(body) : body;
  return r;
}

// Sends raw bytes and reads until the server closes the connection.
// With half_close the client signals it sends nothing more (the server takes that as gone).
inline HttpReply raw_exchange(int port, const std::string& bytes, bool half_close = false) {
  int fd = connect_to(port);
  if (fd < 0) return {};
  send_all(fd, bytes);
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::string raw;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return parse_reply(raw);
}

// Raw bytes in, every byte the server sent back out, and whether it closed the connection
// within `timeout` (false: it kept the connection open, waiting for more).
struct RawExchange {
  std::string raw;
  bool closed = false;
};
inline RawExchange raw_exchange_within(int port, const std::string& bytes,
                                       std::chrono::milliseconds timeout) {
  RawExchange out;
  int fd = connect_to(port);
  if (fd < 0) return out;
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  send_all(fd, bytes);
  char buf[65536];
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      out.closed = true;
      break;
    }
    if (n < 0) break;  // the receive timeout: still open
    out.raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

inline HttpReply http(int port, const std::string& method, const std::string& path,
                      const std::string& body = "",
                      std::map<std::string, std::string> headers = {{"Content-Type",
                                                                     "application/json"}}) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  return raw_exchange(port, req);
}

// The "data: " payloads of an SSE body, in order.
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

// Runs the binary with `args` (from the source folder), returning its exit status and output;
// killed after `timeout_s` (status 124), so a command that should have failed cannot hang.
inline std::pair<int, std::string> run_paceline(const std::string& args, int timeout_s = 600) {
  const std::string cmd = std::string("cd ") + PACELINE_SOURCE_DIR + " && timeout " +
                          std::to_string(timeout_s) + " " + PACELINE_BINARY + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (pipe != nullptr && fgets(buf, sizeof(buf), pipe)) out += buf;
  const int status = pipe != nullptr ? pclose(pipe) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Which binary runs, and from where.
struct ServerLaunch {
  std::string binary = PACELINE_BINARY;
  std::string working_dir = PACELINE_SOURCE_DIR;
  bool unset_paceline_home = false;                      // as a user who never set it
  std::vector<std::pair<std::string, std::string>> env = {};  // set in the server's environment
  bool one_thread = true;  // --threads 1 (tests share the machine); false: the server's default
};

class ServerProcess {
 public:
  // `model`: what --model names (a shipped name, a config.json or a Hugging Face folder).
  explicit ServerProcess(std::vector<std::string> extra_args, const std::string& model = "tiny",
                         const ServerLaunch& launch = {}) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 2);
      dup2(out[1], 1);
      close(out[0]);
      std::vector<std::string> args = {launch.binary, "serve", "--model", model, "--port", "0"};
      if (launch.one_thread) args.insert(args.end(), {"--threads", "1"});
      args.insert(args.end(), extra_args.begin(), extra_args.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      if (chdir(launch.working_dir.c_str()) != 0) _exit(126);
      if (launch.unset_paceline_home) unsetenv("PACELINE_HOME");
      for (const auto& [name, value] : launch.env) setenv(name.c_str(), value.c_str(), 1);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    log_ = fdopen(out[0], "r");
    char line[4096];
    while (fgets(line, sizeof(line), log_)) {
      std::string s(line);
      output_ += s;
      size_t at = s.find("listening on 127.0.0.1:");
      if (at != std::string::npos) {
        port_ = std::stoi(s.substr(at + std::strlen("listening on 127.0.0.1:")));
        break;
      }
    }
    if (port_ == 0) throw std::runtime_error("server did not start:\n" + output_);
    // Keep draining the log so the server never blocks on a full pipe.
    drainer_ = std::thread([this] {
      char buf[4096];
      while (fgets(buf, sizeof(buf), log_)) {
        std::lock_guard lock(log_mutex_);
        if (later_.size() < (size_t{1} << 20)) later_ += buf;
      }
    });
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (drainer_.joinable()) drainer_.join();
    if (log_) fclose(log_);
  }
  int port() const { return port_; }
  // What the server printed up to its "listening on" line.
  const std::string& startup_log() const { return output_; }
  // What it printed after that line (its first MiB), so far.
  std::string later_log() {
    std::lock_guard lock(log_mutex_);
    return later_;
  }
  pid_t pid() const { return pid_; }
  // Sends SIGTERM and returns the exit status (-1 when it did not exit within the timeout).
  int terminate(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    kill(pid_, SIGTERM);
    return wait_exit(timeout);
  }
  // The exit status once the process ends (-1 when it did not within the timeout).
  int wait_exit(std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  FILE* log_ = nullptr;
  std::string output_;
  std::mutex log_mutex_;
  std::string later_;
  std::thread drainer_;
};

}  // namespace paceline::testing
