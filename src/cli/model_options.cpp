#include "cli/model_options.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "base/log.h"
#include "base/resources.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/nccl_library.h"
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
                 "tokenizer.json or its folder (default: the model folder's, else the tokenizer "
                 "of the model's family fetched by setup: Qwen3 or Llama-3.1)");
  cmd.add_option("--chat-template", o.chat_template,
                 "Jinja chat template file (default: the tokenizer folder's tokenizer_config.json "
                 "chat_template, or its chat_template.jinja)");
  cmd.add_option("--device", o.device,
                 "cpu | cuda | null (null: zero-cost executor for measuring the server's own "
                 "overhead; tokens are meaningless)")
      ->check(CLI::IsMember({"cpu", "cuda", "null"}))
      ->capture_default_str();
  cmd.add_option("--kv-cache-memory", o.kv_cache_memory,
                 "bytes for the KV cache, e.g. 512M or 4G (default: 256M on the CPU; on cuda, "
                 "what --gpu-memory-utilization leaves)");
  cmd.add_option("--kv-offloading-size", o.kv_offloading_size,
                 "GiB of host memory for a second KV tier: cached blocks leaving the KV cache "
                 "are kept there and loaded back instead of recomputed (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd.add_option("--kv-cache-dtype", o.kv_cache_dtype,
                 "KV cache element type: auto (bfloat16 on cuda, float32 on the CPU), bf16, or fp8 "
                 "(cuda: e4m3, unscaled; twice the tokens in the same memory)")
      ->check(CLI::IsMember({"auto", "bf16", "bfloat16", "fp8", "fp8_e4m3"}))
      ->capture_default_str();
  cmd.add_option("--prefill-attention-dtype", o.prefill_attention_dtype,
                 "prefill attention's Q.K^T and P.V: auto (bf16, or fp8 when "
                 "ATOM_USE_FLYDSL_FP8_PREFILL_ATTN=1), bf16, or fp8 (cuda, compute capability 8.9+: "
                 "e4m3 tensor cores, less exact, and for now slower than bf16 on the H200; docs/cuda.md)")
      ->check(CLI::IsMember({"auto", "bf16", "fp8"}))
      ->capture_default_str();
  cmd.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "cuda: fraction of the GPU's memory for weights, activations and the KV cache "
                 "(ignored with --kv-cache-memory)")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  cmd.add_flag("--enforce-eager", o.enforce_eager, "cuda: run decode eagerly, no CUDA graphs");
  cmd.add_option("--block-size", o.block_size, "tokens per KV block")->capture_default_str();
  cmd.add_option("--threads", o.threads, "CPU threads (0: all cores; serve keeps 4 for its I/O and request threads)")->capture_default_str();
  cmd.add_option("--tensor-parallel-size", o.tensor_parallel_size,
                 "(-tp) ranks the model is split into (attention heads, KV heads, MLP columns, "
                 "vocabulary); cpu: computed in turn, the arithmetic of tensor parallelism; cuda: "
                 "1 only (one GPU)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
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

bool wants_fp8_kv_cache(const ModelOptions& o) {
  return o.kv_cache_dtype == "fp8" || o.kv_cache_dtype == "fp8_e4m3";
}

PrefillAttentionDtype resolve_prefill_attention_dtype(const ModelOptions& o) {
  const std::string& flag = o.prefill_attention_dtype;
  if (flag == "bf16" || flag == "fp8") return {flag == "fp8", "--prefill-attention-dtype " + flag};
  if (flag != "auto") {
    fail("--prefill-attention-dtype {}: expected auto, bf16 or fp8", flag);
  }
  // ATOM's switch for its FP8 prefill attention (its Kimi-K3 AgentX recipe sets it), honoured so
  // that the recipe's environment asks paceline for the same thing.
  constexpr const char* kAtomEnv = "ATOM_USE_FLYDSL_FP8_PREFILL_ATTN";
  const char* env = std::getenv(kAtomEnv);
  const std::string value = env != nullptr ? env : "";
  if (value == "1") return {true, fmt::format("{}=1", kAtomEnv)};
  if (value.empty() || value == "0") return {false, "--prefill-attention-dtype auto"};
  fail("{}={}: expected 0 or 1 (or pass --prefill-attention-dtype bf16 or fp8)", kAtomEnv, value);
}

namespace {

// The tokenizer scripts/setup fetches for the model's family: the shipped Qwen3 and Llama-3.x
// configs then serve with their own vocabulary and chat template.
std::string default_tokenizer_path(const ModelConfig& config) {
  const bool llama = config.arch == ModelArch::kLlama;
  const std::string folder = llama ? "third_party/llama3_1-tokenizer" : "third_party/qwen3-tokenizer";
  if (auto p = find_resource(folder + "/tokenizer.json")) return p->string();
  fail("no tokenizer found for {} ({}): pass --tokenizer, or run scripts/setup to fetch the {} "
       "tokenizer",
       config.name, model_arch_name(config.arch), llama ? "Llama-3.1" : "Qwen3");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int64_t kv_offloading_bytes(double gib) {
  if (!(gib >= 0)) fail("--kv-offloading-size must be 0 or more GiB (got {})", gib);
  const auto bytes = static_cast<int64_t>(gib * 1073741824.0);
  const int64_t available = sysconf(_SC_AVPHYS_PAGES) * sysconf(_SC_PAGESIZE);
  if (bytes > available) {
    fail("--kv-offloading-size {} GiB: this machine has {:.1f} GiB of memory available", gib,
         static_cast<double>(available) / 1073741824.0);
  }
  return bytes;
}

// Host-tier blocks of the CPU and null executors (float32 KV, as their KV cache); the CUDA
// executor is given the bytes and sizes its own blocks.
int64_t host_kv_blocks_for(const ModelOptions& o, const ModelConfig& config) {
  if (o.kv_offloading_size <= 0) return 0;
  const int64_t block_bytes = config.kv_bytes_per_token(sizeof(float)) * o.block_size;
  const int64_t blocks = kv_offloading_bytes(o.kv_offloading_size) / block_bytes;
  if (blocks < 1) {
    fail("--kv-offloading-size {} GiB holds no KV block of {} bytes", o.kv_offloading_size,
         block_bytes);
  }
  return blocks;
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

// `auto` reads the weights of a Hugging Face folder; a config file or a shipped name has none
// to read and gets dummy ones. A folder without weights is an error rather than a silent
// random model.
std::string weight_format(const ModelOptions& o) {
  if (o.load_format != "auto") return o.load_format;
  const fs::path dir(o.model);
  if (!fs::is_directory(dir)) return "dummy";
  if (fs::exists(dir / "model.safetensors") || fs::exists(dir / "model.safetensors.index.json")) {
    return "safetensors";
  }
  fail("--model {}: the folder has no weights (model.safetensors or "
       "model.safetensors.index.json); pass --load-format dummy to run it with random weights",
       o.model);
}

// A tokenizer that does not belong to the model produces wrong text: ids the model has no
// embedding for, or end-of-sequence ids that are ordinary words to the tokenizer.
void check_tokenizer_fits(const ModelConfig& config, const Tokenizer& tokenizer) {
  if (tokenizer.vocab_size() > config.vocab_size) {
    fail("the tokenizer ({}) has {} tokens but the model {} only {} (vocab_size): its ids past "
         "{} have no embedding, so the model cannot read or write them; pass the model's own "
         "tokenizer with --tokenizer",
         tokenizer.source(), tokenizer.vocab_size(), config.name, config.vocab_size,
         config.vocab_size - 1);
  }
  for (int64_t id : config.eos_token_ids) {
    if (id >= tokenizer.vocab_size()) continue;  // a padding row of the embedding: never text
    const auto token = static_cast<int32_t>(id);
    if (!tokenizer.is_special(token) && !tokenizer.is_added(token)) {
      fail("the model {} ends sequences at eos_token_id {}, which the tokenizer ({}) reads as the "
           "ordinary token '{}': the tokenizer does not belong to this model; pass its own with "
           "--tokenizer",
           config.name, id, tokenizer.source(), tokenizer.id_to_token(token));
    }
  }
}

std::shared_ptr<const ChatTemplate> load_chat_template(const ModelOptions& o,
                                                       const std::string& tokenizer_path) {
  if (!o.chat_template.empty()) {
    return std::make_shared<const ChatTemplate>(ChatTemplate::from_file(o.chat_template, tokenizer_path));
  }
  std::optional<ChatTemplate> t = ChatTemplate::from_tokenizer_folder(tokenizer_path);
  if (!t) {
    spdlog::warn("no chat template beside {}: chat requests will be refused; pass --chat-template FILE",
                 tokenizer_path);
    return nullptr;
  }
  return std::make_shared<const ChatTemplate>(std::move(*t));
}

// --prefill-attention-dtype resolved, refused off the CUDA executor, and logged with what decided
// it.
PrefillAttentionDtype checked_prefill_attention_dtype(const ModelOptions& o) {
  const PrefillAttentionDtype prefill = resolve_prefill_attention_dtype(o);
  if (prefill.fp8 && o.device != "cuda") {
    fail("{}: FP8 prefill attention runs only on the CUDA executor (the {} executor computes "
         "attention in float32){}", prefill.source, o.device,
         o.prefill_attention_dtype == "auto" ? "; pass --prefill-attention-dtype bf16 to override "
                                               "the environment"
                                             : "");
  }
  spdlog::info("prefill attention: {} ({})", prefill.fp8 ? "fp8" : "bf16", prefill.source);
  return prefill;
}

#if PACELINE_HAVE_CUDA
std::unique_ptr<Executor> make_cuda_executor(const ModelOptions& o, const LoadedModel& m,
                                             const SchedulerConfig& engine) {
  CudaExecutorOptions co = cuda_executor_options(o);
  if (!cuda_device_available()) fail("--device cuda: {}", cuda_device_description());
  co.max_num_batched_tokens = engine.max_num_batched_tokens;
  co.max_model_len = engine.max_model_len;
  co.host_kv_bytes = kv_offloading_bytes(o.kv_offloading_size);
  co.max_num_seqs = engine.max_num_seqs;
  // The sizes the scheduler pads decode batches to; another padded size is captured on first use.
  co.cudagraph_sizes =
      engine.cudagraph_capture_sizes.empty()
          ? default_cudagraph_capture_sizes(static_cast<int32_t>(engine.max_num_seqs))
          : engine.cudagraph_capture_sizes;
  return std::make_unique<CudaExecutor>(m.config, *m.weights, co);
}
#endif

}  // namespace

#if PACELINE_HAVE_CUDA
CudaExecutorOptions cuda_executor_options(const ModelOptions& o) {
  CudaExecutorOptions co;
  co.block_size = o.block_size;
  if (!o.kv_cache_memory.empty()) {
    co.kv_cache_bytes = parse_byte_size(o.kv_cache_memory, "--kv-cache-memory");
  }
  co.gpu_memory_utilization = o.gpu_memory_utilization;
  co.enforce_eager = o.enforce_eager;
  co.fp8_kv_cache = wants_fp8_kv_cache(o);
  co.fp8_prefill_attention = checked_prefill_attention_dtype(o).fp8;
  return co;
}
#endif

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
                   : default_tokenizer_path(m.config);
  }
  m.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_file(tok_path));
  check_tokenizer_fits(m.config, *m.tokenizer);
  m.chat_template = load_chat_template(o, tok_path);
  if (m.chat_template) spdlog::info("chat template: {}", m.chat_template->origin());
  if (o.device == "null") {
    spdlog::info("model {}: no weights for the null executor, loaded in {:.2f} s", m.config.name,
                 seconds_since(t0));
    return m;
  }
  const std::string format = weight_format(o);
  m.weights = format == "safetensors" ? load_safetensors_weights(o.model, m.config)
                                      : make_dummy_weights(m.config, o.seed);
  spdlog::info("model {} ({:.1f}M parameters, {} weights), loaded in {:.2f} s", m.config.name,
               static_cast<double>(m.config.num_parameters()) / 1e6, format, seconds_since(t0));
  return m;
}

