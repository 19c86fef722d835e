#include "cli/check.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "model/config.h"
#include "model/tensor_parallel_shape.h"
#include "model/weights.h"
#include "sched/cudagraph_sizes.h"
#if PACELINE_HAVE_CUDA
#include <cuda_runtime.h>

#include "exec/cuda/batch_invariance.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/cupti_timeline.h"
#include "exec/cuda/same_device_collectives.h"
#include "exec/kernel_timeline.h"
#endif

namespace paceline {

void add_check_options(CLI::App& cmd, CheckOptions& o) {
  add_model_options(cmd, o.model);
  cmd.add_option("--prompts", o.prompts, "prompts of the batch-invariance check")
      ->capture_default_str();
  cmd.add_option("--steps", o.steps, "greedy tokens per prompt")->capture_default_str();
  cmd.add_option("--batch-sizes", o.batch_sizes, "batch sizes compared with batch 1")
      ->capture_default_str();
  cmd.add_flag("--timing", o.timing, "also time decode steps and prefills (CUDA events)");
  cmd.add_flag("--skip-invariance", o.skip_invariance, "only the timings");
  cmd.add_option("--decode-batches", o.decode_batches, "timed decode batch sizes")
      ->capture_default_str();
  cmd.add_option("--decode-context", o.decode_context,
                 "tokens cached before every timed decode step (the decoded token's position; at "
                 "most the model's max_position_embeddings - 1)")
      ->capture_default_str();
  cmd.add_option("--prefill-lengths", o.prefill_lengths, "timed prefill lengths (one sequence)")
      ->capture_default_str();
  cmd.add_option("--mixed-chunk", o.mixed_chunk,
                 "also time each decode batch together with a prefill chunk of this many new "
                 "tokens (a mixed step; 0: not timed)")
      ->capture_default_str();
  cmd.add_option("--repeats", o.repeats, "timed repeats of each step (the median is reported)")
      ->capture_default_str();
  cmd.add_option("--max-num-seqs", o.max_num_seqs,
                 "the most sequences a step may decode, as serve's flag: the executor sizes its "
                 "CUDA graphs and chooses the decode rows' GEMM from it")
      ->capture_default_str();
  cmd.add_flag("--ranks-on-one-device", o.ranks_on_one_device,
               "with --tensor-parallel-size N: all N ranks on device 0, joined on that GPU "
               "instead of by NCCL over N GPUs (checks the split on one GPU; not a TP speed)");
  cmd.add_option("--kernel-timeline", o.kernel_timeline,
                 "with --timing: record every kernel of the timed steps (CUPTI, CUDA graphs "
                 "included) and write, per timed step, each kernel's time and the GPU's idle time "
                 "before it to this markdown file");
}

void check_decode_context(int64_t decode_context, const ModelConfig& config) {
  if (decode_context < 1) fail("--decode-context must be at least 1, got {}", decode_context);
  const int64_t window = config.max_position_embeddings;
  if (window > 0 && decode_context >= window) {
    fail("--decode-context {}: the timed decode step's token would be at position {}, past the "
         "{} positions (0 to {}) of {}; the largest --decode-context it takes is {}",
         decode_context, decode_context, window, window - 1, config.name, window - 1);
  }
}

namespace {

std::vector<int> parse_ints(const std::string& text, const char* flag) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      out.push_back(std::stoi(item));
    } catch (const std::exception&) {
      fail("{}: '{}' is not a number", flag, item);
    }
    if (out.back() < 1) fail("{}: {} must be positive", flag, out.back());
  }
  if (out.empty()) fail("{}: empty list", flag);
  return out;
}

