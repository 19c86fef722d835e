#include "cli/model_options.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "base/resources.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/null_executor.h"
#include "sched/cudagraph_sizes.h"
#if PACELINE_HAVE_CUDA
#include "exec/cuda/cuda_executor.h"
#endif

namespace paceline {

namespace fs = std::filesystem;

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("--model", o.model,
                 "config.json, Hugging Face folder, or a shipped name (tiny, qwen3-8b, ...)")
      ->capture_default_str();
  cmd.add_option("--load-format", o.load_format, "auto | safetensors | dummy")
      ->check(CLI::IsMember({"auto", "safetensors", "dummy"}))
      ->capture_default_str();
  cmd.add_option("--seed", o.seed, "seed for dummy weights and default sampling")
      ->capture_default_str();
  cmd.add_option("--tokenizer", o.tokenizer,
                 "tokenizer.json or its folder (default: the Qwen3 tokenizer fetched by setup)");
  cmd.add_option("--device", o.device,
                 "cpu | cuda | null (null: zero-cost executor for measuring the server's own "
                 "overhead; tokens are meaningless)")
      ->check(CLI::IsMember({"cpu", "cuda", "null"}))
      ->capture_default_str();
  cmd.add_option("--kv-cache-memory", o.kv_cache_memory,
                 "bytes for the KV cache, e.g. 512M or 4G (default: 256M on the CPU; on cuda, "
                 "what --gpu-memory-utilization leaves)");
  cmd.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "cuda: fraction of the GPU's memory for weights, activations and the KV cache "
                 "(ignored with --kv-cache-memory)")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  cmd.add_flag("--enforce-eager", o.enforce_eager, "cuda: run decode eagerly, no CUDA graphs");
  cmd.add_option("--block-size", o.block_size, "tokens per KV block")->capture_default_str();
  cmd.add_option("--threads", o.threads, "CPU threads (0: all cores)")->capture_default_str();
}

int64_t parse_byte_size(const std::string& text, const std::string& flag) {
  if (text.empty()) fail("{}: empty size", flag);
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (const std::exception&) {
    fail("{}: '{}' is not a size (examples: 512M, 4G, 1048576)", flag, text);
  }
  std::string suffix = text.substr(pos);
  double mult = 1;
  if (suffix == "" || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "KiB" || suffix == "k")
    mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB")
    mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else
    fail("{}: '{}' has an unknown unit '{}' (use K, M or G)", flag, text, suffix);
  double bytes = value * mult;
  if (!(bytes > 0) || !std::isfinite(bytes) || bytes > 9e18)
    fail("{}: '{}' is out of range", flag, text);
  return static_cast<int64_t>(bytes);
}

namespace {

std::string default_tokenizer_path() {
  if (auto p = find_resource("third_party/qwen3-tokenizer/tokenizer.json")) return p->string();
  fail("no tokenizer found: pass --tokenizer, or run scripts/setup to fetch the Qwen3 tokenizer");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

KvCacheShape kv_cache_shape_for(const ModelOptions& o, const ModelConfig& config) {
  const int64_t kv_bytes = o.kv_cache_memory.empty()
                               ? int64_t{256} << 20
                               : parse_byte_size(o.kv_cache_memory, "--kv-cache-memory");
  const int64_t block_bytes = config.kv_bytes_per_token(sizeof(float)) * o.block_size;
  KvCacheShape kv{kv_bytes / block_bytes, o.block_size};
  if (kv.num_blocks < 1)
    fail("--kv-cache-memory: {} bytes hold no KV block of {} bytes", kv_bytes, block_bytes);
  return kv;
}

}  // namespace

LoadedModel load_model(const ModelOptions& o) {
  if (o.block_size < 1 || o.block_size > 1024)
    fail("--block-size: {} is out of range 1..1024", o.block_size);
  LoadedModel m;
  auto t0 = std::chrono::steady_clock::now();
  m.config = model_config_load(o.model);

  std::string tok_path = o.tokenizer;
  if (tok_path.empty()) {
    fs::path folder = fs::is_directory(o.model) ? fs::path(o.model) : fs::path();
    tok_path = !folder.empty() && fs::exists(folder / "tokenizer.json")
                   ? (folder / "tokenizer.json").string()
                   : default_tokenizer_path();
  }
  m.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_file(tok_path));
  if (m.tokenizer->vocab_size() > m.config.vocab_size) {
    spdlog::warn("tokenizer has {} tokens, the model's vocabulary {}: ids beyond it are invalid",
                 m.tokenizer->vocab_size(), m.config.vocab_size);
  }

  if (o.device == "null") {
    // Only the KV shape matters to the scheduler; no weights are loaded and no memory is taken.
    KvCacheShape kv = kv_cache_shape_for(o, m.config);
    m.executor = std::make_unique<NullExecutor>(kv, m.config.vocab_size, m.config.eos_token_ids);
    spdlog::info(
        "model {} on the null executor (no weights, meaningless tokens, zero step time): "
        "{} KV blocks of {} tokens, loaded in {:.2f} s",
        m.config.name, kv.num_blocks, kv.block_size, seconds_since(t0));
    return m;
  }

  std::string format = o.load_format;
  if (format == "auto") {
    format = fs::is_directory(o.model) &&
                     (fs::exists(fs::path(o.model) / "model.safetensors") ||
                      fs::exists(fs::path(o.model) / "model.safetensors.index.json"))
                 ? "safetensors"
                 : "dummy";
  }
  if (format == "safetensors") {
    m.weights = load_safetensors_weights(o.model, m.config);
  } else {
    m.weights = make_dummy_weights(m.config, o.seed);
  }

  if (o.device == "cuda") {
#if PACELINE_HAVE_CUDA
    if (!cuda_device_available()) fail("--device cuda: {}", cuda_device_description());
    CudaExecutorOptions co;
    co.block_size = o.block_size;
    if (!o.kv_cache_memory.empty()) {
      co.kv_cache_bytes = parse_byte_size(o.kv_cache_memory, "--kv-cache-memory");
    }
    co.gpu_memory_utilization = o.gpu_memory_utilization;
    co.enforce_eager = o.enforce_eager;
    // The scheduler's default sizes (max_num_seqs 256); another padded size the scheduler asks
    // for is captured on first use.
    co.cudagraph_sizes = default_cudagraph_capture_sizes(256);
    m.executor = std::make_unique<CudaExecutor>(m.config, *m.weights, co);
    KvCacheShape kv = m.executor->kv_cache_shape();
    spdlog::info(
        "model {} ({:.1f}M parameters, {} weights) on cuda: {} KV blocks of {} tokens, "
        "loaded in {:.2f} s",
        m.config.name, static_cast<double>(m.config.num_parameters()) / 1e6, format, kv.num_blocks,
        kv.block_size, seconds_since(t0));
    return m;
#else
    fail(
        "--device cuda: this build has no CUDA executor (nvcc was not found when it was "
        "configured)");
#endif
  }
  KvCacheShape kv = kv_cache_shape_for(o, m.config);
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  m.executor = std::make_unique<CpuExecutor>(m.config, *m.weights, kv, std::max(1, threads));
  spdlog::info(
      "model {} ({:.1f}M parameters, {} weights) on cpu: {} KV blocks of {} tokens, "
      "{} threads, loaded in {:.2f} s",
      m.config.name, static_cast<double>(m.config.num_parameters()) / 1e6, format, kv.num_blocks,
      kv.block_size, threads, seconds_since(t0));
  return m;
}

}  // namespace paceline
