// The CUDA executor against the CPU executor and Hugging Face Transformers: logits within 1e-2
// relative error (bf16 weights and KV cache against float32 references) for the tiny Qwen3,
// Llama and Qwen3-YaRN fixtures and a Qwen3-1.7B-shaped dummy model, through one ragged prefill, chunked
// prefills over shuffled blocks, decode and speculative-verify steps, eager and replayed from
// CUDA graphs; and greedy continuations identical to HF's for 32 tokens.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../cpu_forward/test_model.h"
#include "cuda_test_util.h"
#include "exec/cpu/cpu_executor.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "sched/cudagraph_sizes.h"

#if PACELINE_HAVE_CUDA
namespace paceline {
namespace {

namespace fs = std::filesystem;
using testing::BlockPool;
using testing::make_seq;

constexpr int64_t kBlockSize = 16;

struct Prompt {
  std::string name;
  std::vector<int32_t> tokens;
  std::vector<int64_t> logit_positions;
};

CudaExecutorOptions small_options(int64_t kv_bytes, std::vector<int32_t> graph_sizes = {}) {
  CudaExecutorOptions o;
  o.block_size = kBlockSize;
  o.kv_cache_bytes = kv_bytes;
  o.max_num_batched_tokens = 4096;
  o.cudagraph_sizes = std::move(graph_sizes);
  return o;
}

class CudaParity : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    PACELINE_REQUIRE_GPU();
    folder_ = fs::path(testing::source_dir()) / "tests/fixtures/models" / GetParam();
    ASSERT_TRUE(fs::exists(folder_ / "reference.json")) << "no fixture at " << folder_;
    config_ = model_config_load(folder_.string());
    weights_ = load_safetensors_weights(folder_.string(), config_);
    reference_ = std::make_unique<SafetensorsFile>((folder_ / "reference.safetensors").string());
    std::ifstream in(folder_ / "reference.json");
    nlohmann::json root = nlohmann::json::parse(in);
    for (const auto& p : root.at("prompts")) {
      prompts_.push_back({p.at("name").get<std::string>(),
                          p.at("token_ids").get<std::vector<int32_t>>(),
                          p.at("logit_positions").get<std::vector<int64_t>>()});
    }
    for (const auto& g : root.at("greedy")) {
      greedy_[g.at("prompt").get<std::string>()] = g.at("new_tokens").get<std::vector<int32_t>>();
    }
    int64_t positions = 0;
    for (const Prompt& p : prompts_) positions += static_cast<int64_t>(p.tokens.size()) + 64;
    cache_ = KvCacheShape{positions / kBlockSize + static_cast<int64_t>(prompts_.size()), kBlockSize};
  }

  int64_t kv_bytes() const { return cache_.num_blocks * kBlockSize * config_.kv_bytes_per_token(2); }

  // HF's logits of prompt p at its logit positions, rows [from, to) of them.
  std::vector<float> hf_rows(const Prompt& p, int64_t first_position) const {
    const TensorView* t = reference_->find("logits." + p.name);
    EXPECT_NE(t, nullptr);
    std::vector<float> all(static_cast<size_t>(t->numel()));
    t->to_f32(all.data());
    // Our rows start at first_position; keep HF's rows for the positions we computed, in order.
    std::vector<float> out;
    for (size_t i = 0; i < p.logit_positions.size(); ++i) {
      if (p.logit_positions[i] < first_position) continue;
      out.insert(out.end(), all.begin() + static_cast<std::ptrdiff_t>(i * config_.vocab_size),
                 all.begin() + static_cast<std::ptrdiff_t>((i + 1) * config_.vocab_size));
    }
    return out;
  }
  // Our rows for HF's logit positions, from rows that cover [first_position, ...).
  std::vector<float> pick_rows(const Prompt& p, const std::vector<float>& ours,
                               int64_t first_position) const {
    std::vector<float> out;
    for (int64_t pos : p.logit_positions) {
      if (pos < first_position) continue;
      auto at = static_cast<std::ptrdiff_t>((pos - first_position) * config_.vocab_size);
      out.insert(out.end(), ours.begin() + at, ours.begin() + at + config_.vocab_size);
    }
    return out;
  }

  fs::path folder_;
  ModelConfig config_;
  std::unique_ptr<Weights> weights_;
  std::unique_ptr<SafetensorsFile> reference_;
  std::vector<Prompt> prompts_;
  std::map<std::string, std::vector<int32_t>> greedy_;
  KvCacheShape cache_;
};

