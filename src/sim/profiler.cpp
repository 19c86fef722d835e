#include "sim/profiler.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "base/error.h"

namespace paceline::sim {

namespace {

using Rows = std::vector<std::array<int64_t, 3>>;  // (cached positions, new tokens, logit rows)

int64_t blocks_needed(const Rows& rows, int64_t block_size) {
  int64_t n = 0;
  for (const auto& r : rows) n += (r[0] + r[1] + block_size - 1) / block_size;
  return n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Measurer {
  Executor& executor;
  int repeats;
  const std::function<void(const ProfilePoint&)>& progress;
  std::vector<ProfilePoint> points;
  uint64_t step_id = 0;

  void measure(ForwardKind kind, const Rows& rows) {
    const KvCacheShape kv = executor.kv_cache_shape();
    if (blocks_needed(rows, kv.block_size) > kv.num_blocks) return;
    std::vector<int32_t> block_ids;
    StepPlan plan = profile_plan(kind, rows, kv.block_size, block_ids);
    const StepWork work = step_work(plan);
    std::vector<double> times;
    for (int i = 0; i <= repeats; ++i) {
      plan.step_id = step_id++;
      const auto start = std::chrono::steady_clock::now();
      executor.execute(plan);
      const auto end = std::chrono::steady_clock::now();
      if (i > 0) times.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    }
    ProfilePoint p = work_point(work, median(times));
    p.kind = kind;
    points.push_back(p);
    if (progress) progress(p);
  }
};

}  // namespace

StepPlan profile_plan(ForwardKind kind, const Rows& rows, int64_t block_size,
                      std::vector<int32_t>& block_ids) {
  StepPlan plan;
  plan.kind = kind;
  block_ids.resize(static_cast<size_t>(blocks_needed(rows, block_size)));
  std::iota(block_ids.begin(), block_ids.end(), 0);
  size_t next_block = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto [cached, n, logits] = rows[i];
    ScheduledSeq& s = plan.seqs.emplace_back();
    s.request_id = i;
    s.start_pos = cached;
    s.tokens.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) s.tokens[static_cast<size_t>(j)] = 1000 + (cached + j) % 20000;
    const int64_t blocks = (cached + n + block_size - 1) / block_size;
    s.block_table =
        std::span<const int32_t>(block_ids).subspan(next_block, static_cast<size_t>(blocks));
    next_block += static_cast<size_t>(blocks);
    s.num_logits = static_cast<int32_t>(logits);
    s.seed = i;
  }
  return plan;
}

std::vector<ProfilePoint> measure_profile(
    Executor& executor, const ProfileGrid& grid,
    const std::function<void(const ProfilePoint&)>& progress) {
  if (grid.repeats < 1) fail("--repeats must be at least 1");
  Measurer m{executor, grid.repeats, progress, {}};
  for (int64_t tokens : grid.prefill_tokens) {
    for (int64_t batch : grid.prefill_batch) {
      if (batch < 1 || tokens < batch) continue;
      for (int64_t prefix : grid.prefill_prefix) {
        Rows rows;
        for (int64_t i = 0; i < batch; ++i) {
          rows.push_back({prefix, tokens / batch + (i < tokens % batch ? 1 : 0), 1});
        }
        m.measure(ForwardKind::kPrefill, rows);
      }
    }
  }
  for (int64_t batch : grid.decode_batch) {
    for (int64_t context : grid.decode_context) {
      if (batch < 1 || context < 1) continue;
      m.measure(ForwardKind::kDecode, Rows(static_cast<size_t>(batch), {context - 1, 1, 1}));
    }
  }
  for (int64_t batch : grid.mixed_decode_batch) {
    for (int64_t tokens : grid.mixed_prefill_tokens) {
      if (batch < 1 || tokens < 1) continue;
      Rows rows(static_cast<size_t>(batch), {grid.mixed_context - 1, 1, 1});
      rows.push_back({0, tokens, 1});
      m.measure(ForwardKind::kMixed, rows);
    }
  }
  if (m.points.empty()) fail("no profile point fits the executor's KV cache");
  return m.points;
}

}  // namespace paceline::sim
