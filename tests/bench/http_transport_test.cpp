// The HTTP client against a scripted loopback server: streamed chunks arrive as callbacks with
// increasing times, usage is read from the last chunk, errors and cancels end a request, and
// connections are kept alive and reused (and replaced when the server dropped them).
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench/http_transport.h"
#include "fake_sse_server.h"

namespace paceline::bench {
namespace {

using test_util::chunk;
using test_util::FakeAnswer;
using test_util::FakeSseServer;
using test_util::kLastChunk;
using test_util::kSseHead;

std::string content_event(const std::string& text) {
  return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + text + "\"}}]}\n\n";
}
const std::string kUsageEvent =
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":70,\"completion_tokens\":3,"
    "\"prompt_tokens_details\":{\"cached_tokens\":64}}}\n\n";

// Three content chunks, the usage chunk and [DONE], with events split across HTTP chunks.
FakeAnswer streamed_answer() {
  std::string events = content_event("a") + content_event("b") + content_event("c") + kUsageEvent +
                       "data: [DONE]\n\n";
  FakeAnswer a;
  a.pieces.push_back(kSseHead);
  for (size_t pos = 0; pos < events.size(); pos += 37)
    a.pieces.push_back(chunk(events.substr(pos, 37)));
  a.pieces.push_back(kLastChunk);
  a.pause = std::chrono::milliseconds(2);
  return a;
}

struct Outcome {
  int64_t first_token_ns = -1;
  std::vector<int64_t> chunk_ns;
  bool done = false;
  Usage usage;
  bool error = false;
  int status = 0;
  std::string text;
  bool ended() const { return done || error; }
};

StreamCallbacks callbacks(Outcome& o) {
  StreamCallbacks cb;
  cb.on_first_token = [&o](int64_t t) { o.first_token_ns = t; };
  cb.on_chunk = [&o](int64_t t, int64_t n) {
    EXPECT_EQ(n, 1);
    o.chunk_ns.push_back(t);
  };
  cb.on_done = [&o](int64_t, const Usage& u) {
    o.done = true;
    o.usage = u;
  };
  cb.on_error = [&o](int64_t, int status, const std::string& text) {
    o.error = true;
    o.status = status;
    o.text = text;
  };
  return cb;
}

RequestSpec spec(uint64_t id, int64_t isl = 70, int64_t osl = 3) {
  RequestSpec s;
  s.id = id;
  s.session = "s";
  s.hash_scope = "s";
  s.model = "recorded-model";
  s.block_size = 64;
  s.hash_ids = {1};
  s.isl = isl;
  s.osl = osl;
  s.marker = "[rid:000000000001]\n\n";
  return s;
}

struct Client {
  explicit Client(int port, Endpoint endpoint = Endpoint::kChat, bool session_id_header = false) {
    HttpTransportOptions o;
    o.session_id_header = session_id_header;
    o.url = parse_http_url("http://127.0.0.1:" + std::to_string(port));
    o.endpoint = endpoint;
    o.model = "served";
    o.api_key = "secret";
    transport = std::make_unique<HttpTransport>(io, o, clock);
  }
  void run_until(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      if (io.stopped()) io.restart();  // a loop that ran out of work stays stopped until then
      io.run_one_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(done()) << "timed out";
  }
  boost::asio::io_context io;
  SteadyClock clock;
  std::unique_ptr<HttpTransport> transport;
};

TEST(HttpTransport, StreamsChunksUsageAndReusesTheConnection) {
  FakeSseServer server([](const std::string&, int) { return streamed_answer(); });
  Client c(server.port());
  Outcome a, b;
  int finishes = 0;
  c.transport->set_after_finish([&] { ++finishes; });
  c.transport->send(spec(0), callbacks(a));
  EXPECT_EQ(c.transport->in_flight(), 1);
  c.run_until([&] { return a.ended(); });
  ASSERT_TRUE(a.done) << a.text;
  ASSERT_EQ(a.chunk_ns.size(), 3u);
  EXPECT_EQ(a.first_token_ns, a.chunk_ns[0]);
  EXPECT_LT(a.chunk_ns[0], a.chunk_ns[2]);  // stamped as they arrived, 2 ms apart per piece
  EXPECT_EQ(a.usage.prompt_tokens, 70);
  EXPECT_EQ(a.usage.completion_tokens, 3);
  EXPECT_EQ(a.usage.cached_tokens, 64);
  EXPECT_EQ(c.transport->in_flight(), 0);
  c.transport->send(spec(1), callbacks(b));
  c.run_until([&] { return b.ended(); });
  EXPECT_TRUE(b.done);
  EXPECT_EQ(finishes, 2);
  EXPECT_EQ(server.connections(), 1);  // kept alive
  EXPECT_EQ(c.transport->connections_opened(), 1);
  EXPECT_EQ(c.transport->content_chunks(), 6);
  auto heads = server.heads();
  EXPECT_NE(heads[0].find("POST /v1/chat/completions HTTP/1.1"), std::string::npos);
  EXPECT_NE(heads[0].find("Authorization: Bearer secret"), std::string::npos);
}

std::string header_value(const std::string& head, const std::string& name) {
  const size_t at = head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const size_t start = at + 4 + name.size();
  return head.substr(start, head.find("\r\n", start) - start);
}

// As AIPerf: a correlation id unique to each request always, the agent session's id on request,
// the same for every turn of the session and its subagents, and different for another play.
TEST(HttpTransport, SendsCorrelationAndSessionIds) {
  FakeSseServer server([](const std::string&, int) { return streamed_answer(); });
  Client with(server.port(), Endpoint::kChat, /*session_id_header=*/true);
  Client without(server.port());
  std::vector<Outcome> out(4);
  RequestSpec subagent = spec(1);
  subagent.stream = 1;
  subagent.agent = "explore";
  RequestSpec other_play = spec(2);
  other_play.marker = "[rid:00000000beef]\n\n";
  with.transport->send(spec(0), callbacks(out[0]));
  with.run_until([&] { return out[0].ended(); });
  with.transport->send(subagent, callbacks(out[1]));
  with.run_until([&] { return out[1].ended(); });
  with.transport->send(other_play, callbacks(out[2]));
  with.run_until([&] { return out[2].ended(); });
  without.transport->send(spec(0), callbacks(out[3]));
  without.run_until([&] { return out[3].ended(); });
  const std::vector<std::string> heads = server.heads();
  ASSERT_EQ(heads.size(), 4u);
  EXPECT_EQ(header_value(heads[0], "X-Session-ID"), "s-000000000001");
  EXPECT_EQ(header_value(heads[1], "X-Session-ID"), "s-000000000001");
  EXPECT_EQ(header_value(heads[2], "X-Session-ID"), "s-00000000beef");
  EXPECT_EQ(header_value(heads[3], "X-Session-ID"), "");
  std::set<std::string> ids;
  for (const std::string& h : heads) ids.insert(header_value(h, "X-Correlation-ID"));
  EXPECT_EQ(ids.size(), 4u);  // two runs' request 0 differ too
  EXPECT_FALSE(ids.contains(""));
  EXPECT_TRUE(header_value(heads[1], "X-Correlation-ID").ends_with("-1"));
}

TEST(HttpTransport, ConcurrentRequestsUseOneConnectionEach) {
  FakeSseServer server([](const std::string&, int) { return streamed_answer(); });
  Client c(server.port());
  std::vector<Outcome> out(5);
  for (int i = 0; i < 5; ++i) c.transport->send(spec(static_cast<uint64_t>(i)), callbacks(out[i]));
  c.run_until([&] {
    for (auto& o : out) {
      if (!o.ended()) return false;
    }
    return true;
  });
  for (auto& o : out) EXPECT_EQ(o.chunk_ns.size(), 3u);
  EXPECT_EQ(server.connections(), 5);
}

TEST(HttpTransport, RequestBodyFollowsTheSpec) {
  FakeSseServer server([](const std::string&, int) { return streamed_answer(); });
  Client chat(server.port());
  Outcome a;
  chat.transport->send(spec(0, 200, 17), callbacks(a));
  chat.run_until([&] { return a.ended(); });
  auto body = nlohmann::json::parse(server.bodies().at(0));
  EXPECT_EQ(body["model"], "served");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["max_tokens"], 17);
  EXPECT_EQ(body["max_completion_tokens"], 17);
  EXPECT_EQ(body["min_tokens"], 17);
  EXPECT_EQ(body["ignore_eos"], true);
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  std::string content = body["messages"][0]["content"];
  EXPECT_EQ(content.rfind("[rid:000000000001]\n\n", 0), 0u);

