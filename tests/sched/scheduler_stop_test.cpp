// Stop conditions as the engine sees them: one output per step per request, the finish reason
// and the usage on the last one.
#include <gtest/gtest.h>

#include "fake_executor.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

using testing::FakeExecutor;
using testing::prompt_of;
using testing::run_step;
using testing::small_config;

constexpr int32_t kEos = 2;

RequestParams params(int64_t max_tokens) {
  RequestParams p;
  p.max_tokens = max_tokens;
  p.eos_token_ids = {kEos};
  return p;
}

// Runs until the request finishes; returns its outputs in order.
std::vector<RequestOutput> run_to_end(Scheduler& s, const FakeExecutor& exec) {
  std::vector<RequestOutput> outputs;
  for (int i = 0; i < 100 && s.has_unfinished(); ++i) {
    for (auto& out : run_step(s, exec).outputs) outputs.push_back(out);
  }
  return outputs;
}

TEST(StopConditions, EachStepStreamsOneTokenAndTheLastCarriesTheReason) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec(5);
  s.add_request(1, prompt_of(6), params(3));
  auto outputs = run_to_end(s, exec);
  ASSERT_EQ(outputs.size(), 3u);
  for (const auto& out : outputs) EXPECT_EQ(out.new_token_ids, std::vector<int32_t>{5});
  EXPECT_FALSE(outputs[1].finished);
  EXPECT_TRUE(outputs[2].finished);
  EXPECT_EQ(outputs[2].finish_reason, FinishReason::kLength);
  EXPECT_EQ(outputs[2].usage.prompt_tokens, 6);
  EXPECT_EQ(outputs[2].usage.completion_tokens, 3);
  EXPECT_EQ(s.stats().finished_length, 1);
}

TEST(StopConditions, EosStopsTheRequest) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec(kEos);
  s.add_request(1, prompt_of(6), params(10));
  auto outputs = run_to_end(s, exec);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].finish_reason, FinishReason::kStop);
  EXPECT_EQ(outputs[0].stop_token_id, kEos);
  EXPECT_EQ(outputs[0].new_token_ids, std::vector<int32_t>{kEos});
  EXPECT_EQ(s.kv().num_free_blocks(), s.kv().num_blocks());
}

TEST(StopConditions, IgnoreEosRunsToMaxTokens) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec(kEos);
  RequestParams p = params(4);
  p.ignore_eos = true;
  s.add_request(1, prompt_of(6), p);
  auto outputs = run_to_end(s, exec);
  ASSERT_EQ(outputs.size(), 4u);
  EXPECT_EQ(outputs.back().finish_reason, FinishReason::kLength);
}

TEST(StopConditions, MinTokensComeOutBeforeEosCanStop) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec(kEos);
  RequestParams p = params(10);
  p.min_tokens = 3;
  s.add_request(1, prompt_of(6), p);
  auto outputs = run_to_end(s, exec);
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_EQ(outputs.back().finish_reason, FinishReason::kStop);
}

TEST(StopConditions, AStopTokenIdStopsTheRequest) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec(5);
  RequestParams p = params(10);
  p.stop_token_ids = {9};
  s.add_request(1, prompt_of(6), p);
  run_step(s, exec);
  exec.set_token(9);
  auto outputs = run_to_end(s, exec);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].finish_reason, FinishReason::kStop);
  EXPECT_EQ(outputs[0].stop_token_id, 9);
  EXPECT_EQ(outputs[0].usage.completion_tokens, 2);
}

TEST(StopConditions, GenerationTokensAreCounted) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec(5);
  s.add_request(1, prompt_of(6, 1000), params(3));
  s.add_request(2, prompt_of(9, 2000), params(2));
  run_to_end(s, exec);
  SchedulerStats st = s.stats();
  EXPECT_EQ(st.generation_tokens, 5);
  EXPECT_EQ(st.prompt_tokens, 15);
  EXPECT_EQ(st.prefill_tokens, 15);
  EXPECT_EQ(st.num_running, 0);
  EXPECT_EQ(st.num_waiting, 0);
}

}  // namespace
}  // namespace paceline
