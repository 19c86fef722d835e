// The simulator's tensor parallelism (issue 18): a replica of N GPUs, each holding 1/N of every
// projection, of the lm_head and of the KV heads, priced per GPU plus its collectives. A ring
// all-reduce of S bytes costs 2 (N-1)/N S / busbw + a latency per call; a weight-bound decode at
// TP 2 takes half the GPU time of TP 1 plus the collectives; the KV memory of the replica is N GPUs'
// memory less each GPU's share of the weights; sizes that do not split the model are refused with
// the CPU executor's words, and measured profiles of another size are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <fmt/format.h>

#include "base/error.h"
#include "model/config.h"
#include "sim/profile_table.h"
#include "sim/roofline_profile.h"
#include "sim/sim_profile.h"

namespace paceline::sim {
namespace {

namespace fs = std::filesystem;

StepWork graph_decode(int64_t batch, int64_t context) {
  StepWork w;
  w.kind = ForwardKind::kDecode;
  w.num_seqs = w.tokens = w.logit_rows = batch;
  w.context = w.attention = batch * context;
  w.graph_batch = batch;
  return w;
}

// The message the call throws, or "" when it does not.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RingAllReduce, TakesTwiceNMinusOneOverNOfTheBytesOverTheBusBandwidthPlusTheLatency) {
  const double bytes = 64e6, busbw = 450e9, latency = 10e-6;
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(bytes, 2, busbw, latency), bytes / busbw + latency);
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(bytes, 4, busbw, latency),
                   1.5 * bytes / busbw + latency);
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(bytes, 8, busbw, latency),
                   1.75 * bytes / busbw + latency);
  // One GPU reduces nothing and calls nothing.
  EXPECT_EQ(ring_all_reduce_seconds(bytes, 1, busbw, latency), 0.0);
  // A decode row of Qwen3-32B (5,120 bf16 values) is all latency: 10 us + 0.02 us.
  EXPECT_NEAR(ring_all_reduce_seconds(5120 * 2, 2, busbw, latency), 10.0228e-6, 1e-9);
}

TEST(RingAllGather, TakesNMinusOneOverNOfTheGatheredBytesOverTheBusBandwidthPlusTheLatency) {
  EXPECT_DOUBLE_EQ(ring_all_gather_seconds(9e6, 2, 450e9, 10e-6), 0.5 * 9e6 / 450e9 + 10e-6);
  EXPECT_DOUBLE_EQ(ring_all_gather_seconds(9e6, 4, 450e9, 10e-6), 0.75 * 9e6 / 450e9 + 10e-6);
  EXPECT_EQ(ring_all_gather_seconds(9e6, 1, 450e9, 10e-6), 0.0);
}

TEST(TensorParallelRoofline, TheH200sNvlinkFiguresAreLabelledLeadsNotMeasurements) {
  const GpuSpec g = gpu_spec_named("h200");
  EXPECT_DOUBLE_EQ(g.allreduce_bus_bandwidth, 450e9);  // 900 GB/s both ways, halved
  EXPECT_DOUBLE_EQ(g.allreduce_latency_us, 10);
  int leads = 0;
  for (const std::string& a : g.assumptions) {
    if (a.find("LEAD, NOT MEASURED") != std::string::npos) ++leads;
  }
  EXPECT_EQ(leads, 2);
  const nlohmann::json j = gpu_spec_to_json(g);
  EXPECT_EQ(j["allreduce_bus_bandwidth"], 450e9);
  EXPECT_EQ(j["allreduce_latency_us"], 10.0);
  EXPECT_EQ(gpu_spec_to_json(gpu_spec_from_json(j, "test")), j);
}

TEST(TensorParallelRoofline, Tp2WeightBoundDecodeTakesHalfTheGpuTimePlusTheCollectives) {
  const ModelConfig m = model_config_load("qwen3-32b");
  const GpuSpec g = gpu_spec_named("h200");
  const RooflineCostModel tp1(g, m, 1), tp2(g, m, 2);
  const StepWork w = graph_decode(1, 1024);
  const auto one = tp1.parts(w), two = tp2.parts(w);
  EXPECT_EQ(one.communication_s, 0.0);
  // Batch 1 reads every weight once: memory-bound, so half the bytes take half the time (the
  // replicated norms, 0.002% of the weights, aside).
  EXPECT_NEAR(one.linear_s, static_cast<double>(weight_bytes_read(m, 2)) / g.bandwidth(), 1e-9);
  EXPECT_NEAR(two.linear_s / one.linear_s, 0.5, 1e-4);
  EXPECT_DOUBLE_EQ(two.attention_s, one.attention_s / 2);  // half the KV heads
  // The embedding's all-reduce and 64 layers x 2 of one row of 5,120 float32 values, and the
  // logits' all-gather of 151,936 float32 values: ~1.3 ms, nearly all of it the 10 us latency of
  // 130 calls.
  const double reduce = (2.0 * 1 / 2) * 5120 * 4 / 450e9 + 10e-6;
  const double gather = 0.5 * 151936 * 4 / 450e9 + 10e-6;
  EXPECT_NEAR(two.communication_s, (2 * 64 + 1) * reduce + gather, 1e-12);
  EXPECT_NEAR(two.total_s, g.step_overhead_us * 1e-6 + two.linear_s + two.attention_s +
                               two.communication_s, 1e-12);
  // The headline: TP 2's step minus the per-step overhead and the collectives is half of TP 1's.
  const double overhead = g.step_overhead_us * 1e-6;
  EXPECT_NEAR((two.total_s - overhead - two.communication_s) / (one.total_s - overhead), 0.5,
              1e-4);
  EXPECT_LT(two.total_s, one.total_s);
  EXPECT_EQ(tp2.tensor_parallel_size(), 2);
  EXPECT_NE(tp2.describe().find("tensor parallel 2"), std::string::npos) << tp2.describe();
}

