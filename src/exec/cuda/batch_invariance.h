#pragma once
// The batch-invariance check: the same prompts decoded greedily at several batch sizes, eagerly
// and through CUDA graphs, must give the same tokens as each prompt decoded alone. It catches the
// failure where small-batch (or padded, or graph-replayed) decode computes garbage while
// large-batch results look fine. Used by `paceline check` and tests/cuda.
#include <cstdint>
#include <string>
#include <vector>

#include "exec/executor.h"

namespace paceline {

struct BatchInvarianceOptions {
  int num_prompts = 64;
  int steps = 32;                     // greedy tokens decoded per prompt
  std::vector<int> batch_sizes = {1, 4, 8, 64};
  std::vector<int32_t> graph_sizes;   // the executor's captured sizes; empty: eager only
  int64_t vocab_size = 0;
  int64_t min_prompt = 16, max_prompt = 300;
  uint64_t seed = 1;
};

struct BatchInvarianceRun {
  int batch_size = 0;
  bool graphs = false;
  int mismatched_prompts = 0;  // prompts whose tokens differ from the batch-1 eager run
  std::string first_mismatch;  // "prompt 3, step 17: 812 vs 90" or empty
  double seconds = 0;
};

struct BatchInvarianceReport {
  std::vector<BatchInvarianceRun> runs;  // the first is the reference (batch 1, eager)
  bool ok() const;
  std::string summary() const;  // one line per run
};

// Runs the check on `executor`, whose KV cache must hold max_batch * (max_prompt + steps)
// positions. Prompts are random tokens from `seed`.
BatchInvarianceReport check_batch_invariance(Executor& executor,
                                             const BatchInvarianceOptions& options);

}  // namespace paceline
