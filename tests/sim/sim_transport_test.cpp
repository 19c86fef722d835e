// The in-process transport: a request's stream is the scheduler's steps, stamped with the cost
// model's times on the virtual clock; refusals come back as HTTP 400; cancels free the engine.
#include <gtest/gtest.h>

#include <optional>

#include "base/clock.h"
#include "sim/sim_executor.h"
#include "sim/sim_transport.h"
#include "linear_cost.h"

namespace paceline::sim {
namespace {

using test_util::kMs;
using test_util::LinearCost;

struct Stream {
  std::optional<int64_t> first_ns;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::optional<int64_t> done_ns;
  bench::Usage usage;
  std::optional<int> error_status;
  std::string error_text;
};

struct Rig {
  explicit Rig(SchedulerConfig config = small())
      : executor(new SimExecutor(cost, kv_64_blocks())),
        core(config, std::unique_ptr<Executor>(executor), clock),
        scheduler(core.scheduler()) {}

  static ExecutorCapabilities kv_64_blocks() {
    ExecutorCapabilities x;
    x.kv = {64, 16};
    return x;
  }

  static SchedulerConfig small() {
    SchedulerConfig c;
    c.max_model_len = 4096;
    c.block_size = 16;
    c.num_kv_blocks = 64;
    c.max_num_batched_tokens = 2048;
    return c;
  }

  void send(uint64_t id, int64_t isl, int64_t osl, Stream& s, int64_t block = 16) {
    bench::RequestSpec spec;
    spec.id = id;
    spec.isl = isl;
    spec.osl = osl;
    spec.block_size = block;
    spec.hash_scope = "s";
    for (int64_t i = 0; i * block < isl; ++i) spec.hash_ids.push_back(i);
    bench::StreamCallbacks cb;
    cb.on_first_token = [&s](int64_t t) { s.first_ns = t; };
    cb.on_chunk = [&s](int64_t t, int64_t n) { s.chunks.emplace_back(t, n); };
    cb.on_done = [&s](int64_t t, const bench::Usage& u) {
      s.done_ns = t;
      s.usage = u;
    };
    cb.on_error = [&s](int64_t t, int status, const std::string& text) {
      s.done_ns = t;
      s.error_status = status;
      s.error_text = text;
    };
    transport.send(spec, std::move(cb));
  }

  // Runs the engine until nothing is left or the clock reaches `until`.
  void run(int64_t until = INT64_MAX) {
    while (auto t = transport.next_event_ns()) {
      if (*t > until) break;
      clock.set_ns(*t);
      transport.advance_to(*t);
    }
  }

  VirtualClock clock;
  LinearCost cost;
  SimExecutor* executor;  // owned by the core
  EngineCore core;
  const Scheduler& scheduler;
  SimTransport transport{core, clock};
};

TEST(SimTransport, OneRequestIsAPrefillThenOneChunkPerDecodeStep) {
  Rig rig;
  Stream s;
  rig.clock.set_ns(5 * kMs);
  rig.send(0, 100, 4, s);
  EXPECT_EQ(rig.transport.next_event_ns(), 5 * kMs);  // the idle engine wakes at the send
  rig.run();
  // Prefill of 100 tokens: 200 ms, then the first token; three decode steps of 11 ms each.
  ASSERT_TRUE(s.first_ns);
  EXPECT_EQ(*s.first_ns, 205 * kMs);
  std::vector<std::pair<int64_t, int64_t>> want = {
      {205 * kMs, 1}, {216 * kMs, 1}, {227 * kMs, 1}, {238 * kMs, 1}};
  EXPECT_EQ(s.chunks, want);
  EXPECT_EQ(s.done_ns, 238 * kMs);
  EXPECT_EQ(s.usage.prompt_tokens, 100);
  EXPECT_EQ(s.usage.completion_tokens, 4);
  EXPECT_EQ(s.usage.cached_tokens, 0);
  EXPECT_EQ(rig.transport.in_flight(), 0);
  EXPECT_FALSE(rig.transport.next_event_ns());
  EXPECT_EQ(rig.executor->stats().steps, 4);
}

TEST(SimTransport, ASecondTurnHitsThePrefixTheFirstLeft) {
  Rig rig;
  Stream a, b;
  rig.send(0, 160, 2, a);
  rig.run();
  rig.send(1, 200, 2, b);  // same hash ids for the first 160 tokens: 10 cached blocks
  rig.run();
  EXPECT_EQ(b.usage.cached_tokens, 160);
  // Only the 40 new tokens are computed: 140 ms after the send.
  EXPECT_EQ(*b.first_ns - *a.done_ns, 140 * kMs);
}

TEST(SimTransport, ARequestArrivingMidStepWaitsForTheStepBoundary) {
  Rig rig;
  Stream a, b;
  rig.send(0, 100, 3, a);
  rig.run(50 * kMs);  // the prefill runs until 200 ms
  rig.clock.set_ns(50 * kMs);
  rig.send(1, 10, 2, b);
  rig.run();
  // b is admitted at the next pass (200 ms, after a's prefill): a 110 ms prefill of its own.
  EXPECT_EQ(*b.first_ns, 310 * kMs);
}

TEST(SimTransport, RefusedRequestsGetA400WithTheSchedulersMessage) {
  Rig rig;
  Stream s;
  rig.send(0, 4000, 200, s);  // beyond max_model_len 4096
  rig.run();
  ASSERT_TRUE(s.error_status);
  EXPECT_EQ(*s.error_status, 400);
  EXPECT_NE(s.error_text.find("maximum context length"), std::string::npos);
  EXPECT_EQ(rig.transport.in_flight(), 0);
}

TEST(SimTransport, CancelFreesTheRequestAndSilencesItsStream) {
  Rig rig;
  Stream s;
  rig.send(0, 100, 50, s);
  rig.run(300 * kMs);
  EXPECT_TRUE(s.first_ns);
  rig.clock.set_ns(300 * kMs);
  rig.transport.cancel(0);
  const size_t chunks = s.chunks.size();
  rig.run();
  EXPECT_EQ(s.chunks.size(), chunks);
  EXPECT_FALSE(s.done_ns);
  EXPECT_FALSE(rig.scheduler.has_unfinished());
  EXPECT_EQ(rig.scheduler.kv().num_free_blocks(), 64);
}

}  // namespace
}  // namespace paceline::sim