TEST(TensorParallelRoofline, AComputeBoundPrefillDividesItsFlopsOverTheGpus) {
  const ModelConfig m = model_config_load("qwen3-32b");
  const GpuSpec g = gpu_spec_named("h200");
  StepWork w;
  w.kind = ForwardKind::kPrefill;
  w.num_seqs = w.logit_rows = 1;
  w.tokens = 8192;
  w.context = 8192;
  w.attention = 8192LL * 8193 / 2;
  const auto one = RooflineCostModel(g, m, 1).parts(w), four = RooflineCostModel(g, m, 4).parts(w);
  EXPECT_NEAR(four.linear_s / one.linear_s, 0.25, 1e-4);
  EXPECT_DOUBLE_EQ(four.attention_s, one.attention_s / 4);
  // 129 all-reduces of 8,192 x 5,120 float32 values (168 MB): 1.5 x 168 MB / 450 GB/s + 10 us
  // each.
  const double reduce = 1.5 * 8192.0 * 5120 * 4 / 450e9 + 10e-6;
  EXPECT_NEAR(four.communication_s, 129 * reduce + (0.75 * 151936 * 4 / 450e9 + 10e-6), 1e-12);
}

TEST(TensorParallelRoofline, EachGpuHoldsItsShareOfTheWeightsAndTheReplicaNGpusOfKv) {
  const ModelConfig m = model_config_load("qwen3-32b");
  const GpuSpec g = gpu_spec_named("h200");
  const double embedding = static_cast<double>(m.vocab_size * m.hidden_size);
  const double all = static_cast<double>(m.num_parameters());
  // TP 1: every parameter. TP 2: everything but the norms halved, the input embedding too (its
  // vocabulary rows: 1.56 GB of bf16 whole, 0.78 GB a GPU).
  EXPECT_EQ(weight_bytes_per_gpu(m, 2, 1), m.num_parameters() * 2);
  const double norms = static_cast<double>(m.num_hidden_layers * (2 * m.hidden_size + 2 * m.head_dim) +
                                           m.hidden_size);
  const double per_gpu = norms + (all - norms) / 2;
  EXPECT_NEAR(2 * embedding / 1e9, 1.556, 1e-3);
  // Tied (Qwen3-4B): the embedding's rows are the lm_head's, held once and split like it.
  const ModelConfig tied = model_config_load("qwen3-4b");
  ASSERT_TRUE(tied.tie_word_embeddings);
  const double tied_norms = static_cast<double>(
      tied.num_hidden_layers * (2 * tied.hidden_size + 2 * tied.head_dim) + tied.hidden_size);
  const double tied_all = static_cast<double>(tied.num_parameters());
  EXPECT_NEAR(static_cast<double>(weight_bytes_per_gpu(tied, 2, 2)),
              2 * (tied_norms + (tied_all - tied_norms) / 2), 4);
  EXPECT_NEAR(static_cast<double>(weight_bytes_per_gpu(m, 2, 2)), 2 * per_gpu, 4);
  const double memory = g.memory_bytes * 0.9;
  const int64_t kv1 = roofline_kv_cache_bytes(g, m, 0.9, 1);
  const int64_t kv2 = roofline_kv_cache_bytes(g, m, 0.9, 2);
  EXPECT_NEAR(static_cast<double>(kv1), memory - 2 * all, 1);
  EXPECT_NEAR(static_cast<double>(kv2), 2 * (memory - 2 * per_gpu), 4);
  // Twice the GPUs and half the weights on each: more than twice the KV blocks of TP 1.
  EXPECT_GT(kv2, 2 * kv1);
  // A model too large for one GPU fits two: a GPU of 40 GB holds no Qwen3-32B (65.5 GB).
  GpuSpec small = g;
  small.memory_bytes = 40e9;
  EXPECT_THROW(roofline_kv_cache_bytes(small, m, 1.0, 1), Error);
  EXPECT_GT(roofline_kv_cache_bytes(small, m, 1.0, 2), 0);
  // The simulated engine gets the replica's KV memory from the profile.
  const SimProfile p = load_sim_profile("h200", m, 0.9, 0, 2);
  EXPECT_EQ(p.kv_cache_bytes, kv2);
  EXPECT_EQ(p.tensor_parallel_size, 2);
  EXPECT_EQ(p.json["tensor_parallel_size"], 2);
}

