#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace paceline {
namespace {

// Samples token (position % 1000) + 10 for every requested row, so outputs are predictable.
class FakeExecutor : public Executor {
 public:
  explicit FakeExecutor(int64_t num_blocks, std::chrono::microseconds delay = {})
      : num_blocks_(num_blocks), delay_(delay) {}
  StepResult execute(const StepPlan& plan) override {
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    if (failures_left > 0) {
      --failures_left;
      throw std::runtime_error("device lost");
    }
    StepResult r;
    r.step_id = plan.step_id;
    for (const auto& s : plan.seqs) {
      SeqResult sr;
      sr.request_id = s.request_id;
      const int64_t end = s.start_pos + static_cast<int64_t>(s.tokens.size());
      for (int32_t i = 0; i < s.num_logits; ++i) {
        sr.tokens.push_back(static_cast<int32_t>((end - s.num_logits + i) % 1000 + 10));
      }
      r.seqs.push_back(std::move(sr));
    }
    r.step_time_ns = 1000;
    return r;
  }
  ExecutorCapabilities capabilities() const override {
    ExecutorCapabilities x;
    x.kv = {num_blocks_, 16};
    return x;
  }
  std::atomic<int> failures_left{0};  // the next steps that throw

 private:
  int64_t num_blocks_;
  std::chrono::microseconds delay_;
};

struct Collected {
  std::vector<int32_t> tokens;
  std::optional<TokenEvent> last;
  std::promise<void> done;
};

TokenCallback collect(Collected& c) {
  return [&c](const TokenEvent& ev) {
    c.tokens.insert(c.tokens.end(), ev.token_ids.begin(), ev.token_ids.end());
    if (ev.finished) {
      c.last = ev;
      c.done.set_value();
    }
  };
}

SchedulerConfig small_config() {
  SchedulerConfig cfg;
  cfg.max_model_len = 256;
  return cfg;
}

bool wait_done(Collected& c) {
  return c.done.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
}

TEST(Engine, StreamsTokensUntilMaxTokens) {
  SteadyClock clock;
  MetricsRegistry metrics;
  Engine engine(small_config(), std::make_unique<FakeExecutor>(64), clock, &metrics);
  engine.start();
  Collected c;
  RequestParams p;
  p.max_tokens = 5;
  p.ignore_eos = true;
  engine.submit({1, 2, 3, 4}, p, collect(c));
  ASSERT_TRUE(wait_done(c));
  // The prompt has 4 tokens: the first output is sampled at position 3, then 4, 5, ...
  EXPECT_EQ(c.tokens, (std::vector<int32_t>{13, 14, 15, 16, 17}));
  ASSERT_TRUE(c.last->finish_reason.has_value());
  EXPECT_EQ(*c.last->finish_reason, FinishReason::kLength);
  EXPECT_EQ(c.last->usage.prompt_tokens, 4);
  EXPECT_EQ(c.last->usage.completion_tokens, 5);
  EXPECT_EQ(engine.num_unfinished(), 0);
  std::string text = metrics.render_prometheus("paceline:");
  EXPECT_NE(text.find("paceline:generation_tokens_total 5\n"), std::string::npos) << text;
}

TEST(Engine, RejectsAPromptBeyondTheContextWithAnErrorEvent) {
  SteadyClock clock;
  Engine engine(small_config(), std::make_unique<FakeExecutor>(64), clock);
  engine.start();
  Collected c;
  RequestParams p;
  p.max_tokens = 200;
  engine.submit(std::vector<int32_t>(100, 7), p, collect(c));
  ASSERT_TRUE(wait_done(c));
  EXPECT_NE(c.last->error.find("maximum context length"), std::string::npos) << c.last->error;
  EXPECT_TRUE(c.tokens.empty());
}

TEST(Engine, CancelAbortsAndFreesKv) {
  SteadyClock clock;
  MetricsRegistry metrics;
  Engine engine(small_config(), std::make_unique<FakeExecutor>(64, std::chrono::microseconds(200)),
                clock, &metrics);
  engine.start();
  Collected c;
  RequestParams p;
  p.max_tokens = 200;
  p.ignore_eos = true;
  uint64_t id = engine.submit({1, 2, 3}, p, collect(c));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  engine.cancel(id);
  ASSERT_TRUE(wait_done(c));
  EXPECT_EQ(*c.last->finish_reason, FinishReason::kAbort);
  EXPECT_LT(c.tokens.size(), 200u);
  // One more request runs to completion, so a step after the cancel has refreshed the gauges.
  Collected d;
  p.max_tokens = 1;
  engine.submit({5}, p, collect(d));
  ASSERT_TRUE(wait_done(d));
  std::string text = metrics.render_prometheus("paceline:");
  EXPECT_NE(text.find("paceline:num_requests_running 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("paceline:kv_cache_usage_perc 0\n"), std::string::npos) << text;
}

TEST(Engine, StopAbortsWhatIsStillRunning) {
  SteadyClock clock;
  auto engine = std::make_unique<Engine>(
      small_config(), std::make_unique<FakeExecutor>(64, std::chrono::microseconds(500)), clock);
  engine->start();
  Collected c;
  RequestParams p;
  p.max_tokens = 200;
  p.ignore_eos = true;
  engine->submit({1, 2, 3}, p, collect(c));
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  engine->stop();
  ASSERT_TRUE(wait_done(c));
  EXPECT_EQ(*c.last->finish_reason, FinishReason::kAbort);
}

TEST(Engine, ManyConcurrentRequestsEachFinishExactlyOnce) {
  SteadyClock clock;
  Engine engine(small_config(), std::make_unique<FakeExecutor>(40), clock);
  engine.start();
  std::vector<std::unique_ptr<Collected>> all;
  for (int i = 0; i < 50; ++i) {
    all.push_back(std::make_unique<Collected>());
    RequestParams p;
    p.max_tokens = 1 + i % 7;
    p.ignore_eos = true;
    engine.submit(std::vector<int32_t>(20 + i, 3), p, collect(*all.back()));
  }
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(wait_done(*all[i])) << i;
    EXPECT_EQ(static_cast<int>(all[i]->tokens.size()), 1 + i % 7) << i;
  }
  EXPECT_EQ(engine.num_unfinished(), 0);
}

}  // namespace
}  // namespace paceline