// The flags' values and combinations, before anything loads.
void check_flags(const CheckOptions& o) {
  if (o.max_num_seqs < 1) fail("--max-num-seqs must be at least 1, got {}", o.max_num_seqs);
  const auto within = [&](const std::string& list, const char* flag) {
    for (int batch : parse_ints(list, flag)) {
      if (batch > o.max_num_seqs) {
        fail("{} {}: batch {} is more than --max-num-seqs {} lets a step decode", flag, list, batch,
             o.max_num_seqs);
      }
    }
  };
  if (!o.skip_invariance) within(o.batch_sizes, "--batch-sizes");
  if (o.timing) within(o.decode_batches, "--decode-batches");
  if (o.mixed_chunk < 0) {
    fail("--mixed-chunk must be 0 (off) or a number of tokens, got {}", o.mixed_chunk);
  }
  if (!o.kernel_timeline.empty() && !o.timing) {
    fail("--kernel-timeline {}: it records the timed steps, so it needs --timing",
         o.kernel_timeline);
  }
  if (o.model.tensor_parallel_size < 1) {
    fail("--tensor-parallel-size must be at least 1, got {}", o.model.tensor_parallel_size);
  }
  if (o.ranks_on_one_device && o.model.tensor_parallel_size == 1) {
    fail("--ranks-on-one-device puts tensor-parallel ranks on one GPU: it needs "
         "--tensor-parallel-size above 1");
  }
}

}  // namespace

#if PACELINE_HAVE_CUDA
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

constexpr double kCopyBytesPerSecond = 4.275e12;  // H200 device-to-device, ../shared/guide/gpu.md
constexpr double kGemmFlopsPerSecond = 848e12;    // cuBLAS bf16 4096^3 on the same card

// Bytes of the matrices a forward reads (all weights but the embedding table, plus lm_head).
double weight_bytes(const ModelConfig& c) {
  const double embed = static_cast<double>(c.vocab_size * c.hidden_size);
  const double params = static_cast<double>(c.num_parameters());
  return 2.0 * (c.tie_word_embeddings ? params : params - embed);
}

struct Timed {
  double gpu_ms = 0;
  double wall_ms = 0;
  bool graph = false;
};

// --kernel-timeline: the recorder, and the sections written so far.
struct KernelTimeline {
  cuda::CuptiTimeline* cupti = nullptr;
  std::string markdown;
};

// The median of `repeats` timed runs of the plan after `warmup` untimed ones; with a kernel
// timeline, the timed runs' kernels summed up under `label`.
Timed time_plan(CudaExecutor& ex, const StepPlan& plan, int warmup, int repeats,
                KernelTimeline* timeline = nullptr, const std::string& label = "") {
  for (int i = 0; i < warmup; ++i) ex.execute(plan);
  if (timeline != nullptr) timeline->cupti->begin_window();
  std::vector<double> gpu, wall;
  for (int i = 0; i < repeats; ++i) {
    StepResult r = ex.execute(plan);
    gpu.push_back(ex.last_gpu_ms());
    wall.push_back(static_cast<double>(r.step_time_ns) / 1e6);
  }
  if (timeline != nullptr) {
    uint64_t dropped = 0;
    std::vector<KernelRecord> kernels = timeline->cupti->end_window(&dropped);
    timeline->markdown += kernel_timeline_markdown(
        summarize_kernel_timeline(std::move(kernels), repeats),
        fmt::format("{} (median GPU time {:.3f} ms by CUDA events)", label, median(gpu)));
    if (dropped > 0) {
      timeline->markdown +=
          fmt::format("CUPTI dropped {} records: the table misses kernels.\n\n", dropped);
    }
  }
  return {median(gpu), median(wall), ex.last_step_used_graph()};
}