TEST(TensorParallelRoofline, RefusesASizeThatDoesNotSplitTheModelWithTheCpuExecutorsWords) {
  const ModelConfig m = model_config_load("qwen3-32b");  // 64 heads, 8 KV heads
  const GpuSpec g = gpu_spec_named("h200");
  EXPECT_EQ(error_of([&] { RooflineCostModel(g, m, 3); }),
            "--tensor-parallel-size 3: num_attention_heads 64 does not split into 3 equal parts");
  EXPECT_EQ(error_of([&] { load_sim_profile("h200", m, 0.9, 0, 16); }),
            "--tensor-parallel-size 16: num_key_value_heads 8 does not split into 16 equal parts");
  EXPECT_EQ(error_of([&] { roofline_kv_cache_bytes(g, m, 0.9, 0); }),
            "--tensor-parallel-size 0: must be at least 1");
  EXPECT_NO_THROW(RooflineCostModel(g, m, 8));
}

TEST(TensorParallelRoofline, RefusesTpAboveOneWhenTheProfileHasNoAllReduceBandwidth) {
  const ModelConfig m = model_config_load("qwen3-8b");
  GpuSpec g = gpu_spec_named("h200");
  nlohmann::json j = gpu_spec_to_json(g);
  j.erase("allreduce_bus_bandwidth");  // a profile file written before the field existed
  const GpuSpec old = gpu_spec_from_json(j, "old.json");
  EXPECT_EQ(old.allreduce_bus_bandwidth, 0);
  EXPECT_NO_THROW(RooflineCostModel(old, m, 1));
  const std::string e = error_of([&] { RooflineCostModel(old, m, 2); });
  EXPECT_NE(e.find("gpu.allreduce_bus_bandwidth"), std::string::npos) << e;
}

class TensorParallelProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("paceline-tp-profile-{}-{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A measured table of `model`, at `tp` ranks (nullopt: the key left out, as in older files).
  std::string write_table(const ModelConfig& model, std::optional<int> tp) {
    ProfileTable t;
    t.device = "cpu";
    t.model = model.name;
    t.kv_cache_bytes = 1 << 24;
    for (ForwardKind kind : {ForwardKind::kPrefill, ForwardKind::kDecode}) {
      for (int64_t rows : {1, 8, 64}) {
        ProfilePoint p;
        p.kind = kind;
        p.batch = kind == ForwardKind::kDecode ? rows : 1;
        p.tokens = rows;
        p.context = p.attention = rows * 10;
        p.logit_rows = p.batch;
        p.time_us = 100.0 + static_cast<double>(rows);
        t.points.push_back(p);
      }
    }
    nlohmann::json j = profile_table_to_json(t);
    if (tp)
      j["tensor_parallel_size"] = *tp;
    else
      j.erase("tensor_parallel_size");
    const std::string path = (dir_ / "table.json").string();
    std::ofstream(path) << j.dump();
    return path;
  }
  fs::path dir_;
};

TEST_F(TensorParallelProfile, AMeasuredTableIsUsedOnlyAtTheSizeItWasMeasuredAt) {
  const ModelConfig m = model_config_load("tiny");  // 4 heads, 2 KV heads
  // Every table measured so far says nothing: it is one unsplit replica.
  const std::string old = write_table(m, std::nullopt);
  EXPECT_EQ(load_sim_profile(old, m, 0.9, 0, 1).tensor_parallel_size, 1);
  const std::string e = error_of([&] { load_sim_profile(old, m, 0.9, 0, 2); });
  EXPECT_NE(e.find("measured at --tensor-parallel-size 1, but the simulation asks for "
                   "--tensor-parallel-size 2"),
            std::string::npos)
      << e;
  // A table that records its size serves a simulation of that size, with its KV memory as is.
  const std::string two = write_table(m, 2);
  const SimProfile p = load_sim_profile(two, m, 0.9, 0, 2);
  EXPECT_EQ(p.tensor_parallel_size, 2);
  EXPECT_EQ(p.kv_cache_bytes, 1 << 24);
  EXPECT_THROW(load_sim_profile(two, m, 0.9, 0, 1), Error);
  // The size round-trips through the file.
  EXPECT_EQ(profile_table_from_json(profile_table_to_json(ProfileTable{}), "t").tensor_parallel_size,
            1);
}

}  // namespace
}  // namespace paceline::sim