namespace paceline {
namespace {

TEST(Engine, ACallbackThatThrowsDoesNotStopTheEngine) {
  SteadyClock clock;
  Engine engine(small_config(), std::make_unique<FakeExecutor>(64), clock);
  engine.start();
  RequestParams p;
  p.max_tokens = 3;
  p.ignore_eos = true;
  engine.submit({1, 2, 3}, p, [](const TokenEvent&) { throw std::runtime_error("boom"); });
  Collected c;
  engine.submit({4, 5, 6}, p, collect(c));
  ASSERT_TRUE(wait_done(c));
  EXPECT_EQ(c.tokens.size(), 3u);
}

}  // namespace
}  // namespace paceline

namespace paceline {
namespace {

TEST(Engine, AnExecutorFailureAbortsItsRowsAndTheEngineGoesOn) {
  SteadyClock clock;
  auto executor = std::make_unique<FakeExecutor>(64);
  FakeExecutor* fake = executor.get();
  fake->failures_left = 1;
  Engine engine(small_config(), std::move(executor), clock);
  engine.start();
  RequestParams p;
  p.max_tokens = 3;
  p.ignore_eos = true;
  Collected failed;
  engine.submit({1, 2, 3}, p, collect(failed));
  ASSERT_TRUE(wait_done(failed));
  EXPECT_EQ(*failed.last->finish_reason, FinishReason::kAbort);
  // The failed step was retired: the next request is planned and served.
  Collected next;
  engine.submit({4, 5, 6}, p, collect(next));
  ASSERT_TRUE(wait_done(next));
  EXPECT_EQ(*next.last->finish_reason, FinishReason::kLength);
  EXPECT_EQ(next.tokens.size(), 3u);
}

}  // namespace
}  // namespace paceline

namespace paceline {
namespace {

// Holds every forward until the test opens the gate, so the test can act while one runs.
class GatedExecutor : public Executor {
 public:
  StepResult execute(const StepPlan& plan) override {
    std::unique_lock lock(mu);
    in_forward = true;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
    StepResult r;
    r.step_id = plan.step_id;
    for (const auto& s : plan.seqs) r.seqs.push_back({s.request_id, {42}});
    return r;
  }
  ExecutorCapabilities capabilities() const override {
    ExecutorCapabilities x;
    x.kv = {64, 16};
    return x;
  }
  std::mutex mu;
  std::condition_variable cv;
  bool in_forward = false;
  bool open = false;
};

TEST(Engine, ACancelDuringTheForwardDropsItsRowAsTheSimulatorDoes) {
  SteadyClock clock;
  auto executor = std::make_unique<GatedExecutor>();
  GatedExecutor* gate = executor.get();
  Engine engine(small_config(), std::move(executor), clock);
  engine.start();
  RequestParams p;
  p.max_tokens = 5;
  p.ignore_eos = true;
  Collected c;
  const uint64_t id = engine.submit({1, 2, 3}, p, collect(c));
  {
    std::unique_lock lock(gate->mu);
    ASSERT_TRUE(
        gate->cv.wait_for(lock, std::chrono::seconds(10), [&] { return gate->in_forward; }));
  }
  engine.cancel(id);  // while its prefill runs
  {
    std::lock_guard lock(gate->mu);
    gate->open = true;
  }
  gate->cv.notify_all();
  ASSERT_TRUE(wait_done(c));
  EXPECT_EQ(*c.last->finish_reason, FinishReason::kAbort);
  EXPECT_TRUE(c.tokens.empty()) << "the token of the forward it was cancelled in was delivered";
}

}  // namespace
}  // namespace paceline
