#include "exec/cpu/cpu_executor.h"

#include <chrono>
#include <span>

#include "exec/sampler.h"

namespace paceline {

CpuExecutor::CpuExecutor(const ModelConfig& config, const Weights& weights, KvCacheShape kv_shape,
                         int num_threads)
    : model_(config, weights, kv_shape, num_threads) {}

StepResult CpuExecutor::execute(const StepPlan& plan) {
  auto start = std::chrono::steady_clock::now();
  std::vector<float> logits = model_.forward(plan);
  const int64_t vocab = model_.config().vocab_size;

  StepResult result;
  result.step_id = plan.step_id;
  result.seqs.reserve(plan.seqs.size());
  int64_t row = 0;
  for (const ScheduledSeq& s : plan.seqs) {
    SeqResult& out = result.seqs.emplace_back();
    out.request_id = s.request_id;
    int64_t first_position = s.start_pos + static_cast<int64_t>(s.tokens.size()) - s.num_logits;
    for (int32_t i = 0; i < s.num_logits; ++i, ++row) {
      std::span<const float> row_logits(logits.data() + row * vocab, static_cast<size_t>(vocab));
      out.tokens.push_back(sample_token(row_logits, s.sampling, s.seed, first_position + i));
    }
  }
  result.step_time_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

}  // namespace paceline
