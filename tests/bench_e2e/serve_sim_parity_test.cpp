// One engine core, two clocks: the same trace replayed through `paceline serve --device null` (with
// `paceline bench`) and through `paceline sim` with a zero-cost profile, all three as real
// processes, gives the same per-request token counts and the same step sequence.
//
// The trace is one Mooncake session of turns that share their prefixes: each turn is sent only
// after the one before it has been answered (concurrency 1), so the real server's steps do not
// depend on when its requests happen to arrive, and both runs must plan exactly the same steps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../serve/server_process.h"
#include "bench_process.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;

// Engine flags both runs get: a small token budget, so that long prompts are chunked.
std::vector<std::string> engine_flags(const std::string& budget = "256") {
  return {"--max-num-batched-tokens", budget, "--kv-cache-memory", "64M"};
}

// Six turns of one session; a turn's hash ids continue the one before it (512 tokens each), so
// every turn after the first finds most of its prompt in the prefix cache.
void write_trace(const fs::path& path) {
  std::ofstream out(path);
  const int isl[] = {700, 1300, 1350, 2100, 2200, 3000};
  const int osl[] = {5, 12, 3, 20, 1, 9};
  for (int i = 0; i < 6; ++i) {
    nlohmann::json r = {{"session_id", "s"}, {"input_length", isl[i]}, {"output_length", osl[i]}};
    if (i == 0)
      r["timestamp"] = 0;
    else
      r["delay"] = 5;
    std::vector<int> ids;
    for (int b = 0; b * 512 < isl[i]; ++b) ids.push_back(b);
    r["hash_ids"] = ids;
    out << r.dump() << "\n";
  }
}

// A measured profile of the tiny model whose every step takes the cost model's floor, 1 ns: the
// simulator's twin of the null executor (its KV cache float32, as the null executor sizes it).
void write_zero_cost_profile(const fs::path& path) {
  nlohmann::json points = nlohmann::json::array();
  for (const char* kind : {"prefill", "decode"}) {
    points.push_back({{"kind", kind},
                      {"batch", 1},
                      {"tokens", 1},
                      {"context", 1},
                      {"attention", 1},
                      {"logit_rows", 1},
                      {"time_us", 0.001}});
  }
  const nlohmann::json profile = {{"type", "measured"},    {"device", "null"},
                                  {"model", "qwen3-tiny"}, {"kv_cache_bytes", 64 << 20},
                                  {"kv_element_bytes", 4}, {"block_size", 16},
                                  {"points", points}};
  std::ofstream(path) << profile.dump(2);
}

struct StepLogFile {
  nlohmann::json header;
  std::vector<nlohmann::json> steps;  // kind, padded batch, rows: [tokens, start_pos, logits]
};

StepLogFile read_step_log(const fs::path& path) {
  StepLogFile f;
  for (const nlohmann::json& line : read_jsonl(path)) {
    if (line.contains("header")) {
      f.header = line["header"];
      continue;
    }
    f.steps.push_back({line["kind"], line["padded_batch"], line["seqs"]});
  }
  return f;
}

// What a request's record says it got: the server's usage, as the benchmark counted it.
std::vector<nlohmann::json> token_counts(const fs::path& records) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& r : read_jsonl(records)) {
    out.push_back({r["id"], r["status"], r["isl"], r["osl"], r["cached_tokens"]});
  }
  return out;
}

class ServeSimParity : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("paceline-parity-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_trace(dir_ / "trace.jsonl");
    write_zero_cost_profile(dir_ / "zero-cost.json");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // `paceline sim` at concurrency 1 into OUT=dir_/name, its step log next to it.
  ProcessResult run_sim(const std::string& name, const std::string& budget = "256") {
    std::vector<std::string> args = {"sim",
                                     "--model",
                                     "tiny",
                                     "--profile",
                                     (dir_ / "zero-cost.json").string(),
                                     "--traces",
                                     (dir_ / "trace.jsonl").string(),
                                     "--concurrency",
                                     "1",
                                     "--duration",
                                     "0",
                                     "--out",
                                     (dir_ / name).string(),
                                     "--step-log",
                                     (dir_ / (name + ".steps.jsonl")).string()};
    const std::vector<std::string> flags = engine_flags(budget);
    args.insert(args.end(), flags.begin(), flags.end());
    return run_paceline(args, dir_ / (name + ".stdout"));
  }

  fs::path dir_;
};

TEST_F(ServeSimParity, NullServerAndZeroCostSimRunTheSameStepsForTheSameTokens) {
  const fs::path served_log = dir_ / "served.steps.jsonl";
  {
    std::vector<std::string> flags = engine_flags();
    flags.insert(flags.end(), {"--device", "null", "--step-log", served_log.string()});
    ServerProcess server(flags);
    ProcessResult bench = run_paceline(
        {"bench", "--url", "http://127.0.0.1:" + std::to_string(server.port()), "--traces",
         (dir_ / "trace.jsonl").string(), "--concurrency", "1", "--duration", "0", "--endpoint",
         "completions", "--out", (dir_ / "served").string()},
        dir_ / "bench.stdout");
    ASSERT_EQ(bench.status, 0) << bench.output << bench.errors;
    ASSERT_EQ(server.terminate(), 0);  // a clean stop flushes the step log
  }
  ProcessResult sim = run_sim("simulated");
  ASSERT_EQ(sim.status, 0) << sim.output << sim.errors;

  const std::vector<nlohmann::json> served = token_counts(dir_ / "served" / "records.jsonl");
  ASSERT_EQ(served.size(), 6u);
  for (const nlohmann::json& r : served) EXPECT_EQ(r[1], "ok") << r;
  EXPECT_EQ(token_counts(dir_ / "simulated" / "records.jsonl"), served);

  const StepLogFile a = read_step_log(served_log);
  const StepLogFile b = read_step_log(dir_ / "simulated.steps.jsonl");
  for (const char* key : {"kv_blocks", "block_size", "kv_element_bytes", "kv_dtype", "model"}) {
    EXPECT_EQ(a.header[key], b.header[key]) << key;
  }
  EXPECT_EQ(a.header["device"], "null");
  EXPECT_EQ(b.header["device"], "sim");
  // 3000 tokens at 256 a step is 12 prefill steps for the last turn alone.
  ASSERT_GT(a.steps.size(), 40u);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) ASSERT_EQ(a.steps[i], b.steps[i]) << "step " << i;

  // The comparison sees a difference in planning: another token budget, other steps.
  ProcessResult other = run_sim("other-budget", "128");
  ASSERT_EQ(other.status, 0) << other.output << other.errors;
  EXPECT_NE(read_step_log(dir_ / "other-budget.steps.jsonl").steps, a.steps);
}

}  // namespace
}  // namespace paceline::testing