TEST_P(CudaParity, RaggedPrefillMatchesHfAndCpu) {
  CudaExecutor gpu(config_, *weights_, small_options(kv_bytes()));
  CpuExecutor cpu(config_, *weights_, gpu.kv_cache_shape(), 2);
  BlockPool pool(gpu.kv_cache_shape().num_blocks);
  StepPlan plan;
  std::vector<int64_t> firsts;
  for (size_t i = 0; i < prompts_.size(); ++i) {
    const Prompt& p = prompts_[i];
    auto n = static_cast<int64_t>(p.tokens.size());
    int64_t first = *std::min_element(p.logit_positions.begin(), p.logit_positions.end());
    std::vector<int32_t> table;
    pool.cover(table, n, kBlockSize);
    plan.seqs.push_back(make_seq(i, p.tokens, 0, table, static_cast<int32_t>(n - first)));
    firsts.push_back(first);
  }
  gpu.execute(plan);
  std::vector<float> ours = gpu.last_logits();
  std::vector<float> cpu_logits = cpu.model().forward(plan);
  const int64_t vocab = config_.vocab_size;
  double worst_cpu = testing::worst_relative_error(ours, cpu_logits, vocab);
  int64_t row = 0;
  double worst_hf = 0.0;
  for (size_t i = 0; i < prompts_.size(); ++i) {
    const int64_t rows = plan.seqs[i].num_logits;
    std::vector<float> mine = testing::logit_rows(ours, vocab, row, rows);
    double e = testing::worst_relative_error(pick_rows(prompts_[i], mine, firsts[i]),
                                             hf_rows(prompts_[i], firsts[i]), vocab);
    worst_hf = std::max(worst_hf, e);
    EXPECT_LE(e, testing::kBf16Tolerance) << prompts_[i].name;
    row += rows;
  }
  std::cout << "[ parity ] " << GetParam() << " ragged prefill: relative error vs HF " << worst_hf
            << ", vs CPU " << worst_cpu << "\n";
  EXPECT_LE(worst_cpu, testing::kBf16Tolerance);
}

TEST_P(CudaParity, ChunkedPrefillThroughShuffledBlocksMatchesHf) {
  // Chunks of 13 cross block boundaries; the last chunk of a prompt is often short enough for
  // the decode kernel, so both attention kernels meet a cached prefix.
  constexpr int64_t kChunk = 13;
  CudaExecutor gpu(config_, *weights_, small_options(kv_bytes()));
  BlockPool pool(gpu.kv_cache_shape().num_blocks, 2024);
  std::vector<std::vector<int32_t>> tables(prompts_.size());
  std::vector<std::vector<float>> all(prompts_.size());
  for (int64_t begin = 0;; begin += kChunk) {
    StepPlan plan;
    std::vector<size_t> which;
    for (size_t i = 0; i < prompts_.size(); ++i) {
      auto n = static_cast<int64_t>(prompts_[i].tokens.size());
      if (begin >= n) continue;
      int64_t end = std::min(n, begin + kChunk);
      pool.cover(tables[i], end, kBlockSize);
      std::vector<int32_t> chunk(prompts_[i].tokens.begin() + begin, prompts_[i].tokens.begin() + end);
      plan.seqs.push_back(make_seq(i, chunk, begin, tables[i], static_cast<int32_t>(end - begin)));
      which.push_back(i);
    }
    if (plan.seqs.empty()) break;
    gpu.execute(plan);
    std::vector<float> logits = gpu.last_logits();
    size_t offset = 0;
    for (size_t s = 0; s < which.size(); ++s) {
      size_t count = plan.seqs[s].tokens.size() * static_cast<size_t>(config_.vocab_size);
      all[which[s]].insert(all[which[s]].end(), logits.begin() + static_cast<std::ptrdiff_t>(offset),
                           logits.begin() + static_cast<std::ptrdiff_t>(offset + count));
      offset += count;
    }
  }
  for (size_t i = 0; i < prompts_.size(); ++i) {
    double e = testing::worst_relative_error(pick_rows(prompts_[i], all[i], 0),
                                             hf_rows(prompts_[i], 0), config_.vocab_size);
    EXPECT_LE(e, testing::kBf16Tolerance) << prompts_[i].name;
  }
}