void run_timing(CudaExecutor& ex, const ModelConfig& c, const CheckOptions& o,
                KernelTimeline* timeline) {
  const int64_t bs = ex.kv_cache_shape().block_size;
  int32_t next_block = 0;
  auto table_for = [&](int64_t positions) {
    std::vector<int32_t> t;
    while (static_cast<int64_t>(t.size()) * bs < positions) t.push_back(next_block++);
    if (next_block > ex.kv_cache_shape().num_blocks) {
      fail("timing: the KV cache holds {} blocks of {} tokens, this step needs more (raise "
           "--kv-cache-memory or lower --decode-batches/--decode-context)",
           ex.kv_cache_shape().num_blocks, bs);
    }
    return t;
  };
  std::vector<std::vector<int32_t>> tables;
  tables.reserve(4096);
  const std::vector<int32_t> graph_sizes = ex.graph_sizes();
  // The floor reads the KV at the cache's own element size (1 byte for --kv-cache-dtype fp8).
  const int64_t kv_element_bytes = ex.capabilities().kv_element_bytes;
  std::printf(
      "| step | median GPU ms (CUDA events) | median wall ms | floor ms | floor / measured |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: |\n");
  for (int batch : parse_ints(o.decode_batches, "--decode-batches")) {
    next_block = 0;
    tables.clear();
    StepPlan prefill;
    for (int i = 0; i < batch; ++i) {
      tables.push_back(table_for(o.decode_context + 1));
      ScheduledSeq s;
      s.request_id = static_cast<uint64_t>(i);
      s.tokens.resize(static_cast<size_t>(o.decode_context));
      for (size_t t = 0; t < s.tokens.size(); ++t) {
        s.tokens[t] = static_cast<int32_t>((t * 7919 + static_cast<size_t>(i) * 104729) %
                                           static_cast<size_t>(c.vocab_size));
      }
      s.block_table = tables.back();
      s.sampling.temperature = 0.0;
      prefill.seqs.push_back(s);
    }
    // Fill the KV cache with real keys and values, as many sequences per step as fit in the
    // scheduler's default token budget (16,384; at least one).
    const size_t per_step =
        std::max<size_t>(1, std::min<size_t>(8, 16384 / static_cast<size_t>(o.decode_context)));
    for (size_t first = 0; first < prefill.seqs.size(); first += per_step) {
      StepPlan part;
      for (size_t i = first; i < std::min(prefill.seqs.size(), first + per_step); ++i)
        part.seqs.push_back(prefill.seqs[i]);
      ex.execute(part);
    }
    StepPlan decode;
    decode.kind = ForwardKind::kDecode;
    decode.padded_batch_size = padded_batch_size(graph_sizes, batch);
    for (ScheduledSeq s : prefill.seqs) {
      s.start_pos = o.decode_context;
      s.tokens = {1};
      decode.seqs.push_back(s);
    }
    Timed t = time_plan(ex, decode, 3, o.repeats, timeline,
                        fmt::format("decode batch {}, context {}", batch, o.decode_context));
    const double kv = static_cast<double>(batch) * static_cast<double>(o.decode_context + 1) *
                      static_cast<double>(c.kv_bytes_per_token(kv_element_bytes));
    const double floor_ms = (weight_bytes(c) + kv) / kCopyBytesPerSecond * 1e3;
    std::printf("| decode batch %d, context %lld%s | %.3f | %.3f | %.3f | %.0f%% |\n", batch,
                static_cast<long long>(o.decode_context), t.graph ? ", CUDA graph" : ", eager",
                t.gpu_ms, t.wall_ms, floor_ms, 100.0 * floor_ms / t.gpu_ms);
    // The same step with every row sampled on the GPU (temperature 1, top-p 0.95) instead of
    // greedy: the difference is the sampler's cost.
    for (ScheduledSeq& s : decode.seqs) {
      s.sampling.temperature = 1.0;
      s.sampling.top_p = 0.95;
      s.seed = s.request_id + 1;
    }
    Timed ts = time_plan(ex, decode, 3, o.repeats, timeline,
                         fmt::format("decode batch {}, context {}, sampled (T 1, top-p 0.95)",
                                     batch, o.decode_context));
    std::printf("| decode batch %d, sampled (T 1, top-p 0.95) | %.3f | %.3f | %.3f | %.0f%% |\n",
                batch, ts.gpu_ms, ts.wall_ms, floor_ms, 100.0 * floor_ms / ts.gpu_ms);
    if (o.mixed_chunk > 0) {
      // The greedy decode rows and a new sequence's first mixed_chunk tokens in one eager step.
      StepPlan mixed;
      mixed.kind = ForwardKind::kMixed;
      for (ScheduledSeq s : decode.seqs) {
        s.sampling = SamplingParams{};
        s.sampling.temperature = 0.0;
        mixed.seqs.push_back(s);
      }
      tables.push_back(table_for(o.mixed_chunk));
      ScheduledSeq p;
      p.request_id = static_cast<uint64_t>(batch);
      p.tokens.resize(static_cast<size_t>(o.mixed_chunk));
      for (size_t t = 0; t < p.tokens.size(); ++t) {
        p.tokens[t] = static_cast<int32_t>((t * 7919 + 29) % static_cast<size_t>(c.vocab_size));
      }
      p.block_table = tables.back();
      p.sampling.temperature = 0.0;
      mixed.seqs.push_back(p);
      Timed tm = time_plan(
          ex, mixed, 2, std::min(o.repeats, 10), timeline,
          fmt::format("decode batch {} + a prefill chunk of {} tokens", batch, o.mixed_chunk));
      std::printf("| decode batch %d + prefill chunk of %lld tokens, eager | %.3f | %.3f | — | — |\n",
                  batch, static_cast<long long>(o.mixed_chunk), tm.gpu_ms, tm.wall_ms);
    }
  }
  for (int n : parse_ints(o.prefill_lengths, "--prefill-lengths")) {
    next_block = 0;
    tables.clear();
    tables.push_back(table_for(n));
    StepPlan plan;
    ScheduledSeq s;
    s.tokens.resize(static_cast<size_t>(n));
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      s.tokens[t] = static_cast<int32_t>((t * 7919 + 13) % static_cast<size_t>(c.vocab_size));
    }
    s.block_table = tables.back();
    s.sampling.temperature = 0.0;
    plan.seqs.push_back(s);
    Timed t =
        time_plan(ex, plan, 1, n > 8192 ? 2 : 5, timeline, fmt::format("prefill {} tokens", n));
    // Matrices: 2 * (params without embeddings) per token; attention: QK^T and PV over the
    // causal triangle, 2 * 2 * n^2 / 2 * heads * head_dim per layer.
    const double dn = n;
    const double gemm = 2.0 * (weight_bytes(c) / 2.0) * dn;
    const double attn = 2.0 * dn * dn * static_cast<double>(c.num_attention_heads * c.head_dim) *
                        static_cast<double>(c.num_hidden_layers);
    const double floor_ms = (gemm + attn) / kGemmFlopsPerSecond * 1e3;
    std::printf("| prefill %d tokens | %.3f | %.3f | %.3f | %.0f%% |\n", n, t.gpu_ms, t.wall_ms,
                floor_ms, 100.0 * floor_ms / t.gpu_ms);
  }
  std::fflush(stdout);
}

