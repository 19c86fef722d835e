#pragma once
// The model flags shared by serve, generate, profile and demo (vLLM's spellings), and what they
// load: config, tokenizer and weights, then, once the engine's config is resolved, the executor
// sized for it.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "exec/executor.h"
#include "model/chat_template.h"
#include "model/config.h"
#include "model/tokenizer.h"
#include "model/weights.h"
#include "sched/scheduler_config.h"

namespace paceline {

struct CudaExecutorOptions;  // exec/cuda/cuda_executor.h

struct ModelOptions {
  std::string model = "tiny";           // config JSON, HF folder, or shipped name
  std::string load_format = "auto";     // auto | safetensors | dummy
  uint64_t seed = 0;                    // dummy weights and default sampling seeds
  std::string tokenizer;                // tokenizer.json or its folder; default: the model family's
  std::string chat_template;            // a Jinja file; default: the tokenizer folder's template
  std::string device = "cpu";           // cpu | cuda
  std::string kv_cache_memory = "";     // bytes with optional K/M/G suffix; default per device
  double kv_offloading_size = 0;        // GiB of host memory for the KV tier; 0: none
  std::string kv_cache_dtype = "auto";  // auto | bf16 | fp8 (cuda: e4m3); auto: the executor's own
  // auto | bf16 | fp8 (cuda, compute capability 8.9+); auto: fp8 when
  // ATOM_USE_FLYDSL_FP8_PREFILL_ATTN=1 (ATOM's switch), else bf16.
  std::string prefill_attention_dtype = "auto";
  double gpu_memory_utilization = 0.9;  // cuda: fraction of the GPU for weights, activations, KV
  bool enforce_eager = false;           // cuda: no CUDA graphs
  int64_t block_size = 16;
  int threads = 0;  // CPU threads; 0 = all cores but reserved_threads
  // Cores that the command's own busy threads keep when --threads is 0 (serve: its I/O thread and
  // request lanes). The forward's threads wait for each other at every layer, so one of them
  // sharing a core with a parser stalls the whole step (issue 15: a small chat's p99 0.44 s
  // against 0.10 s on 2 cores with the probe's bodies in flight).
  int reserved_threads = 0;
  int tensor_parallel_size = 1;  // ranks the model is split into (the CPU computes them in turn)
};

void add_model_options(CLI::App& cmd, ModelOptions& options);

struct LoadedModel {
  ModelConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
  std::shared_ptr<const ChatTemplate> chat_template;  // none when the tokenizer has none
  std::unique_ptr<Weights> weights;  // none on the null device
};

// Loads the config, the tokenizer and the weights; logs what it loaded and how long it took.
LoadedModel load_model(const ModelOptions& options);

// The executor of --device with its KV cache, sized for the resolved engine config (the CUDA
// executor's activations for max_num_batched_tokens, its graphs for the capture sizes, their
// block tables for max_model_len). `model` must outlive it. The engine takes the KV shape and
// the rest from the executor's capabilities().
std::unique_ptr<Executor> make_executor(const ModelOptions& options, const LoadedModel& model,
                                        const SchedulerConfig& engine);

// --kv-offloading-size in bytes, checked against the memory this machine has available now
// (paceline::Error naming both when it is larger).
int64_t kv_offloading_bytes(double gib);

// Whether --kv-cache-dtype asks for the CUDA executor's FP8 (e4m3) KV cache.
bool wants_fp8_kv_cache(const ModelOptions& options);

// What --prefill-attention-dtype resolves to, and what decided it (the flag, or ATOM's
// environment variable for auto).
struct PrefillAttentionDtype {
  bool fp8 = false;
  std::string source;  // "--prefill-attention-dtype fp8", "ATOM_USE_FLYDSL_FP8_PREFILL_ATTN=1", ...
};
// auto: fp8 when ATOM_USE_FLYDSL_FP8_PREFILL_ATTN is 1, bf16 when it is unset, empty or 0;
// paceline::Error on another value. An explicit bf16 or fp8 wins over the variable.
PrefillAttentionDtype resolve_prefill_attention_dtype(const ModelOptions& options);

// The CUDA executor's options that come from the model flags, the same for every command that
// builds one (serve and generate through make_executor, check): block size, KV cache memory and
// dtype, memory utilization, eager, and prefill attention's dtype, resolved and logged with what
// decided it. The caller adds the engine's sizes. Defined in builds with CUDA.
CudaExecutorOptions cuda_executor_options(const ModelOptions& options);

// "512M", "2G", "1048576" -> bytes; paceline::Error naming `flag` on anything else.
int64_t parse_byte_size(const std::string& text, const std::string& flag);

}  // namespace paceline