// Greedy continuations of every prompt, decoded together, eagerly or through graphs.
void expect_greedy_matches(CudaParity& t, const ModelConfig& config, const Weights& weights,
                           const std::vector<Prompt>& prompts,
                           const std::map<std::string, std::vector<int32_t>>& greedy,
                           int64_t kv_bytes, bool graphs) {
  std::vector<int32_t> sizes = graphs ? default_cudagraph_capture_sizes(16) : std::vector<int32_t>{};
  CudaExecutor gpu(config, weights, small_options(kv_bytes, sizes));
  BlockPool pool(gpu.kv_cache_shape().num_blocks, 7);
  StepPlan plan;
  std::vector<std::vector<int32_t>> tables;
  std::vector<const std::vector<int32_t>*> expected;
  tables.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto it = greedy.find(prompts[i].name);
    if (it == greedy.end()) continue;
    std::vector<int32_t>& table = tables.emplace_back();
    pool.cover(table, static_cast<int64_t>(prompts[i].tokens.size()), kBlockSize);
    plan.seqs.push_back(make_seq(i, prompts[i].tokens, 0, table, 1));
    plan.seqs.back().sampling.temperature = 0.0;
    expected.push_back(&it->second);
  }
  ASSERT_FALSE(plan.seqs.empty());
  std::vector<std::vector<int32_t>> generated(plan.seqs.size());
  int graph_steps = 0;
  for (size_t step = 0; step < expected[0]->size(); ++step) {
    StepResult r = gpu.execute(plan);
    graph_steps += gpu.last_step_used_graph() ? 1 : 0;
    for (size_t s = 0; s < plan.seqs.size(); ++s) {
      int32_t token = r.seqs[s].tokens.at(0);
      generated[s].push_back(token);
      ScheduledSeq& seq = plan.seqs[s];
      seq.start_pos += static_cast<int64_t>(seq.tokens.size());
      seq.tokens = {token};
      pool.cover(tables[s], seq.start_pos + 1, kBlockSize);
      seq.block_table = tables[s];
    }
    plan.kind = ForwardKind::kDecode;
    plan.padded_batch_size = graphs ? padded_batch_size(sizes, static_cast<int32_t>(plan.seqs.size())) : 0;
  }
  EXPECT_EQ(graph_steps, graphs ? static_cast<int>(expected[0]->size()) - 1 : 0);
  for (size_t s = 0; s < plan.seqs.size(); ++s) {
    EXPECT_EQ(generated[s], *expected[s]) << prompts[plan.seqs[s].request_id].name;
  }
  (void)t;
}

TEST_P(CudaParity, GreedyContinuationsMatchHfEager) {
  expect_greedy_matches(*this, config_, *weights_, prompts_, greedy_, kv_bytes(), false);
}

TEST_P(CudaParity, GreedyContinuationsMatchHfWithGraphs) {
  expect_greedy_matches(*this, config_, *weights_, prompts_, greedy_, kv_bytes(), true);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaParity,
                         ::testing::Values("qwen3-tiny-random", "llama-tiny-random",
                                           "qwen3-yarn-tiny-random"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A Qwen3-1.7B-shaped model with dummy weights: prefill, decode, and a speculative verify step
// (4 tokens, 4 logits per sequence) against the CPU executor on the same weights.
TEST(CudaParityDummy, Qwen3_1_7bPrefillDecodeVerifyMatchCpu) {
  PACELINE_REQUIRE_GPU();
  ModelConfig config = model_config_load("qwen3-1.7b");
  std::unique_ptr<Weights> weights = make_dummy_weights(config, 0);
  CudaExecutor gpu(config, *weights, small_options(int64_t{1} << 30, {1, 2, 4}));
  CpuExecutor cpu(config, *weights, gpu.kv_cache_shape(), 16);
  BlockPool pool(gpu.kv_cache_shape().num_blocks, 11);
  const int64_t vocab = config.vocab_size;
  std::vector<std::vector<int32_t>> tables(3);
  StepPlan plan;
  const int64_t lengths[3] = {5, 70, 300};
  for (int i = 0; i < 3; ++i) {
    pool.cover(tables[i], lengths[i], kBlockSize);
    plan.seqs.push_back(make_seq(i, testing::random_tokens(lengths[i], vocab, 100 + i), 0, tables[i], 2));
  }
  auto compare = [&](const char* what) {
    StepResult g = gpu.execute(plan);
    std::vector<float> gl = gpu.last_logits();
    std::vector<float> cl = cpu.model().forward(plan);
    double e = testing::worst_relative_error(gl, cl, vocab);
    std::cout << "[ parity ] qwen3-1.7b dummy " << what << ": relative error vs CPU " << e
              << (gpu.last_step_used_graph() ? " (graph)" : "") << "\n";
    EXPECT_LE(e, testing::kBf16Tolerance) << what;
    return g;
  };
  StepResult r = compare("prefill");
  for (int step = 0; step < 3; ++step) {
    for (size_t s = 0; s < plan.seqs.size(); ++s) {
      ScheduledSeq& seq = plan.seqs[s];
      seq.start_pos += static_cast<int64_t>(seq.tokens.size());
      seq.tokens = {r.seqs[s].tokens.back()};
      seq.num_logits = 1;
      pool.cover(tables[s], seq.start_pos + 1, kBlockSize);
      seq.block_table = tables[s];
    }
    plan.kind = ForwardKind::kDecode;
    plan.padded_batch_size = step == 0 ? 0 : 4;
    r = compare(step == 0 ? "decode eager" : "decode graph");
  }
  // Verify: k + 1 = 4 tokens per sequence, logits for all of them.
  for (size_t s = 0; s < plan.seqs.size(); ++s) {
    ScheduledSeq& seq = plan.seqs[s];
    seq.start_pos += 1;
    seq.tokens = {r.seqs[s].tokens.back(), 1, 2, 3};
    seq.num_logits = 4;
    pool.cover(tables[s], seq.start_pos + 4, kBlockSize);
    seq.block_table = tables[s];
  }
  plan.padded_batch_size = 0;
  r = compare("verify k+1=4");
  for (const SeqResult& sr : r.seqs) EXPECT_EQ(sr.tokens.size(), 4u);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaParity, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
