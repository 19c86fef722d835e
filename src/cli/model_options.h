#pragma once
// The model flags shared by serve, generate, profile and demo (vLLM's spellings), and what they
// load: config, tokenizer, weights and an executor with its KV cache.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "exec/executor.h"
#include "model/config.h"
#include "model/tokenizer.h"
#include "model/weights.h"

namespace paceline {

struct ModelOptions {
  std::string model = "tiny";           // config JSON, HF folder, or shipped name
  std::string load_format = "auto";     // auto | safetensors | dummy
  uint64_t seed = 0;                    // dummy weights and default sampling seeds
  std::string tokenizer;                // tokenizer.json or its folder; default: the Qwen3 files
  std::string device = "cpu";           // cpu | cuda
  std::string kv_cache_memory = "";     // bytes with optional K/M/G suffix; default per device
  double gpu_memory_utilization = 0.9;  // cuda: fraction of the GPU for weights, activations, KV
  bool enforce_eager = false;           // cuda: no CUDA graphs
  int64_t block_size = 16;
  int threads = 0;  // CPU threads; 0 = all cores
};

void add_model_options(CLI::App& cmd, ModelOptions& options);

struct LoadedModel {
  ModelConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Weights> weights;
  std::unique_ptr<Executor> executor;
};

// Loads everything the options name; logs what it loaded and how long it took.
LoadedModel load_model(const ModelOptions& options);

// "512M", "2G", "1048576" -> bytes; paceline::Error naming `flag` on anything else.
int64_t parse_byte_size(const std::string& text, const std::string& flag);

}  // namespace paceline
