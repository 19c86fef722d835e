#pragma once
// A Hugging Face reference fixture of tests/fixtures/models (tools/fixtures/make_fixtures.py):
// the checkpoint and its config, HF's logits at each prompt's logit positions
// (reference.safetensors) and the prompts and greedy continuations (reference.json); and the
// three ways the parity tests drive a model through them: every prompt in one ragged prefill,
// chunked prefills through shuffled blocks, and batched greedy decode steps. Shared by the CPU,
// CUDA, FP8-KV and tensor-parallel parity tests, which differ only in what runs a step.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "sched/step_plan.h"
#include "test_model.h"

namespace paceline::testing {

struct HfPrompt {
  std::string name;
  std::vector<int32_t> tokens;
  std::vector<int64_t> logit_positions;  // HF's logits are at these positions, in this order

  int64_t first_logit_position() const {
    return *std::min_element(logit_positions.begin(), logit_positions.end());
  }
};

class HfFixture {
 public:
  // True when `folder` holds a fixture (reference.json beside the checkpoint).
  static bool exists(const std::filesystem::path& folder) {
    return std::filesystem::exists(folder / "reference.json");
  }

  explicit HfFixture(const std::filesystem::path& folder)
      : folder(folder),
        config(model_config_load(folder.string())),
        weights(load_safetensors_weights(folder.string(), config)),
        reference(std::make_unique<SafetensorsFile>((folder / "reference.safetensors").string())) {
    std::ifstream in(folder / "reference.json");
    const nlohmann::json root = nlohmann::json::parse(in);
    for (const auto& p : root.at("prompts")) {
      prompts.push_back({p.at("name").get<std::string>(),
                         p.at("token_ids").get<std::vector<int32_t>>(),
                         p.at("logit_positions").get<std::vector<int64_t>>()});
    }
    for (const auto& g : root.at("greedy")) {
      greedy[g.at("prompt").get<std::string>()] = g.at("new_tokens").get<std::vector<int32_t>>();
    }
  }

  // KV blocks for every prompt with `extra` positions of decode after it.
  int64_t num_blocks(int64_t block_size, int64_t extra = 64) const {
    int64_t positions = 0;
    for (const HfPrompt& p : prompts) positions += static_cast<int64_t>(p.tokens.size()) + extra;
    return positions / block_size + static_cast<int64_t>(prompts.size());
  }

  // HF's logit rows of prompt p at its logit positions from first_position on, in order.
  std::vector<float> hf_rows(const HfPrompt& p, int64_t first_position = 0) const {
    const TensorView* t = reference->find("logits." + p.name);
    EXPECT_NE(t, nullptr) << "reference.safetensors lacks logits." << p.name;
    if (t == nullptr) return {};
    EXPECT_EQ(t->shape, (std::vector<int64_t>{static_cast<int64_t>(p.logit_positions.size()),
                                              config.vocab_size}));
    std::vector<float> all(static_cast<size_t>(t->numel()));
    t->to_f32(all.data());
    std::vector<float> out;
    for (size_t i = 0; i < p.logit_positions.size(); ++i) {
      if (p.logit_positions[i] < first_position) continue;
      const auto at = static_cast<std::ptrdiff_t>(i * config.vocab_size);
      out.insert(out.end(), all.begin() + at, all.begin() + at + config.vocab_size);
    }
    return out;
  }

  // From `ours`, rows for the positions [first_position, ...), the rows at p's logit positions
  // from first_position on: the rows hf_rows(p, first_position) compares with.
  std::vector<float> pick_rows(const HfPrompt& p, const std::vector<float>& ours,
                               int64_t first_position = 0) const {
    std::vector<float> out;
    for (int64_t pos : p.logit_positions) {
      if (pos < first_position) continue;
      const auto at = static_cast<std::ptrdiff_t>((pos - first_position) * config.vocab_size);
      out.insert(out.end(), ours.begin() + at, ours.begin() + at + config.vocab_size);
    }
    return out;
  }

  // Every prompt whole in one prefill step, each asking for the logits from its first logit
  // position on (firsts[i]); blocks from `pool`.
  StepPlan ragged_prefill(BlockPool& pool, int64_t block_size, std::vector<int64_t>& firsts) const {
    StepPlan plan;
    firsts.clear();
    for (size_t i = 0; i < prompts.size(); ++i) {
      const HfPrompt& p = prompts[i];
      const auto n = static_cast<int64_t>(p.tokens.size());
      const int64_t first = p.first_logit_position();
      std::vector<int32_t> table;
      pool.cover(table, n, block_size);
      plan.seqs.push_back(make_seq(i, p.tokens, 0, table, static_cast<int32_t>(n - first)));
      firsts.push_back(first);
    }
    return plan;
  }