  Client completions(server.port(), Endpoint::kCompletions);
  Outcome b;
  completions.transport->send(spec(1, 200, 5), callbacks(b));
  completions.run_until([&] { return b.ended(); });
  body = nlohmann::json::parse(server.bodies().at(1));
  EXPECT_EQ(body["prompt"].size(), 200u);
  EXPECT_EQ(body["max_tokens"], 5);
  EXPECT_NE(server.heads().at(1).find("POST /v1/completions HTTP/1.1"), std::string::npos);
}

TEST(HttpTransport, HttpErrorsCarryTheServersMessage) {
  FakeSseServer server([](const std::string&, int) {
    std::string body =
        R"({"error":{"message":"This model's maximum context length is 40960 tokens."}})";
    FakeAnswer a;
    a.pieces = {"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body};
    return a;
  });
  Client c(server.port());
  Outcome o;
  c.transport->send(spec(0), callbacks(o));
  c.run_until([&] { return o.ended(); });
  ASSERT_TRUE(o.error);
  EXPECT_EQ(o.status, 400);
  EXPECT_EQ(o.text, "This model's maximum context length is 40960 tokens.");
  EXPECT_TRUE(o.chunk_ns.empty());
}

TEST(HttpTransport, NoUsageChunkLeavesCountsUnknown) {
  FakeSseServer server([](const std::string&, int) {
    FakeAnswer a;
    a.pieces = {"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
                content_event("x"), content_event("y")};  // no length, no [DONE]: ends at close
    a.close_after = true;
    return a;
  });
  Client c(server.port());
  Outcome o;
  c.transport->send(spec(0), callbacks(o));
  c.run_until([&] { return o.ended(); });
  ASSERT_TRUE(o.done) << o.text;
  EXPECT_EQ(o.chunk_ns.size(), 2u);
  EXPECT_EQ(o.usage.prompt_tokens, -1);
  EXPECT_EQ(o.usage.completion_tokens, -1);
}

TEST(HttpTransport, CancelClosesTheStreamWithoutCallbacks) {
  FakeSseServer server([](const std::string&, int) {
    FakeAnswer a;
    a.pieces = {kSseHead, chunk(content_event("a"))};
    a.stall = true;
    return a;
  });
  Client c(server.port());
  Outcome o;
  c.transport->send(spec(0), callbacks(o));
  c.run_until([&] { return o.chunk_ns.size() == 1; });
  c.transport->cancel(0);
  EXPECT_EQ(c.transport->in_flight(), 0);
  c.io.restart();
  c.io.run_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(o.ended());
}

TEST(HttpTransport, AConnectionTheServerDroppedIsReplaced) {
  FakeSseServer server([](const std::string&, int) {
    FakeAnswer a = streamed_answer();
    a.close_after = true;  // but the answer says nothing about it: the client finds out later
    return a;
  });
  Client c(server.port());
  Outcome a, b;
  c.transport->send(spec(0), callbacks(a));
  c.run_until([&] { return a.ended(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.transport->send(spec(1), callbacks(b));
  c.run_until([&] { return b.ended(); });
  EXPECT_TRUE(b.done) << b.text;
  EXPECT_EQ(b.chunk_ns.size(), 3u);
  EXPECT_EQ(server.connections(), 2);
}

TEST(HttpTransport, ConnectionRefusedIsAnError) {
  int port;
  {
    FakeSseServer gone([](const std::string&, int) { return FakeAnswer{}; });
    port = gone.port();
  }
  Client c(port);
  Outcome o;
  c.transport->send(spec(0), callbacks(o));
  c.run_until([&] { return o.ended(); });
  EXPECT_TRUE(o.error);
  EXPECT_EQ(o.status, 0);
  EXPECT_NE(o.text.find("connect"), std::string::npos);
}

TEST(HttpUrl, Parses) {
  HttpUrl u = parse_http_url("http://localhost:8000");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, "8000");
  EXPECT_EQ(u.base_path, "");
  EXPECT_EQ(parse_http_url("http://10.0.0.2:30000/v1/").base_path, "");
  EXPECT_EQ(parse_http_url("http://h/proxy/v1").base_path, "/proxy");
  EXPECT_EQ(parse_http_url("http://h").port, "80");
  EXPECT_EQ(parse_http_url("http://[::1]:9000").host, "::1");
  EXPECT_EQ(parse_http_url("http://h:1/x").str(), "http://h:1/x");
  EXPECT_THROW(parse_http_url("https://h"), Error);
  EXPECT_THROW(parse_http_url("http://h:port"), Error);
  EXPECT_EQ(parse_endpoint("completions"), Endpoint::kCompletions);
  EXPECT_THROW(parse_endpoint("responses"), Error);
}

}  // namespace
}  // namespace paceline::bench
