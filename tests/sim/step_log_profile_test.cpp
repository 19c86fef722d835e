// A profile fitted to a server's step log: each step becomes a point with the plan's features and
// the engine's whole iteration time; the fit recovers the costs the steps were made with, a few
// steps the OS delayed tenfold do not move it, CUDA logs price graph padding, and malformed logs are
// errors that name the file and line.
#include "sim/step_log_profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include <fmt/format.h>

#include "base/error.h"
#include "engine/step_log.h"
#include "model/config.h"

namespace paceline::sim {
namespace {

namespace fs = std::filesystem;

ModelConfig tiny() { return model_config_load("tiny"); }

// A made-up server: decode costs 900 us + 40 us per row + 0.002 us per KV position, prefill 2 ms
// + 9 us per token; the loop adds 150 us around each.
double made_up_us(const StepPlan& plan) {
  const StepWork w = step_work(plan);
  const double rows = static_cast<double>(w.tokens);
  const double forward = plan.kind == ForwardKind::kDecode
                             ? 900 + 40 * rows + 0.002 * static_cast<double>(w.context)
                             : 2000 + 9 * rows;
  return forward;
}

std::string header(const std::string& device, const std::string& model) {
  return fmt::format(R"({{"header": {{"device": "{}", "model": "{}", "kv_blocks": 100, )"
                     R"("block_size": 16, "kv_element_bytes": {}}}}})",
                     device, model, device == "cuda" ? 2 : 4) + "\n";
}

StepPlan plan_of(ForwardKind kind, int64_t batch, int64_t tokens_each, int64_t start,
                 int32_t padded = 0) {
  StepPlan plan;
  plan.kind = kind;
  plan.padded_batch_size = padded;
  for (int64_t i = 0; i < batch; ++i) {
    ScheduledSeq s;
    s.tokens.assign(static_cast<size_t>(tokens_each), 1);
    s.start_pos = start + 100 * i;
    s.num_logits = 1;
    plan.seqs.push_back(std::move(s));
  }
  return plan;
}

class StepLogProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per test and process: ctest runs the tests of this suite in parallel.
    dir_ = fs::temp_directory_path() /
           fmt::format("paceline-step-log-profile-{}-{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // A log of steps priced by made_up_us (host time split off as 150 us), with `delayed` steps
  // that took 10x as long.
  std::string made_up_log(const std::string& device, int delayed, double jitter = 0,
                          int steps = 400) {
    std::string text = header(device, tiny().name);
    std::mt19937 rng(5);
    for (int i = 0; i < steps; ++i) {
      const bool decode = i % 4 != 0;
      const int64_t batch = decode ? 1 + static_cast<int64_t>(rng() % 16) : 1;
      const int64_t tokens = decode ? 1 : 16 + static_cast<int64_t>(rng() % 1000);
      const int64_t start = static_cast<int64_t>(rng() % 3000);
      const StepPlan plan = plan_of(decode ? ForwardKind::kDecode : ForwardKind::kPrefill, batch,
                                    tokens, start);
      double us = made_up_us(plan);
      if (i < delayed * 9 && i % 9 == 1) us *= 10;
      us *= (i / 4) % 2 == 0 ? 1 - jitter : 1 + jitter;  // both kinds alternate
      const StepTiming t{int64_t{i} * 10'000'000, std::llround((us - 150) * 1000), 150'000};
      text += step_log_line(plan, t);
    }
    return write(device + ".jsonl", text);
  }
  fs::path dir_;
};

TEST_F(StepLogProfile, EachStepIsAPointTimedAsTheWholeIteration) {
  const std::string path = write("one.jsonl", header("cpu", tiny().name) +
                                                  step_log_line(plan_of(ForwardKind::kDecode, 2, 1, 40),
                                                                {0, 1'000'000, 250'000}));
  const ProfileTable t = profile_from_step_logs({path}, tiny());
  ASSERT_EQ(t.points.size(), 1u);
  const ProfilePoint& p = t.points[0];
  EXPECT_EQ(p.kind, ForwardKind::kDecode);
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.tokens, 2);
  EXPECT_EQ(p.context, 41 + 141);
  EXPECT_EQ(p.logit_rows, 2);
  EXPECT_DOUBLE_EQ(p.time_us, 1250.0);
  EXPECT_EQ(t.device, "cpu");
  EXPECT_EQ(t.model, tiny().name);
  EXPECT_EQ(t.block_size, 16);
  EXPECT_EQ(t.kv_cache_bytes, 100 * 16 * tiny().kv_bytes_per_token(4));
  EXPECT_FALSE(t.graph_padding);
  EXPECT_TRUE(t.time_ordered);  // the steps as the server ran them: their variation can be replayed
}

TEST_F(StepLogProfile, SeveralLogsAreLaidEndToEndOnOneClock) {
  // Each log's clock starts where its server started; in one table the first step is at 0 and
  // each further log begins where the one before ended, so that the record can be replayed in
  // time (step_noise.h).
  const StepPlan d = plan_of(ForwardKind::kDecode, 1, 1, 10);
  const std::string a = write("a.jsonl", header("cpu", tiny().name) +
                                             step_log_line(d, {5'000'000, 1'000'000, 0}) +
                                             step_log_line(d, {9'000'000, 2'000'000, 0}));
  const std::string b = write("b.jsonl", header("cpu", tiny().name) +
                                             step_log_line(d, {1'000'000, 1'000'000, 0}) +
                                             step_log_line(d, {4'000'000, 1'000'000, 0}));
  const ProfileTable t = profile_from_step_logs({a, b}, tiny());
  ASSERT_EQ(t.points.size(), 4u);
  EXPECT_DOUBLE_EQ(t.points[0].t_us, 0);
  EXPECT_DOUBLE_EQ(t.points[1].t_us, 4'000);
  EXPECT_DOUBLE_EQ(t.points[2].t_us, 6'000);  // a's last step ended 4 + 2 ms after its first
  EXPECT_DOUBLE_EQ(t.points[3].t_us, 9'000);
  // A log whose clock runs backwards is not a record in time.
  const std::string back = write("back.jsonl", header("cpu", tiny().name) +
                                                   step_log_line(d, {9'000'000, 1'000'000, 0}) +
                                                   step_log_line(d, {5'000'000, 1'000'000, 0}));
  try {
    profile_from_step_logs({back}, tiny());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("back.jsonl:3: t_us goes back in time"), std::string::npos)
        << e.what();
  }
}

TEST_F(StepLogProfile, TheFitRecoversTheCostsAndIgnoresDelayedSteps) {
  for (int delayed : {0, 5}) {
    const ProfileTable table = profile_from_step_logs({made_up_log("cpu", delayed)}, tiny());
    const TableCostModel model(table);
    for (auto [kind, batch, tokens, start] :
         {std::tuple{ForwardKind::kDecode, 1, 1, 100}, {ForwardKind::kDecode, 8, 1, 2000},
          {ForwardKind::kDecode, 16, 1, 500}, {ForwardKind::kPrefill, 1, 64, 0},
          {ForwardKind::kPrefill, 1, 900, 1000}}) {
      const StepPlan plan = plan_of(kind, batch, tokens, start);
      const double predicted = static_cast<double>(model.step_time_ns(step_work(plan))) / 1000;
      EXPECT_NEAR(predicted / made_up_us(plan), 1.0, 0.03)
          << delayed << " delayed steps; " << forward_kind_name(kind) << " batch " << batch
          << " tokens " << tokens;
    }
  }
}

TEST_F(StepLogProfile, NoisyStepsAreFittedAtTheirMeanTime) {
  // Every other step 30% faster or slower: the simulator must predict the mean, or a long run of
  // steps would finish early (a fit of relative error to the measurements predicts ~8% low).
  const ProfileTable table = profile_from_step_logs({made_up_log("cpu", 0, 0.3, 4000)}, tiny());
  const TableCostModel model(table);
  for (auto [kind, batch, tokens, tolerance] :
       {std::tuple{ForwardKind::kDecode, 4, 1, 0.03}, {ForwardKind::kDecode, 12, 1, 0.03},
        {ForwardKind::kPrefill, 1, 500, 0.05}}) {  // 1,000 prefills: a standard error of ~3%
    const StepPlan plan = plan_of(kind, batch, tokens, 1000);
    const double predicted = static_cast<double>(model.step_time_ns(step_work(plan))) / 1000;
    EXPECT_NEAR(predicted / made_up_us(plan), 1.0, tolerance)
        << forward_kind_name(kind) << " batch " << batch;
  }
}

TEST_F(StepLogProfile, CudaLogsCountGraphPaddingRows) {
  const std::string path =
      write("cuda.jsonl", header("cuda", tiny().name) +
                              step_log_line(plan_of(ForwardKind::kDecode, 3, 1, 10, 4),
                                            {0, 1'000'000, 0}));
  const ProfileTable t = profile_from_step_logs({path}, tiny());
  EXPECT_TRUE(t.graph_padding);
  EXPECT_EQ(t.kv_element_bytes, 2);
  ASSERT_EQ(t.points.size(), 1u);
  EXPECT_EQ(t.points[0].padding_rows, 1);
  // The same step on the CPU has no graphs: its padded batch size means nothing there.
  const std::string cpu = write("cpu.jsonl", header("cpu", tiny().name) +
                                                 step_log_line(plan_of(ForwardKind::kDecode, 3, 1, 10, 4),
                                                               {0, 1'000'000, 0}));
  EXPECT_EQ(profile_from_step_logs({cpu}, tiny()).points[0].padding_rows, 0);
}

TEST_F(StepLogProfile, HostTierCopiesAreTakenOutOfTheStepsThatMadeThem) {
  // tiny's block: 16 tokens x kv_bytes_per_token(4) bytes; at 1 GB/s, 10 blocks take
  // 10 x block / 1e9 s.
  const double block = 16.0 * static_cast<double>(tiny().kv_bytes_per_token(4));
  const double ten_blocks_us = 10 * block / 1e9 * 1e6;
  StepPlan copying = plan_of(ForwardKind::kPrefill, 1, 100, 0);
  copying.kv_transfers.stores.assign(4, {0, 0});
  copying.kv_transfers.loads.assign(10, {0, 0});  // the longer direction counts
  StepPlan swamped = plan_of(ForwardKind::kPrefill, 1, 100, 0);
  swamped.kv_transfers.loads.assign(1000, {0, 0});  // more copy time than the step took
  const auto step_ns = std::llround((ten_blocks_us + 500) * 1000);
  const std::string path =
      write("tier.jsonl", header("cpu", tiny().name) +
                              step_log_line(plan_of(ForwardKind::kPrefill, 1, 100, 0), {0, step_ns, 0}) +
                              step_log_line(copying, {10'000'000, step_ns, 0}) +
                              step_log_line(swamped, {20'000'000, step_ns, 0}));
  const ProfileTable t = profile_from_step_logs({path}, tiny(), 1e9);
  ASSERT_EQ(t.points.size(), 2u);  // the swamped step is dropped
  EXPECT_NEAR(t.points[0].time_us, ten_blocks_us + 500, 0.06);  // the log keeps 0.1 us
  EXPECT_NEAR(t.points[1].time_us, 500, 0.06);
  bool noted = false;
  for (const std::string& n : t.notes) noted |= n.find("2 steps copied host-tier KV blocks") != std::string::npos &&
                                              n.find("1 steps left with no time were dropped") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_THROW(profile_from_step_logs({path}, tiny(), 0), Error);
}

TEST_F(StepLogProfile, TheTableKeepsTheTensorParallelSizeTheServerRanAt) {
  // The header names the ranks the executor split the model into; a log written before it did
  // is one unsplit replica. `sim -tp N` takes the table only at its size (sim_profile.h).
  const std::string step = step_log_line(plan_of(ForwardKind::kDecode, 1, 1, 10), {0, 1'000'000, 0});
  nlohmann::json h = nlohmann::json::parse(header("cpu", tiny().name));
  EXPECT_EQ(profile_from_step_logs({write("old.jsonl", h.dump() + "\n" + step)}, tiny())
                .tensor_parallel_size,
            1);
  h["header"]["tensor_parallel_size"] = 2;
  const std::string two = write("two.jsonl", h.dump() + "\n" + step);
  const ProfileTable t = profile_from_step_logs({two}, tiny());
  EXPECT_EQ(t.tensor_parallel_size, 2);
  EXPECT_EQ(profile_table_from_json(profile_table_to_json(t), "t").tensor_parallel_size, 2);
  // Logs of two sizes are two setups, not one profile.
  const std::string one = write("one.jsonl", header("cpu", tiny().name) + step);
  try {
    profile_from_step_logs({one, two}, tiny());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-parallel size"), std::string::npos) << e.what();
  }
  // What a server writes: the executor's ranks in the header.
  ExecutorCapabilities x;
  x.tensor_parallel_size = 4;
  EXPECT_EQ(nlohmann::json::parse(step_log_header("cpu", "tiny", x))["tensor_parallel_size"], 4);
}

TEST_F(StepLogProfile, MalformedLogsNameTheFileAndLine) {
  const std::string ok_step =
      step_log_line(plan_of(ForwardKind::kDecode, 1, 1, 10), {0, 1'000'000, 0});
  struct Case {
    std::string text, expected;
  } cases[] = {
      {ok_step, "bad0.jsonl:1: a step before the header line"},
      {header("cpu", tiny().name) + "{\"step\": 1\n", "bad1.jsonl:2: not JSON"},
      {header("cpu", tiny().name) + R"({"step": 1, "kind": "sideways", "t_us": 0, "execute_us": 1, "host_us": 0, "padded_batch": 0, "seqs": [[1, 0, 1]]})" "\n",
       "bad2.jsonl:2: unknown kind 'sideways'"},
      {header("cpu", tiny().name) + R"({"step": 1, "kind": "decode", "t_us": 0, "execute_us": 0, "host_us": 0, "padded_batch": 0, "seqs": [[1, 0, 1]]})" "\n",
       "bad3.jsonl:2: execute_us must be positive"},
      {header("cpu", "qwen3-8b") + ok_step, "bad4.jsonl:1: logged with model 'qwen3-8b'"},
      {"", "bad5.jsonl: no header line"},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const std::string path = write(fmt::format("bad{}.jsonl", i), cases[i].text);
    try {
      profile_from_step_logs({path}, tiny());
      ADD_FAILURE() << "no error for case " << i;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(cases[i].expected), std::string::npos)
          << "case " << i << ": " << e.what();
    }
  }
  EXPECT_THROW(profile_from_step_logs({(dir_ / "missing.jsonl").string()}, tiny()), Error);
}

}  // namespace
}  // namespace paceline::sim
