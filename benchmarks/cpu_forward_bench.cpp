// The CPU executor on qwen3-tiny shapes (vocab 151936, hidden 128, 4 layers, GQA 4/2, tied) with
// dummy weights: a 128-token prefill, and decode steps of 1, 8 and 32 sequences at context 128.
// Counters: tokens/s computed (prefill) or generated (decode). Each at 1 thread and at all the
// machine's cores (the attention pool and OpenBLAS); time is wall-clock, CPU is the whole
// process's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "exec/cpu/cpu_executor.h"
#include "model/config.h"
#include "model/weights.h"

namespace {

using namespace paceline;

constexpr int64_t kBlockSize = 16;
constexpr int64_t kContext = 128;

ModelConfig qwen3_tiny() {
  std::filesystem::path shipped =
      std::filesystem::path(PACELINE_SOURCE_DIR) / "configs/models/qwen3-tiny.json";
  if (std::filesystem::exists(shipped)) return model_config_load(shipped.string());
  ModelConfig c;
  c.name = "qwen3-tiny";
  c.vocab_size = 151936;
  c.hidden_size = 128;
  c.intermediate_size = 384;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 32;
  c.rope_theta = 1000000.0;
  c.tie_word_embeddings = true;
  c.qk_norm = true;
  return c;
}

int threads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

struct Setup {
  ModelConfig config = qwen3_tiny();
  std::unique_ptr<Weights> weights = make_dummy_weights(config, 0);
  std::unique_ptr<CpuExecutor> executor;
  std::vector<int32_t> block_ids;  // 0, 1, 2, ...: what the plans' block tables view

  Setup(int64_t max_seqs, int num_threads)
      : executor(std::make_unique<CpuExecutor>(
            config, *weights, KvCacheShape{max_seqs * (kContext / kBlockSize + 1), kBlockSize},
            num_threads)),
        block_ids(static_cast<size_t>(max_seqs * (kContext / kBlockSize + 1))) {
    std::iota(block_ids.begin(), block_ids.end(), 0);
  }

  // Sequence i owns blocks [i * per_seq, (i + 1) * per_seq).
  ScheduledSeq seq(int64_t i, int64_t start_pos, int64_t num_tokens) const {
    ScheduledSeq s;
    s.request_id = static_cast<uint64_t>(i);
    for (int64_t t = 0; t < num_tokens; ++t) {
      s.tokens.push_back(static_cast<int32_t>((i * 7919 + (start_pos + t) * 104729) % 151936));
    }
    s.start_pos = start_pos;
    const auto per_seq = static_cast<size_t>(kContext / kBlockSize + 1);
    s.block_table =
        std::span<const int32_t>(block_ids).subspan(static_cast<size_t>(i) * per_seq, per_seq);
    s.num_logits = 1;
    s.sampling.temperature = 0.0;
    return s;
  }
};

void BM_Prefill128(benchmark::State& state) {
  Setup setup(1, static_cast<int>(state.range(0)));
  StepPlan plan;
  plan.seqs.push_back(setup.seq(0, 0, kContext));
  for (auto _ : state) benchmark::DoNotOptimize(setup.executor->execute(plan));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(kContext),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Prefill128)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(threads())
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// Each iteration decodes position kContext of every sequence again (the same slot is
// rewritten), so every step attends over kContext + 1 positions.
void BM_Decode(benchmark::State& state) {
  const int64_t batch = state.range(0);
  Setup setup(batch, static_cast<int>(state.range(1)));
  StepPlan prefill;
  for (int64_t i = 0; i < batch; ++i) prefill.seqs.push_back(setup.seq(i, 0, kContext));
  setup.executor->execute(prefill);
  StepPlan decode;
  decode.kind = ForwardKind::kDecode;
  for (int64_t i = 0; i < batch; ++i) decode.seqs.push_back(setup.seq(i, kContext, 1));
  for (auto _ : state) benchmark::DoNotOptimize(setup.executor->execute(decode));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Decode)
    ->ArgNames({"batch", "threads"})
    ->ArgsProduct({{1, 8, 32}, {1, threads()}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