std::unique_ptr<Executor> make_executor(const ModelOptions& o, const LoadedModel& m,
                                        [[maybe_unused]] const SchedulerConfig& engine) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Executor> executor;
  if (o.device != "cuda" && o.kv_cache_dtype != "auto") {
    fail("--kv-cache-dtype {}: only the CUDA executor chooses its KV element type (the {} "
         "executor keeps float32 KV)", o.kv_cache_dtype, o.device);
  }
  // The CUDA executor's options resolve it (cuda_executor_options), the others refuse fp8.
  if (o.device != "cuda") checked_prefill_attention_dtype(o);
  if (o.tensor_parallel_size > 1 && o.device != "cpu") {
    // What CUDA ranks will load first (docs/tensor-parallel.md): say whether it is there.
    std::string nccl_state;
    if (o.device == "cuda") {
      try {
        const auto nccl = nccl::Library::load();
        nccl_state = fmt::format(" (NCCL {} loads from {})",
                                 nccl::version_string(nccl->version()), nccl->path());
      } catch (const Error& e) {
        nccl_state = fmt::format(" (and {})", e.what());
      }
    }
    fail("--tensor-parallel-size {}: the {} executor runs on one device; only --device cpu "
         "splits the model (into ranks computed in turn); the CUDA ranks are built but stay off "
         "until they have run on a machine of several GPUs{}", o.tensor_parallel_size, o.device,
         nccl_state);
  }
  if (o.device == "null") {
    // Only the KV shape matters to the scheduler; no memory is taken.
    executor = std::make_unique<NullExecutor>(kv_cache_shape_for(o, m.config), m.config.vocab_size,
                                              m.config.eos_token_ids,
                                              host_kv_blocks_for(o, m.config));
  } else if (o.device == "cuda") {
#if PACELINE_HAVE_CUDA
    executor = make_cuda_executor(o, m, engine);
#else
    fail(
        "--device cuda: this build has no CUDA executor (nvcc was not found when it was "
        "configured)");
#endif
  } else {
    const int threads =
        o.threads > 0 ? o.threads
                      : static_cast<int>(std::thread::hardware_concurrency()) - o.reserved_threads;
    executor = std::make_unique<CpuExecutor>(m.config, *m.weights, kv_cache_shape_for(o, m.config),
                                             std::max(1, threads), host_kv_blocks_for(o, m.config),
                                             o.tensor_parallel_size);
    spdlog::info("cpu: {} threads{}", std::max(1, threads),
                 o.tensor_parallel_size > 1
                     ? fmt::format(", the model split into {} tensor-parallel ranks",
                                   o.tensor_parallel_size)
                     : "");
  }
  const ExecutorCapabilities x = executor->capabilities();
  spdlog::info("{} executor: {} KV blocks of {} tokens ({}), {} decode graphs, built in {:.2f} s",
               o.device, x.kv.num_blocks, x.kv.block_size, x.kv_dtype, x.graph_sizes.size(),
               seconds_since(t0));
  return executor;
}

}  // namespace paceline
