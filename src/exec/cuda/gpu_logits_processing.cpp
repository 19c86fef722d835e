#include "exec/cuda/gpu_logits_processing.h"

#include <cstring>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/kernels.h"
#include "exec/logits_processors.h"

namespace paceline::cuda {

void GpuLogitsProcessing::enqueue(const StepPlan& plan, float* logits, int64_t vocab,
                                  cudaStream_t stream) {
  adjustments_.clear();
  greedy_rows_.clear();
  int32_t row = 0;
  for (const ScheduledSeq& s : plan.seqs) {
    const bool adjusts = s.sampling.adjusts_logits();
    for (int32_t i = 0; i < s.num_logits; ++i, ++row) {
      if (!adjusts) continue;
      append_logit_adjustments(s.sampling, s.history, s.num_prompt_tokens, vocab, row,
                               adjustments_);
      if (s.sampling.greedy()) greedy_rows_.push_back(row);
    }
  }
  if (adjustments_.empty()) return;
  const size_t bytes = adjustments_.size() * sizeof(LogitAdjustment);
  host_adjustments_.reserve(bytes);
  std::memcpy(host_adjustments_.as<void>(), adjustments_.data(), bytes);
  device_adjustments_.reserve(bytes);
  PACELINE_CUDA_CHECK(cudaMemcpyAsync(device_adjustments_.as<void>(), host_adjustments_.as<void>(),
                                      bytes, cudaMemcpyHostToDevice, stream));
  PACELINE_CUDA_CHECK(launch_logit_adjustments(logits, vocab,
                                               device_adjustments_.as<LogitAdjustment>(),
                                               static_cast<int>(adjustments_.size()), stream));
  if (greedy_rows_.empty()) return;
  const size_t greedy_bytes = greedy_rows_.size() * sizeof(int32_t);
  device_greedy_.reserve(greedy_bytes);
  host_greedy_.reserve(greedy_bytes);
  for (size_t k = 0; k < greedy_rows_.size(); ++k) {
    PACELINE_CUDA_CHECK(launch_argmax(logits + static_cast<int64_t>(greedy_rows_[k]) * vocab, vocab,
                                      1, device_greedy_.as<int32_t>() + k, stream));
  }
  PACELINE_CUDA_CHECK(cudaMemcpyAsync(host_greedy_.as<void>(), device_greedy_.as<void>(),
                                      greedy_bytes, cudaMemcpyDeviceToHost, stream));
}

void GpuLogitsProcessing::patch_greedy_tokens(int32_t* tokens) const {
  for (size_t k = 0; k < greedy_rows_.size(); ++k) {
    tokens[greedy_rows_[k]] = host_greedy_.as<int32_t>()[k];
  }
}

}  // namespace paceline::cuda
