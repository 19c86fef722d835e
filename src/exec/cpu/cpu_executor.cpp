#include "exec/cpu/cpu_executor.h"

#include <algorithm>
#include <chrono>
#include <span>

#include "base/error.h"
#include "exec/logits_processors.h"
#include "exec/logprobs.h"
#include "exec/sampler.h"

namespace paceline {

CpuExecutor::CpuExecutor(const ModelConfig& config, const Weights& weights, KvCacheShape kv_shape,
                         int num_threads, int64_t num_host_blocks, int tensor_parallel_size)
    : model_(config, weights, kv_shape, num_threads, tensor_parallel_size) {
  if (num_host_blocks > 0) {
    host_.emplace(config.num_hidden_layers, KvCacheShape{num_host_blocks, kv_shape.block_size},
                  config.num_key_value_heads, config.head_dim);
    faults_ = KvLoadFaults::from_env();
  }
}

std::vector<BlockCopy> CpuExecutor::copy_blocks(const KvTransfers& t) {
  std::vector<BlockCopy> failed;
  if (t.empty()) return failed;
  if (!host_) fail("step plans copies to a host KV tier this executor does not have");
  PagedKvCache& gpu = model_.kv_cache();
  for (const BlockCopy& c : t.stores) gpu.copy_block_to(c.gpu_block, *host_, c.host_block);
  for (const BlockCopy& c : t.loads) {
    if (faults_.next_load_fails()) {
      failed.push_back(c);
      continue;
    }
    host_->copy_block_to(c.host_block, gpu, c.gpu_block);
  }
  return failed;
}

ExecutorCapabilities CpuExecutor::capabilities() const {
  ExecutorCapabilities x;
  x.kv = model_.kv_cache_shape();
  x.kv_dtype = "float32";
  x.kv_element_bytes = sizeof(float);
  x.num_host_kv_blocks = host_ ? host_->shape().num_blocks : 0;
  x.prompt_logprobs = true;
  x.logprobs_with_logits_processing = true;
  x.tensor_parallel_size = model_.tensor_parallel_size();
  return x;
}

StepResult CpuExecutor::execute(const StepPlan& plan) {
  auto start = std::chrono::steady_clock::now();
  std::vector<BlockCopy> failed_loads = copy_blocks(plan.kv_transfers);
  if (!failed_loads.empty()) return result_without_forward(plan, std::move(failed_loads));
  // A row with prompt logprobs needs the logits of its chunk's earlier positions too: the model
  // then runs a copy of the plan that asks for every position of those chunks.
  const bool widen = std::any_of(plan.seqs.begin(), plan.seqs.end(),
                                 [](const ScheduledSeq& s) { return s.prompt_logprobs_from >= 0; });
  std::vector<float> logits;
  if (widen) {
    StepPlan wide = plan;
    for (ScheduledSeq& s : wide.seqs) {
      if (s.prompt_logprobs_from >= 0) s.num_logits = static_cast<int32_t>(s.tokens.size());
    }
    logits = model_.forward(wide);
  } else {
    logits = model_.forward(plan);
  }
  const int64_t vocab = model_.config().vocab_size;

  StepResult result;
  result.step_id = plan.step_id;
  result.seqs.reserve(plan.seqs.size());
  // Every logit row is one independent draw (its random number depends on its own seed and
  // position only), so the rows are sampled in parallel: 3 ms each on a 152k vocabulary.
  struct Row {
    const ScheduledSeq* seq;
    int64_t logit_row;  // in `logits`
    int64_t position;
    int32_t* token;          // null: a prompt row, scored at `target`, not sampled
    RowLogprobs* logprobs;   // null: the row did not ask
    int32_t target = 0;
  };
  std::vector<Row> rows;
  for (const ScheduledSeq& s : plan.seqs) {
    SeqResult& out = result.seqs.emplace_back();
    out.request_id = s.request_id;
    out.tokens.assign(static_cast<size_t>(s.num_logits), 0);
    if (s.num_logprobs >= 0) out.logprobs.resize(static_cast<size_t>(s.num_logits));
    out.prompt_logprobs.resize(s.prompt_logprob_targets.size());
  }
  int64_t logit_row = 0;
  for (size_t k = 0; k < plan.seqs.size(); ++k) {
    const ScheduledSeq& s = plan.seqs[k];
    SeqResult& out = result.seqs[k];
    const auto computed = static_cast<int64_t>(s.tokens.size());
    const int64_t rows_here = s.prompt_logprobs_from >= 0 ? computed : s.num_logits;
    for (size_t j = 0; j < s.prompt_logprob_targets.size(); ++j) {
      const int64_t q = s.prompt_logprobs_from + static_cast<int64_t>(j);
      rows.push_back({&s, logit_row + q - s.start_pos, q, nullptr, &out.prompt_logprobs[j],
                      s.prompt_logprob_targets[j]});
    }
    const int64_t first_position = s.start_pos + computed - s.num_logits;
    for (int32_t i = 0; i < s.num_logits; ++i) {
      rows.push_back({&s, logit_row + rows_here - s.num_logits + i, first_position + i,
                      &out.tokens[static_cast<size_t>(i)],
                      out.logprobs.empty() ? nullptr : &out.logprobs[static_cast<size_t>(i)]});
    }
    logit_row += rows_here;
  }
  auto sample_rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const Row& row = rows[static_cast<size_t>(r)];
      std::span<const float> row_logits(logits.data() + row.logit_row * vocab,
                                        static_cast<size_t>(vocab));
      if (!row.token) {
        *row.logprobs = row_logprobs(row_logits, row.target, row.seq->num_logprobs);
        continue;
      }
      // Logprobs are the raw logits' (vLLM's raw_logprobs); the draw sees the processed row.
      *row.token = sample_processed(row_logits, *row.seq, row.position);
      if (row.logprobs) *row.logprobs = row_logprobs(row_logits, *row.token, row.seq->num_logprobs);
    }
  };
  const auto n = static_cast<int64_t>(rows.size());
  if (n > 1) {
    model_.pool().parallel_for(n, sample_rows);
  } else {
    sample_rows(0, n);
  }
  result.step_time_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

}  // namespace paceline
