#include "exec/cuda/batch_invariance.h"

#include <algorithm>
#include <chrono>
#include <random>

#include <fmt/format.h>

#include "base/error.h"
#include "sched/cudagraph_sizes.h"

namespace paceline {
namespace {

// Decodes prompts [first, first + count) together: one prefill step, then steps - 1 decodes.
void decode_group(Executor& executor, const std::vector<std::vector<int32_t>>& prompts, int first,
                  int count, const BatchInvarianceOptions& o, bool graphs,
                  std::vector<std::vector<int32_t>>& out) {
  const int64_t bs = executor.kv_cache_shape().block_size;
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(count));
  int32_t next_block = 0;
  auto cover = [&](std::vector<int32_t>& t, int64_t positions) {
    while (static_cast<int64_t>(t.size()) * bs < positions) t.push_back(next_block++);
    if (next_block > executor.kv_cache_shape().num_blocks) {
      fail("batch-invariance check: the KV cache of {} blocks is too small",
           executor.kv_cache_shape().num_blocks);
    }
  };
  StepPlan plan;
  plan.kind = ForwardKind::kPrefill;
  for (int i = 0; i < count; ++i) {
    const auto& p = prompts[static_cast<size_t>(first + i)];
    cover(tables[static_cast<size_t>(i)], static_cast<int64_t>(p.size()));
    ScheduledSeq s;
    s.request_id = static_cast<uint64_t>(first + i);
    s.tokens = p;
    s.start_pos = 0;
    s.block_table = tables[static_cast<size_t>(i)];
    s.num_logits = 1;
    s.sampling.temperature = 0.0;
    plan.seqs.push_back(std::move(s));
  }
  for (int step = 0; step < o.steps; ++step) {
    plan.step_id = static_cast<uint64_t>(step);
    StepResult r = executor.execute(plan);
    for (int i = 0; i < count; ++i) {
      const int32_t token = r.seqs[static_cast<size_t>(i)].tokens.at(0);
      out[static_cast<size_t>(first + i)].push_back(token);
      ScheduledSeq& s = plan.seqs[static_cast<size_t>(i)];
      s.start_pos += static_cast<int64_t>(s.tokens.size());
      s.tokens = {token};
      cover(tables[static_cast<size_t>(i)], s.start_pos + 1);
      s.block_table = tables[static_cast<size_t>(i)];
    }
    plan.kind = ForwardKind::kDecode;
    plan.padded_batch_size = graphs ? padded_batch_size(o.graph_sizes, count) : 0;
  }
}

}  // namespace

BatchInvarianceReport check_batch_invariance(Executor& executor,
                                             const BatchInvarianceOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(o.vocab_size - 1));
  std::uniform_int_distribution<int64_t> length(o.min_prompt, o.max_prompt);
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(o.num_prompts));
  for (auto& p : prompts) {
    p.resize(static_cast<size_t>(length(rng)));
    for (auto& t : p) t = token(rng);
  }

  BatchInvarianceReport report;
  std::vector<std::vector<int32_t>> reference;
  std::vector<std::pair<int, bool>> configs{{1, false}};
  for (bool graphs : {false, true}) {
    if (graphs && o.graph_sizes.empty()) continue;
    for (int b : o.batch_sizes) {
      if (b != 1 || graphs) configs.emplace_back(b, graphs);
    }
  }
  for (auto [batch, graphs] : configs) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<int32_t>> tokens(prompts.size());
    for (int first = 0; first < o.num_prompts; first += batch) {
      decode_group(executor, prompts, first, std::min(batch, o.num_prompts - first), o, graphs,
                   tokens);
    }
    BatchInvarianceRun run;
    run.batch_size = batch;
    run.graphs = graphs;
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (reference.empty()) {
      reference = tokens;
    } else {
      for (size_t p = 0; p < prompts.size(); ++p) {
        if (tokens[p] == reference[p]) continue;
        ++run.mismatched_prompts;
        if (run.first_mismatch.empty()) {
          size_t step = 0;
          while (tokens[p][step] == reference[p][step]) ++step;
          run.first_mismatch = fmt::format("prompt {}, step {}: {} vs {} alone", p, step,
                                           tokens[p][step], reference[p][step]);
        }
      }
    }
    report.runs.push_back(run);
  }
  return report;
}

bool BatchInvarianceReport::ok() const {
  return !runs.empty() && std::all_of(runs.begin(), runs.end(), [](const BatchInvarianceRun& r) {
    return r.mismatched_prompts == 0;
  });
}

std::string BatchInvarianceReport::summary() const {
  std::string s;
  for (const BatchInvarianceRun& r : runs) {
    s += fmt::format("batch {:>3} {:<6} {:>3} prompts differ from batch 1 eager{}{} ({:.2f} s)\n",
                     r.batch_size, r.graphs ? "graphs" : "eager", r.mismatched_prompts,
                     r.first_mismatch.empty() ? "" : "; first: ", r.first_mismatch, r.seconds);
  }
  return s;
}

}  // namespace paceline
