#pragma once
// Measuring a profile table on a real executor (`paceline profile`): prefill, decode and mixed
// steps at a grid of shapes, each timed on the steady clock around execute() after a warm-up run,
// the median of the repeats kept. The KV cache holds whatever it holds: the time of a step does
// not depend on the values it reads.
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "exec/executor.h"
#include "sim/profile_table.h"

namespace paceline::sim {

struct ProfileGrid {
  // Prefill: `tokens` new tokens after `prefix` cached positions, split over `batch` sequences.
  std::vector<int64_t> prefill_tokens = {16, 64, 256, 1024, 2048};
  std::vector<int64_t> prefill_prefix = {0, 1024, 4096};
  std::vector<int64_t> prefill_batch = {1, 4};
  // Decode: `batch` sequences of one token, each `context` positions long.
  std::vector<int64_t> decode_batch = {1, 2, 4, 8, 16, 32, 64};
  std::vector<int64_t> decode_context = {128, 1024, 4096};
  // Mixed: a decode batch plus one prefill chunk (the mixed composition's forward).
  std::vector<int64_t> mixed_decode_batch = {4, 16};
  std::vector<int64_t> mixed_prefill_tokens = {64, 512};
  int64_t mixed_context = 1024;
  int repeats = 5;
};

// One step of the grid as the executor sees it: sequences with the given (cached positions, new
// tokens, logit rows), block tables laid out one after another from block 0. The plan's block
// tables view `block_ids`, which must outlive it.
StepPlan profile_plan(ForwardKind kind, const std::vector<std::array<int64_t, 3>>& rows,
                      int64_t block_size, std::vector<int32_t>& block_ids);

// Measures every grid point whose KV fits the executor's cache. `progress` sees each point.
std::vector<ProfilePoint> measure_profile(Executor& executor, const ProfileGrid& grid,
                                          const std::function<void(const ProfilePoint&)>& progress);

}  // namespace paceline::sim
