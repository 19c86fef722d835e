// Server-Sent Events, answers from other threads, and disconnects in the middle of a stream.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "http_test_client.h"
#include "server/http_server.h"

namespace paceline {
namespace {

using test::eventually;
using test::get_request;
using test::TestClient;

// Hands writers from the io thread to the test's thread, as the engine thread would get them.
class WriterInbox {
 public:
  void put(std::shared_ptr<ResponseWriter> writer) {
    std::lock_guard lock(mutex_);
    writers_.push_back(std::move(writer));
    ready_.notify_all();
  }
  std::shared_ptr<ResponseWriter> take() {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, std::chrono::seconds(5), [&] { return !writers_.empty(); })) {
      return nullptr;
    }
    auto writer = writers_.front();
    writers_.erase(writers_.begin());
    return writer;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::shared_ptr<ResponseWriter>> writers_;
};

TEST(HttpSseTest, StreamsEventsInOrderWithChunkedFraming) {
  constexpr int kEvents = 50;
  HttpServer server;
  server.route("GET", "/stream", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->start_sse();
    for (int i = 0; i < kEvents; ++i) w->sse_event("{\"i\":" + std::to_string(i) + "}");
    w->sse_event("[DONE]");
    w->end();
  });
  server.start();
  TestClient client(server.port());
  client.send(get_request("/stream"));
  auto response = client.read_response();
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.header("content-type"), "text/event-stream");
  EXPECT_EQ(response.header("cache-control"), "no-cache");
  EXPECT_EQ(response.header("transfer-encoding"), "chunked");
  EXPECT_TRUE(response.header("content-length").empty());
  std::string expected;
  for (int i = 0; i < kEvents; ++i) expected += "data: {\"i\":" + std::to_string(i) + "}\n\n";
  expected += "data: [DONE]\n\n";
  EXPECT_EQ(response.body, expected);
  ASSERT_GE(response.chunks.size(), 1u);
  // The connection stays usable after the stream.
  client.send(get_request("/stream"));
  EXPECT_EQ(client.read_response().body, expected);
  EXPECT_TRUE(eventually([&] { return server.active_requests() == 0; }));
}

TEST(HttpSseTest, EachEventIsFlushedBeforeTheNextOneIsProduced) {
  WriterInbox inbox;
  HttpServer server;
  server.route("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->start_sse({{"X-Request-Id", "r1"}});
    inbox.put(std::move(w));
  });
  server.start();
  TestClient client(server.port());
  client.send(get_request("/stream"));
  auto writer = inbox.take();
  ASSERT_TRUE(writer);
  std::string head = client.read_head();
  EXPECT_NE(head.find("X-Request-Id: r1"), std::string::npos);
  for (int i = 0; i < 5; ++i) {
    writer->sse_event("token " + std::to_string(i));
    EXPECT_EQ(client.read_chunk(), "data: token " + std::to_string(i) + "\n\n");
  }
  EXPECT_EQ(server.active_requests(), 1u);
  writer->end();
  EXPECT_EQ(client.read_chunk(), std::nullopt);
  EXPECT_TRUE(eventually([&] { return server.active_requests() == 0; }));
}

TEST(HttpSseTest, MultiLinePayloadBecomesOneDataLinePerLine) {
  HttpServer server;
  server.route("GET", "/stream", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->start_sse();
    w->sse_event("a\nb");
    w->end();
  });
  server.start();
  TestClient client(server.port());
  client.send(get_request("/stream"));
  EXPECT_EQ(client.read_response().body, "data: a\ndata: b\n\n");
}

