// `paceline profile`'s measurement on the CPU executor (tiny model, dummy weights), and how
// `--profile` resolves: a named GPU, a roofline file, a measured file for the right model only.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "exec/cpu/cpu_executor.h"
#include "model/config.h"
#include "model/weights.h"
#include "sim/profiler.h"
#include "sim/sim_profile.h"

namespace paceline::sim {
namespace {

ProfileGrid small_grid() {
  ProfileGrid g;
  g.prefill_tokens = {8, 32};
  g.prefill_prefix = {0, 64};
  g.prefill_batch = {1, 2};
  g.decode_batch = {1, 4};
  g.decode_context = {16, 128};
  g.mixed_decode_batch = {2};
  g.mixed_prefill_tokens = {16};
  g.mixed_context = 32;
  g.repeats = 1;
  return g;
}

TEST(ProfilerPlan, LaysBlockTablesOutOneAfterAnother) {
  std::vector<int32_t> block_ids;
  const StepPlan plan =
      profile_plan(ForwardKind::kPrefill, {{20, 12, 1}, {0, 5, 0}}, 16, block_ids);
  ASSERT_EQ(plan.seqs.size(), 2u);
  const ScheduledSeq& a = plan.seqs[0];
  EXPECT_EQ(a.start_pos, 20);
  EXPECT_EQ(a.tokens.size(), 12u);
  EXPECT_EQ(std::vector<int32_t>(a.block_table.begin(), a.block_table.end()),
            (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(std::vector<int32_t>(plan.seqs[1].block_table.begin(), plan.seqs[1].block_table.end()),
            (std::vector<int32_t>{2}));
  EXPECT_EQ(plan.seqs[1].num_logits, 0);
}

TEST(Profiler, MeasuresEveryGridPointThatFitsOnTheCpuExecutor) {
  const ModelConfig config = model_config_load("tiny");
  const auto weights = make_dummy_weights(config, 0);
  CpuExecutor executor(config, *weights, KvCacheShape{24, 16}, 1);  // 384 positions
  int seen = 0;
  const std::vector<ProfilePoint> points =
      measure_profile(executor, small_grid(), [&](const ProfilePoint&) { ++seen; });
  EXPECT_EQ(seen, static_cast<int>(points.size()));
  int prefill = 0, decode = 0, mixed = 0;
  for (const ProfilePoint& p : points) {
    EXPECT_GT(p.time_us, 0);
    EXPECT_GE(p.tokens, p.batch);
    if (p.kind == ForwardKind::kPrefill) ++prefill;
    if (p.kind == ForwardKind::kDecode) {
      ++decode;
      EXPECT_EQ(p.attention, p.context);
      EXPECT_EQ(p.logit_rows, p.batch);
    }
    if (p.kind == ForwardKind::kMixed) ++mixed;
  }
  EXPECT_EQ(prefill, 8);
  EXPECT_EQ(decode, 3);  // 4 sequences of 128 positions need 32 blocks: skipped
  EXPECT_EQ(mixed, 1);
  ProfileTable table;
  table.model = config.name;
  table.points = points;
  EXPECT_NO_THROW(TableCostModel{table});
}

TEST(SimProfile, NamesAGpuOrAFileMeasuredOnTheSameModel) {
  const ModelConfig m = model_config_load("qwen3-8b");
  const SimProfile h200 = load_sim_profile("h200", m, 0.9);
  EXPECT_EQ(h200.type, "roofline");
  EXPECT_EQ(h200.kv_element_bytes, 2);
  EXPECT_EQ(h200.json["gpu"]["name"], "h200");

  const auto dir = std::filesystem::temp_directory_path() / "paceline_sim_profile_test";
  std::filesystem::create_directories(dir);
  const auto roofline_file = (dir / "gpu.json").string();
  std::ofstream(roofline_file) << roofline_profile_json(gpu_spec_named("h200")).dump();
  EXPECT_EQ(load_sim_profile(roofline_file, m, 0.9).kv_cache_bytes, h200.kv_cache_bytes);

  ProfileTable table;
  table.model = "qwen3-tiny";
  table.kv_cache_bytes = 1 << 20;
  table.points = {{ForwardKind::kPrefill, 1, 16, 16, 136, 1, 100.0},
                  {ForwardKind::kDecode, 1, 1, 17, 17, 1, 50.0}};
  const auto measured_file = (dir / "measured.json").string();
  std::ofstream(measured_file) << profile_table_to_json(table).dump();
  EXPECT_THROW(load_sim_profile(measured_file, m, 0.9), Error);  // measured on another model
  const SimProfile tiny = load_sim_profile(measured_file, model_config_load("tiny"), 0.9);
  EXPECT_EQ(tiny.type, "measured");
  EXPECT_EQ(tiny.kv_cache_bytes, 1 << 20);
  EXPECT_THROW(load_sim_profile("no-such-gpu", m, 0.9), Error);
  std::filesystem::remove_all(dir);
}

// --kv-cache-dtype fp8 in the simulator: a roofline profile with 1-byte KV elements has the same
// KV memory (so twice the tokens) and a long-context decode reads half the KV bytes; a measured
// profile must have been measured with that KV element size.
TEST(SimProfile, Fp8KvHalvesTheRooflinesKvBytesAndIsCheckedAgainstAMeasuredTable) {
  const ModelConfig m = model_config_load("qwen3-8b");
  const SimProfile bf16 = load_sim_profile("h200", m, 0.9);
  const SimProfile fp8 = load_sim_profile("h200", m, 0.9, 1);
  EXPECT_EQ(fp8.kv_element_bytes, 1);
  EXPECT_EQ(fp8.kv_cache_bytes, bf16.kv_cache_bytes);
  EXPECT_EQ(fp8.json["gpu"]["kv_element_bytes"], 1);
  StepWork decode;
  decode.kind = ForwardKind::kDecode;
  decode.num_seqs = 16;
  decode.tokens = 16;
  decode.logit_rows = 16;
  decode.context = decode.attention = 16 * 32768;
  const double t_bf16 = static_cast<double>(bf16.cost->step_time_ns(decode));
  const double t_fp8 = static_cast<double>(fp8.cost->step_time_ns(decode));
  // 16 x 32k tokens of bf16 KV (77 GB) dominate the weights (16 GB): fp8 saves about 38 GB.
  EXPECT_LT(t_fp8, 0.7 * t_bf16);
  EXPECT_GT(t_fp8, 0.4 * t_bf16);

  const auto dir = std::filesystem::temp_directory_path() / "paceline_sim_profile_fp8_test";
  std::filesystem::create_directories(dir);
  ProfileTable table;
  table.model = "qwen3-tiny";
  table.kv_cache_bytes = 1 << 20;
  table.kv_element_bytes = 4;
  table.points = {{ForwardKind::kPrefill, 1, 16, 16, 136, 1, 100.0},
                  {ForwardKind::kDecode, 1, 1, 17, 17, 1, 50.0}};
  const auto measured_file = (dir / "measured.json").string();
  std::ofstream(measured_file) << profile_table_to_json(table).dump();
  const ModelConfig tiny = model_config_load("tiny");
  EXPECT_EQ(load_sim_profile(measured_file, tiny, 0.9, 4).kv_element_bytes, 4);
  try {
    load_sim_profile(measured_file, tiny, 0.9, 1);
    ADD_FAILURE() << "a float32 table accepted for fp8 KV";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("measured with 4-byte KV elements"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

// configs/profiles/h200.json is what `paceline profile --roofline h200` writes: the shipped file
// and the built-in figures cannot drift apart.
TEST(SimProfile, TheShippedH200FileIsTheBuiltInRoofline) {
  std::ifstream in(PACELINE_SOURCE_DIR "/configs/profiles/h200.json");
  ASSERT_TRUE(in);
  EXPECT_EQ(nlohmann::json::parse(in), roofline_profile_json(gpu_spec_named("h200")));
}

}  // namespace
}  // namespace paceline::sim
