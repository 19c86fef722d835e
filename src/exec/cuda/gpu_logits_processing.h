#pragma once
// The CUDA executor's logits processing step (exec/logits_processors.h), between the forward and
// the sampling kernel: the plan's bias and penalty adjustments, built on the host from each row's
// parameters and history, applied in place on the GPU by one sparse kernel; the greedy rows it
// changed get their argmax taken again (the forward's argmax saw the raw logits). A plan without
// bias or penalties enqueues nothing.
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "exec/cuda/device_buffer.h"
#include "exec/logit_adjustment.h"
#include "sched/step_plan.h"

namespace paceline::cuda {

class GpuLogitsProcessing {
 public:
  // `logits` holds the plan's logit rows in plan order, [rows][vocab], on the device.
  void enqueue(const StepPlan& plan, float* logits, int64_t vocab, cudaStream_t stream);
  // After the stream has synchronized: the re-taken greedy tokens into the rows' slots of
  // `tokens` (one per logit row, in plan order).
  void patch_greedy_tokens(int32_t* tokens) const;

 private:
  std::vector<LogitAdjustment> adjustments_;
  std::vector<int32_t> greedy_rows_;
  PinnedBuffer host_adjustments_;
  DeviceBuffer device_adjustments_;
  DeviceBuffer device_greedy_;
  PinnedBuffer host_greedy_;
};

}  // namespace paceline::cuda