std::unique_ptr<Weights> load_weights(const ModelOptions& m, const ModelConfig& config) {
  if (m.load_format == "safetensors" ||
      (m.load_format == "auto" && std::filesystem::is_directory(m.model) &&
       (std::filesystem::exists(std::filesystem::path(m.model) / "model.safetensors") ||
        std::filesystem::exists(std::filesystem::path(m.model) /
                                "model.safetensors.index.json")))) {
    return load_safetensors_weights(m.model, config);
  }
  return make_dummy_weights(config, m.seed);
}

}  // namespace

int run_check(const CheckOptions& o) {
  if (o.model.device != "cuda") fail("paceline check runs on the GPU: pass --device cuda");
  ModelConfig config = model_config_load(o.model.model);
  if (o.timing) check_decode_context(o.decode_context, config);
  check_flags(o);
  tensor_parallel_shape(config, o.model.tensor_parallel_size);  // a size that does not split
  // The model flags' options, as serve and generate take them (--prefill-attention-dtype
  // included: this command built its own and left it out).
  CudaExecutorOptions co = cuda_executor_options(o.model);
  if (!cuda_device_available()) fail("--device cuda: {}", cuda_device_description());
  std::unique_ptr<Weights> weights = load_weights(o.model, config);
  co.max_num_seqs = o.max_num_seqs;
  co.cudagraph_sizes = default_cudagraph_capture_sizes(static_cast<int32_t>(o.max_num_seqs));
  // Tensor parallelism: NCCL over devices 0..N-1 (the executor's own), or every rank on this GPU.
  const int world = o.model.tensor_parallel_size;
  co.tensor_parallel_size = world;
  std::unique_ptr<cuda::SameDeviceCollectives> one_device;
  int gpus = 0;
  if (world > 1 && !o.ranks_on_one_device && cudaGetDeviceCount(&gpus) == cudaSuccess &&
      gpus < world) {
    fail("--tensor-parallel-size {}: this machine has {} GPU{} (NCCL puts one rank on each); "
         "--ranks-on-one-device checks the split on one", world, gpus, gpus == 1 ? "" : "s");
  }
  if (o.ranks_on_one_device) {
    co.devices.assign(static_cast<size_t>(world), co.device);
    one_device = std::make_unique<cuda::SameDeviceCollectives>(world);
    co.rank_collectives = [&one_device](int r) { return one_device->rank(r); };
  }
  if (world > 1) {
    std::printf("tensor parallel: %d ranks %s\n", world,
                o.ranks_on_one_device ? "on device 0 (joined on it, not by NCCL)"
                                      : "on devices 0.. (NCCL)");
  }
  // The kernel recorder starts before the executor captures its CUDA graphs, so that their
  // kernels are recorded too.
  std::unique_ptr<cuda::CuptiTimeline> cupti;
  if (!o.kernel_timeline.empty()) cupti = cuda::CuptiTimeline::start();
  CudaExecutor executor(config, *weights, co);

  int status = 0;
  if (!o.skip_invariance) {
    BatchInvarianceOptions bo;
    bo.num_prompts = o.prompts;
    bo.steps = o.steps;
    bo.batch_sizes = parse_ints(o.batch_sizes, "--batch-sizes");
    bo.graph_sizes = executor.graph_sizes();
    bo.vocab_size = config.vocab_size;
    bo.seed = o.model.seed + 1;
    BatchInvarianceReport report = check_batch_invariance(executor, bo);
    std::printf("batch invariance, %s, %d prompts x %d greedy steps:\n%s", config.name.c_str(),
                bo.num_prompts, bo.steps, report.summary().c_str());
    std::printf("batch invariance: %s\n", report.ok() ? "PASS" : "FAIL");
    if (!report.ok()) status = 1;
  }
  if (o.timing) {
    KernelTimeline timeline{cupti.get(), fmt::format("# Kernel timeline: {} on the GPU\n\n"
                                                     "`paceline check --timing`'s timed steps, "
                                                     "kernel by kernel (CUPTI).\n\n",
                                                     config.name)};
    run_timing(executor, config, o, cupti != nullptr ? &timeline : nullptr);
    if (cupti != nullptr) {
      std::ofstream out(o.kernel_timeline);
      out << timeline.markdown;
      if (!out) fail("--kernel-timeline {}: cannot write the file", o.kernel_timeline);
      std::printf("kernel timeline: %s\n", o.kernel_timeline.c_str());
    }
  }
  return status;
}
#else
int run_check(const CheckOptions& o) {
  const ModelConfig config = model_config_load(o.model.model);
  if (o.timing) check_decode_context(o.decode_context, config);
  check_flags(o);
  tensor_parallel_shape(config, o.model.tensor_parallel_size);
  fail(
      "paceline check needs the CUDA executor, and this build has none (nvcc was not found "
      "when it was configured)");
}
#endif

}  // namespace paceline
