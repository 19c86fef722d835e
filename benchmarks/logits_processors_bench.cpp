// What the logits processing costs a row per step on the host: building the sparse adjustments
// from a request's history (one pass, no sort), for a repetition penalty over prompts of 1k to
// 100k tokens and presence/frequency over 256 output tokens, against a row with no fields.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "exec/logits_processors.h"

namespace paceline {
namespace {

constexpr int64_t kVocab = 151936;
constexpr int64_t kOutput = 256;

std::vector<int32_t> history(int64_t prompt) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(kVocab - 1));
  std::vector<int32_t> h(static_cast<size_t>(prompt + kOutput));
  for (int32_t& t : h) t = token(rng);
  return h;
}

void run(benchmark::State& state, const SamplingParams& params) {
  const int64_t prompt = state.range(0);
  const std::vector<int32_t> h = history(prompt);
  std::vector<LogitAdjustment> out;
  for (auto _ : state) {
    out.clear();
    append_logit_adjustments(params, h, prompt, kVocab, 0, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["adjustments"] = static_cast<double>(out.size());
}

void BM_NoFields(benchmark::State& state) { run(state, SamplingParams{}); }

void BM_PresenceFrequency(benchmark::State& state) {
  SamplingParams p;
  p.presence_penalty = 0.5;
  p.frequency_penalty = 0.5;
  run(state, p);
}

void BM_Repetition(benchmark::State& state) {
  SamplingParams p;
  p.repetition_penalty = 1.1;
  run(state, p);
}

BENCHMARK(BM_NoFields)->Arg(100000);
BENCHMARK(BM_PresenceFrequency)->Arg(1000)->Arg(100000);
BENCHMARK(BM_Repetition)->Arg(1000)->Arg(10000)->Arg(100000);

}  // namespace
}  // namespace paceline

BENCHMARK_MAIN();
