// Issue 15: SIGTERM is bounded by the shutdown timeout (plus the step in flight), the streams it
// cuts end properly, the exit status says so, and a second signal exits at once, logged.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <thread>
#include <vector>

#include "server_process.h"

namespace paceline::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::string long_stream_request() {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "go on"}}})},
               {"max_tokens", 30000},
               {"ignore_eos", true},
               {"stream", true}};
  std::string payload = body.dump();
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(payload.size()) + "\r\n\r\n" + payload;
}

// Opens a stream and returns once its first bytes arrived; `raw` gets everything until close.
std::thread open_stream(int port, std::string& raw) {
  int fd = connect_to(port);
  send_all(fd, long_stream_request());
  char buf[65536];
  ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  if (n > 0) raw.append(buf, static_cast<size_t>(n));
  return std::thread([fd, &raw] {
    char more[65536];
    for (;;) {
      ssize_t got = ::recv(fd, more, sizeof(more), 0);
      if (got <= 0) break;
      raw.append(more, static_cast<size_t>(got));
    }
    ::close(fd);
  });
}

TEST(ServeShutdown, TimeoutCutsStreamsWithAbortAndDoneAndExitsNonZero) {
  ServerProcess server({"--shutdown-timeout", "1"});
  std::vector<std::string> raws(3);
  std::vector<std::thread> readers;
  for (auto& raw : raws) readers.push_back(open_stream(server.port(), raw));
  auto t0 = std::chrono::steady_clock::now();
  int status = server.terminate(20s);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& t : readers) t.join();
  EXPECT_EQ(status, 3) << "the exit status says requests were cut";
  EXPECT_LT(seconds, 6.0) << "1 s timeout, a short step, the flush grace";
  for (const std::string& raw : raws) {
    std::vector<std::string> events = sse_payloads(parse_reply(raw).body);
    ASSERT_GE(events.size(), 2u) << raw.substr(0, 400);
    EXPECT_EQ(events.back(), "[DONE]");
    json last = json::parse(events[events.size() - 2]);
    EXPECT_EQ(last["choices"][0]["finish_reason"], "abort") << events[events.size() - 2];
  }
}

TEST(ServeShutdown, ASecondSignalIsLoggedAndExitsAtOnce) {
  ServerProcess server({"--shutdown-timeout", "60"});
  std::string raw;
  std::thread reader = open_stream(server.port(), raw);
  kill(server.pid(), SIGTERM);
  std::this_thread::sleep_for(300ms);
  kill(server.pid(), SIGTERM);
  int status = server.wait_exit(5s);
  reader.join();
  EXPECT_NE(status, -1) << "still draining after a second signal";
  EXPECT_NE(status, 0);
  EXPECT_NE(server.later_log().find("again: exiting now"), std::string::npos) << server.later_log();
}

}  // namespace
}  // namespace paceline::testing
