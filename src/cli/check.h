#pragma once
// `paceline check`: the GPU checks anyone can run. By default the batch-invariance check (the
// same prompts decoded greedily alone and at batch 4, 8, 64, eagerly and through CUDA graphs,
// must give the same tokens); with --timing, the decode-step and prefill timings of
// docs/performance.md, each beside its floor.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/model_options.h"
#include "model/config.h"

namespace paceline {

struct CheckOptions {
  ModelOptions model;
  int prompts = 64;
  int steps = 32;
  std::string batch_sizes = "1,4,8,64";
  bool timing = false;
  bool skip_invariance = false;
  std::string decode_batches = "1,16,64";
  int64_t decode_context = 1024;
  std::string prefill_lengths = "1024,8192,32768";
  // Also time each decode batch with a prefill chunk of this many tokens in the same step (a
  // mixed step, as chunked prefill makes them in serving); 0: not timed.
  int64_t mixed_chunk = 0;
  int repeats = 30;
  // As serve's --max-num-seqs: the executor's graph sizes and its decode rows' GEMM (the small-M
  // kernel at 64 or fewer) follow it; every batch checked or timed must fit under it.
  int64_t max_num_seqs = 256;
  // With --timing: every kernel of the timed steps recorded (CUPTI) and, per timed step, where
  // its GPU time goes (kernels and the gaps between them) written to this markdown file.
  std::string kernel_timeline;
  // With --tensor-parallel-size N > 1: every rank on the one GPU, joined by collectives that meet
  // on it (exec/cuda/same_device_collectives.h), instead of NCCL over devices 0..N-1. It checks
  // the split (batch invariance, graphs) on a machine of one GPU; its timings are not a TP run's.
  bool ranks_on_one_device = false;
};

void add_check_options(CLI::App& cmd, CheckOptions& options);
// --timing's decode steps decode the token at position decode_context after that many cached
// tokens; a position past the model's window (max_position_embeddings) is refused with an error
// naming the flag and the largest value it takes, never decoded.
void check_decode_context(int64_t decode_context, const ModelConfig& config);
int run_check(const CheckOptions& options);

}  // namespace paceline
