// The step log: one header line, then one line per executed step with the plan's shape and the
// engine's times, written by the engine thread of a running engine.
#include "engine/step_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/engine.h"

namespace paceline {
namespace {

// Sleeps `delay` per step and samples token 7 for every row.
class SleepyExecutor : public Executor {
 public:
  explicit SleepyExecutor(std::chrono::microseconds delay) : delay_(delay) {}
  StepResult execute(const StepPlan& plan) override {
    std::this_thread::sleep_for(delay_);
    StepResult r;
    r.step_id = plan.step_id;
    for (const auto& s : plan.seqs) {
      SeqResult sr;
      sr.request_id = s.request_id;
      sr.tokens.assign(static_cast<size_t>(s.num_logits), 7);
      r.seqs.push_back(std::move(sr));
    }
    return r;
  }
  ExecutorCapabilities capabilities() const override {
    ExecutorCapabilities x;
    x.kv = {64, 16};
    x.kv_dtype = "float32";
    x.kv_element_bytes = 4;
    return x;
  }

 private:
  std::chrono::microseconds delay_;
};

TEST(StepLog, ALineNamesTheKindTimesAndEverySequence) {
  StepPlan plan;
  plan.step_id = 12;
  plan.kind = ForwardKind::kMixed;
  plan.padded_batch_size = 4;
  ScheduledSeq a, b;
  a.tokens.assign(100, 1);
  a.start_pos = 50;
  a.num_logits = 1;
  b.tokens.assign(1, 1);
  b.start_pos = 300;
  b.num_logits = 1;
  plan.seqs = {a, b};
  const auto j = nlohmann::json::parse(step_log_line(plan, {5'000'000, 1'234'500, 67'800}));
  EXPECT_EQ(j["step"], 12);
  EXPECT_EQ(j["kind"], "mixed");
  EXPECT_EQ(j["t_us"], 5000);
  EXPECT_DOUBLE_EQ(j["execute_us"].get<double>(), 1234.5);
  EXPECT_DOUBLE_EQ(j["host_us"].get<double>(), 67.8);
  EXPECT_EQ(j["padded_batch"], 4);
  EXPECT_EQ(j["seqs"], nlohmann::json::parse("[[100, 50, 1], [1, 300, 1]]"));
}

TEST(StepLog, AStepThatCopiedHostTierBlocksSaysHowMany) {
  StepPlan plan;
  ScheduledSeq a;
  a.tokens.assign(3, 1);
  plan.seqs = {a};
  const auto plain = nlohmann::json::parse(step_log_line(plan, {0, 1000, 0}));
  EXPECT_FALSE(plain.contains("kv_stores"));
  EXPECT_FALSE(plain.contains("kv_loads"));
  plan.kv_transfers.stores = {{1, 2}, {3, 4}};
  plan.kv_transfers.loads = {{5, 6}, {7, 8}, {9, 10}};
  const auto j = nlohmann::json::parse(step_log_line(plan, {0, 1000, 0}));
  EXPECT_EQ(j["kv_stores"], 2);
  EXPECT_EQ(j["kv_loads"], 3);
  EXPECT_EQ(j["seqs"], nlohmann::json::parse("[[3, 0, 1]]"));
}

TEST(StepLog, AnUnwritablePathIsAnErrorThatNamesIt) {
  try {
    StepLog log("/nonexistent-dir/steps.jsonl");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/steps.jsonl"), std::string::npos);
  }
}

TEST(StepLog, TheEngineLogsEveryStepItRuns) {
  const auto path =
      (std::filesystem::temp_directory_path() /
       ("paceline-step-log-test-" + std::to_string(::getpid()) + ".jsonl"))
          .string();
  {
    SteadyClock clock;
    SchedulerConfig cfg;
    cfg.max_model_len = 256;
    Engine engine(cfg, std::make_unique<SleepyExecutor>(std::chrono::microseconds(2000)), clock);
    engine.set_step_log(std::make_unique<StepLog>(path), "test", "tiny");
    engine.start();
    std::promise<void> done;
    RequestParams p;
    p.max_tokens = 4;
    p.ignore_eos = true;
    engine.submit(std::vector<int32_t>(20, 3), p, [&](const TokenEvent& ev) {
      if (ev.finished) done.set_value();
    });
    ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
    engine.stop();
  }
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  std::filesystem::remove(path);
  // The header, one prefill of the 20-token prompt (its first token), three decodes.
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0]["header"]["device"], "test");
  EXPECT_EQ(lines[1]["kind"], "prefill");
  EXPECT_EQ(lines[1]["seqs"], nlohmann::json::parse("[[20, 0, 1]]"));
  for (size_t i = 2; i < 5; ++i) {
    EXPECT_EQ(lines[i]["kind"], "decode");
    EXPECT_EQ(lines[i]["seqs"][0][1], 18 + static_cast<int>(i)) << "start_pos of decode " << i;
  }
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_GE(lines[i]["execute_us"].get<double>(), 2000.0) << "the executor sleeps 2 ms";
    EXPECT_GE(lines[i]["host_us"].get<double>(), 0.0);
    EXPECT_LT(lines[i]["host_us"].get<double>(), lines[i]["execute_us"].get<double>() * 100);
  }
}

}  // namespace
}  // namespace paceline