TEST(HttpSseTest, HandlerAnswersFromAnotherThreadAfterADelay) {
  std::vector<std::thread> workers;
  std::mutex workers_mutex;
  HttpServer server;
  server.route("POST", "/slow", [&](const HttpRequest& r, std::shared_ptr<ResponseWriter> w) {
    std::lock_guard lock(workers_mutex);
    workers.emplace_back([w, body = r.body] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      w->send(200, "text/plain", "late " + body);
    });
  });
  server.start();
  TestClient client(server.port());
  client.send(test::post_request("/slow", "one"));
  client.send(test::post_request("/slow", "two"));  // pipelined behind the first
  EXPECT_EQ(client.read_response().body, "late one");
  EXPECT_EQ(client.read_response().body, "late two");
  for (auto& worker : workers) worker.join();
}

TEST(HttpSseTest, DroppedWriterAnswers500) {
  HttpServer server;
  server.route("GET", "/forget", [](const HttpRequest&, std::shared_ptr<ResponseWriter>) {});
  server.route("GET", "/half", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->start_sse();
    w->sse_event("only");
  });
  server.start();
  TestClient client(server.port());
  client.send(get_request("/forget"));
  EXPECT_EQ(client.read_response().status, 500);
  client.send(get_request("/half"));  // a stream left open by a dropped writer is ended
  EXPECT_EQ(client.read_response().body, "data: only\n\n");
  EXPECT_TRUE(eventually([&] { return server.active_requests() == 0; }));
}

TEST(HttpSseTest, DisconnectMidStreamFiresOnDisconnectOnce) {
  WriterInbox inbox;
  std::atomic<int> disconnects{0};
  HttpServer server;
  server.route("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->on_disconnect([&] { disconnects.fetch_add(1); });
    w->start_sse();
    inbox.put(std::move(w));
  });
  server.start();
  auto client = std::make_unique<TestClient>(server.port());
  client->send(get_request("/stream"));
  auto writer = inbox.take();
  ASSERT_TRUE(writer);
  writer->sse_event("first");
  client->read_head();
  EXPECT_EQ(client->read_chunk(), "data: first\n\n");
  EXPECT_FALSE(writer->closed());

  client.reset();  // the client goes away while the stream is open
  EXPECT_TRUE(eventually([&] { return disconnects.load() == 1; }, std::chrono::seconds(1)));
  EXPECT_TRUE(writer->closed());
  EXPECT_EQ(server.active_requests(), 0u);
  writer->sse_event("after");  // harmless no-ops
  writer->end();
  writer->send(200, "text/plain", "x");
  writer->on_disconnect([&] { disconnects.fetch_add(100); });  // ended: never fires
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(disconnects.load(), 1);
  EXPECT_TRUE(eventually([&] { return server.open_connections() == 0; }));
}

TEST(HttpSseTest, OnDisconnectRegisteredAfterTheClientLeftStillFires) {
  WriterInbox inbox;
  HttpServer server;
  server.route("GET", "/wait", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    inbox.put(std::move(w));
  });
  server.start();
  auto client = std::make_unique<TestClient>(server.port());
  client->send(get_request("/wait"));
  auto writer = inbox.take();
  ASSERT_TRUE(writer);
  client.reset();
  EXPECT_TRUE(eventually([&] { return writer->closed(); }));
  int fired = 0;
  writer->on_disconnect([&] { ++fired; });
  EXPECT_EQ(fired, 1);
}

TEST(HttpSseTest, WriterOutlivesTheServer) {
  WriterInbox inbox;
  std::atomic<int> disconnects{0};
  auto server = std::make_unique<HttpServer>();
  server->route("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->on_disconnect([&] { disconnects.fetch_add(1); });
    w->start_sse();
    inbox.put(std::move(w));
  });
  server->start();
  TestClient client(server->port());
  client.send(get_request("/stream"));
  auto writer = inbox.take();
  ASSERT_TRUE(writer);
  server.reset();  // stop() closes the connection under the handler
  EXPECT_EQ(disconnects.load(), 1);
  EXPECT_TRUE(writer->closed());
  writer->sse_event("nobody listens");
  writer->end();
}

}  // namespace
}  // namespace paceline
