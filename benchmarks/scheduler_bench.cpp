// Scheduler CPU time per decode step: issue 3 asks for under 100 µs with 256 running sequences at
// 100k-token contexts. Each case adds `batch` requests with `context`-token prompts, drives them
// through prefill with a fake executor (no model: token 1 for every logit row) until all decode,
// then times schedule() + update() pairs, the plan and outputs destroyed included. Separate
// composition, prefix caching on, block size 16, no delayer. Prompts are distinct (no shared
// block), or share their first 90% (a long common system prompt and documents).
// Counter us_per_step is the process CPU time per step (the CPU column, in plain µs); wall time
// on a loaded machine also counts waiting for a core. The setup is not timed.
#include <benchmark/benchmark.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "base/clock.h"
#include "sched/scheduler.h"

namespace {

using namespace paceline;

constexpr int64_t kBlockSize = 16;
constexpr int64_t kDecodeSteps = 4096;            // timed steps per case: 256 block boundaries
constexpr int64_t kMaxTokens = 2 * kDecodeSteps;  // never reached: every timed step decodes all

enum class Prompts { kDistinct, kSharedPrefix };

double process_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) * 1e-3;
}

// A stand-in for the model: token 1 for every logit row. Its result is reused while the plan's
// rows stay the same (every decode step of a steady batch), so the timed loop is the scheduler's.
class FakeExecutor {
 public:
  const StepResult& execute(const StepPlan& plan) {
    if (!same_rows(plan)) {
      result_.seqs.clear();
      for (const ScheduledSeq& s : plan.seqs) {
        result_.seqs.push_back(
            {s.request_id, std::vector<int32_t>(static_cast<size_t>(s.num_logits), 1)});
      }
    }
    result_.step_id = plan.step_id;
    return result_;
  }

 private:
  bool same_rows(const StepPlan& plan) const {
    if (plan.seqs.size() != result_.seqs.size()) return false;
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      const ScheduledSeq& s = plan.seqs[i];
      const SeqResult& r = result_.seqs[i];
      if (s.request_id != r.request_id || static_cast<size_t>(s.num_logits) != r.tokens.size()) {
        return false;
      }
    }
    return true;
  }

  StepResult result_;
};

// Token j of request id's prompt: a cheap hash spread over a Qwen3-sized vocabulary. With shared
// prefixes the first 90% of every prompt is request 0's.
std::vector<int32_t> make_prompt(uint64_t id, int64_t length, Prompts prompts) {
  const int64_t shared = prompts == Prompts::kSharedPrefix ? length * 9 / 10 : 0;
  std::vector<int32_t> tokens(static_cast<size_t>(length));
  for (int64_t j = 0; j < length; ++j) {
    const uint64_t owner = j < shared ? 0 : id + 1;
    uint64_t x = owner * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(j) * 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 31;
    tokens[static_cast<size_t>(j)] = static_cast<int32_t>(x % 151936);
  }
  return tokens;
}

struct DecodingBatch {
  VirtualClock clock;
  Scheduler scheduler;
  FakeExecutor executor;

  static SchedulerConfig config(int64_t batch, int64_t context) {
    SchedulerConfig c;
    c.max_num_seqs = 256;
    c.max_num_batched_tokens = 16384;
    c.block_size = kBlockSize;
    c.max_model_len = context + kMaxTokens;
    // Room for every request to reach max_tokens: the timed steps never preempt.
    c.num_kv_blocks = batch * ((context + kMaxTokens + kBlockSize - 1) / kBlockSize);
    c.enable_prefix_caching = true;
    c.schedule = ScheduleKind::kSeparate;
    return c;
  }

  // Adds the requests and runs steps until the first decode step of the whole batch is done.
  DecodingBatch(int64_t batch, int64_t context, Prompts prompts)
      : scheduler(config(batch, context), clock) {
    RequestParams params;
    params.max_tokens = kMaxTokens;
    params.ignore_eos = true;
    for (int64_t i = 0; i < batch; ++i) {
      const auto id = static_cast<uint64_t>(i);
      scheduler.add_request(id, make_prompt(id, context, prompts), params);
    }
    for (;;) {
      const StepPlan plan = scheduler.schedule();
      scheduler.update(plan, executor.execute(plan));
      if (plan.kind == ForwardKind::kDecode) break;
    }
  }
};

void run(benchmark::State& state, Prompts prompts) {
  const int64_t batch = state.range(0), context = state.range(1);
  const auto setup_start = std::chrono::steady_clock::now();
  DecodingBatch b(batch, context, prompts);
  const std::chrono::duration<double> setup = std::chrono::steady_clock::now() - setup_start;
  if (b.scheduler.num_running() != batch || b.scheduler.num_waiting() != 0) {
    state.SkipWithError("not every request is decoding after setup");
    return;
  }

  int64_t block_ids = 0;  // block-table entries the plans carry
  bool ok = true;
  const double cpu_start_us = process_cpu_us();
  for (auto _ : state) {
    StepPlan plan = b.scheduler.schedule();
    benchmark::DoNotOptimize(b.scheduler.update(plan, b.executor.execute(plan)));
    ok = ok && plan.kind == ForwardKind::kDecode && static_cast<int64_t>(plan.seqs.size()) == batch;
    for (const ScheduledSeq& s : plan.seqs) block_ids += static_cast<int64_t>(s.block_table.size());
  }
  const double cpu_us = process_cpu_us() - cpu_start_us;
  const SchedulerStats stats = b.scheduler.stats();
  if (!ok || stats.preemptions != 0) {
    state.SkipWithError("a timed step was not a full decode step");
    return;
  }
  const auto steps = static_cast<double>(state.iterations());
  state.counters["us_per_step"] = cpu_us / steps;
  state.counters["block_ids_per_step"] = static_cast<double>(block_ids) / steps;
  state.counters["kv_blocks_used"] =
      static_cast<double>(stats.num_kv_blocks - stats.num_free_kv_blocks);
  state.counters["setup_s"] = setup.count();
  state.SetLabel(prompts == Prompts::kDistinct ? "distinct prompts" : "90% shared prefix");
}

void BM_SchedulerDecodeStep(benchmark::State& state) {
  run(state, Prompts::kDistinct);
}
void BM_SchedulerDecodeStepSharedPrefix(benchmark::State& state) {
  run(state, Prompts::kSharedPrefix);
}

BENCHMARK(BM_SchedulerDecodeStep)
    ->ArgsProduct({{1, 16, 64, 256}, {1000, 10000, 100000}})
    ->ArgNames({"batch", "context"})
    ->Iterations(kDecodeSteps)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SchedulerDecodeStepSharedPrefix)
    ->ArgsProduct({{256}, {1000, 10000, 100000}})
    ->ArgNames({"batch", "context"})
    ->Iterations(kDecodeSteps)
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
