#pragma once
// Shared by the cpu_forward tests: small configs, random float32 weights held in memory, and
// plans whose block tables come from a simple block pool.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/config.h"
#include "model/weights.h"
#include "sched/step_plan.h"

namespace paceline::testing {

// A Qwen3-like shape small enough for plain loops: q_size (4 x 16) differs from hidden (48).
inline ModelConfig tiny_config(bool qk_norm = true, int64_t kv_heads = 2) {
  ModelConfig c;
  c.name = "cpu-forward-test";
  c.arch = qk_norm ? ModelArch::kQwen3 : ModelArch::kLlama;
  c.vocab_size = 97;
  c.hidden_size = 48;
  c.intermediate_size = 80;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = kv_heads;
  c.head_dim = 16;
  c.max_position_embeddings = 4096;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = qk_norm;
  c.qk_norm = qk_norm;
  c.torch_dtype = "float32";
  return c;
}

// Every tensor of expected_tensors(config), float32, random: matrices uniform in
// +-1/sqrt(fan_in) * 2, norm weights around 1.
class TestWeights final : public Weights {
 public:
  TestWeights(const ModelConfig& config, uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (const ExpectedTensor& t : expected_tensors(config)) {
      int64_t numel = 1;
      for (int64_t d : t.shape) numel *= d;
      std::vector<float>& values = data_[t.name];
      values.resize(static_cast<size_t>(numel));
      bool is_norm = t.shape.size() == 1;
      float bound = is_norm ? 0.3f : 2.0f / std::sqrt(static_cast<float>(t.shape.back()));
      std::uniform_real_distribution<float> dist(-bound, bound);
      for (float& v : values) v = (is_norm ? 1.0f : 0.0f) + dist(rng);
      views_[t.name] = TensorView{DType::kF32, t.shape, values.data()};
    }
  }
  const TensorView& get(const std::string& name) const override {
    auto it = views_.find(name);
    if (it == views_.end()) fail("test weights: no tensor {}", name);
    return it->second;
  }
  bool has(const std::string& name) const override { return views_.count(name) != 0; }
  const std::vector<float>& values(const std::string& name) const { return data_.at(name); }

 private:
  std::map<std::string, std::vector<float>> data_;
  std::map<std::string, TensorView> views_;
};

// Hands out block ids from [0, num_blocks), in order or in a seeded random order.
class BlockPool {
 public:
  explicit BlockPool(int64_t num_blocks, uint64_t shuffle_seed = 0) : free_(num_blocks) {
    std::iota(free_.begin(), free_.end(), 0);
    if (shuffle_seed != 0) std::shuffle(free_.begin(), free_.end(), std::mt19937_64(shuffle_seed));
    std::reverse(free_.begin(), free_.end());
  }
  // Grows `table` until it covers `num_positions`.
  void cover(std::vector<int32_t>& table, int64_t num_positions, int64_t block_size) {
    while (static_cast<int64_t>(table.size()) * block_size < num_positions) {
      if (free_.empty()) fail("test block pool is empty");
      table.push_back(free_.back());
      free_.pop_back();
    }
  }

 private:
  std::vector<int32_t> free_;
};

inline std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (auto& t : out) t = dist(rng);
  return out;
}

// A plan only views its block tables (the scheduler owns the real ones). The tables tests make are
// kept here for the whole test binary, so a plan built from a temporary table stays valid.
inline std::span<const int32_t> keep_block_table(std::vector<int32_t> ids) {
  static std::deque<std::vector<int32_t>> kept;
  return kept.emplace_back(std::move(ids));
}

inline ScheduledSeq make_seq(uint64_t id, std::vector<int32_t> tokens, int64_t start_pos,
                             std::vector<int32_t> block_table, int32_t num_logits) {
  ScheduledSeq s;
  s.request_id = id;
  s.tokens = std::move(tokens);
  s.start_pos = start_pos;
  s.block_table = keep_block_table(std::move(block_table));
  s.num_logits = num_logits;
  return s;
}

// Rows [first, first + count) of a [rows][vocab] logits array.
inline std::vector<float> logit_rows(const std::vector<float>& logits, int64_t vocab, int64_t first,
                                     int64_t count) {
  return {logits.begin() + first * vocab, logits.begin() + (first + count) * vocab};
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float m = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace paceline::testing