  // Every prompt prefilled in chunks of `chunk` tokens, each step batching every unfinished
  // prompt's next chunk; `forward` runs a step and returns the logits of all its rows. Returns
  // each prompt's logits at every position.
  std::vector<std::vector<float>> chunked_prefill(
      BlockPool& pool, int64_t block_size, int64_t chunk,
      const std::function<std::vector<float>(const StepPlan&)>& forward) const {
    std::vector<std::vector<int32_t>> tables(prompts.size());
    std::vector<std::vector<float>> all(prompts.size());
    const auto vocab = static_cast<size_t>(config.vocab_size);
    for (int64_t begin = 0;; begin += chunk) {
      StepPlan plan;
      std::vector<size_t> which;
      for (size_t i = 0; i < prompts.size(); ++i) {
        const auto n = static_cast<int64_t>(prompts[i].tokens.size());
        if (begin >= n) continue;
        const int64_t end = std::min(n, begin + chunk);
        pool.cover(tables[i], end, block_size);
        std::vector<int32_t> part(prompts[i].tokens.begin() + begin,
                                  prompts[i].tokens.begin() + end);
        plan.seqs.push_back(make_seq(i, part, begin, tables[i], static_cast<int32_t>(end - begin)));
        which.push_back(i);
      }
      if (plan.seqs.empty()) break;
      const std::vector<float> logits = forward(plan);
      size_t offset = 0;
      for (size_t s = 0; s < which.size(); ++s) {
        const size_t count = plan.seqs[s].tokens.size() * vocab;
        all[which[s]].insert(all[which[s]].end(),
                             logits.begin() + static_cast<std::ptrdiff_t>(offset),
                             logits.begin() + static_cast<std::ptrdiff_t>(offset + count));
        offset += count;
      }
    }
    return all;
  }

  // Every prompt with a greedy continuation in reference.json, prefilled together and then
  // decoded together one token a step, for as many steps as the continuations have (greedy:
  // temperature 0). `step` runs the plan (and may adjust it, e.g. its padded batch size) and
  // returns each sequence's sampled token. Expects HF's continuations token for token.
  void expect_greedy_continuations(
      BlockPool& pool, int64_t block_size,
      const std::function<std::vector<int32_t>(StepPlan&)>& step) const {
    StepPlan plan;
    std::vector<std::vector<int32_t>> tables;  // plan.seqs[s] views tables[s]
    std::vector<const std::vector<int32_t>*> expected;
    tables.reserve(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto it = greedy.find(prompts[i].name);
      if (it == greedy.end()) continue;
      std::vector<int32_t>& table = tables.emplace_back();
      pool.cover(table, static_cast<int64_t>(prompts[i].tokens.size()), block_size);
      plan.seqs.push_back(make_seq(i, prompts[i].tokens, 0, table, 1));
      plan.seqs.back().sampling.temperature = 0.0;
      expected.push_back(&it->second);
    }
    ASSERT_FALSE(plan.seqs.empty()) << "reference.json has no greedy continuations";
    std::vector<std::vector<int32_t>> generated(plan.seqs.size());
    for (size_t n = 0; n < expected[0]->size(); ++n) {
      const std::vector<int32_t> tokens = step(plan);
      ASSERT_EQ(tokens.size(), plan.seqs.size()) << "step " << n;
      for (size_t s = 0; s < plan.seqs.size(); ++s) {
        generated[s].push_back(tokens[s]);
        // The next step decodes the sampled token at the next position.
        ScheduledSeq& seq = plan.seqs[s];
        seq.start_pos += static_cast<int64_t>(seq.tokens.size());
        seq.tokens = {tokens[s]};
        pool.cover(tables[s], seq.start_pos + 1, block_size);
        seq.block_table = tables[s];
      }
      plan.kind = ForwardKind::kDecode;
    }
    for (size_t s = 0; s < plan.seqs.size(); ++s) {
      EXPECT_EQ(generated[s], *expected[s]) << prompts[plan.seqs[s].request_id].name;
    }
  }

  std::filesystem::path folder;
  ModelConfig config;
  std::unique_ptr<Weights> weights;
  std::unique_ptr<SafetensorsFile> reference;
  std::vector<HfPrompt> prompts;
  std::map<std::string, std::vector<int32_t>> greedy;  // prompt name -> HF's new tokens
};

}  // namespace paceline::testing
