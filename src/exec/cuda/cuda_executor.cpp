#include "exec/cuda/cuda_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <span>

#include <fmt/format.h>

#include "base/error.h"
#include "base/log.h"
#include "exec/cuda/activations.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_model.h"
#include "exec/cuda/decode_graphs.h"
#include "exec/cuda/gpu_logits_processing.h"
#include "exec/cuda/host_kv_tier.h"
#include "exec/cuda/rank_collectives.h"
#include "exec/cuda/rank_worker.h"
#include "exec/cuda/step_inputs.h"
#include "exec/kv_load_faults.h"
#include "exec/nccl_communicators.h"
#include "exec/nccl_library.h"
#include "exec/sampler.h"

namespace paceline {

using namespace paceline::cuda;

bool cuda_device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::string cuda_device_description() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return fmt::format("no CUDA device ({})", cudaGetErrorString(e));
  if (count == 0) return "no CUDA device";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "CUDA device 0 unreadable";
  return fmt::format("{}, {:.1f} GiB, sm_{}{}, {} SMs", p.name,
                     static_cast<double>(p.totalGlobalMem) / (1 << 30), p.major, p.minor,
                     p.multiProcessorCount);
}

namespace {

// The stream and the step's timing events, created first and destroyed last (after the cuBLAS
// handle and the graphs that use them).
struct StreamAndEvents {
  explicit StreamAndEvents(int device) {
    PACELINE_CUDA_CHECK(cudaSetDevice(device));
    PACELINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    PACELINE_CUDA_CHECK(cudaEventCreate(&start));
    PACELINE_CUDA_CHECK(cudaEventCreate(&end));
  }
  ~StreamAndEvents() {
    if (start != nullptr) cudaEventDestroy(start);
    if (end != nullptr) cudaEventDestroy(end);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  StreamAndEvents(const StreamAndEvents&) = delete;
  StreamAndEvents& operator=(const StreamAndEvents&) = delete;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
};

// The tensor-parallel ranks' shape, devices and collectives (one rank: the shape of one, no
// collectives). NCCL's communicators are made here unless the options give each rank's.
struct TensorParallelRanks {
  TensorParallelRanks(const ModelConfig& config, const CudaExecutorOptions& o)
      : shape(tensor_parallel_shape(config, std::max(o.tensor_parallel_size, 1))) {
    const int world = shape.world;
    if (o.tensor_parallel_size < 1) {
      fail("--tensor-parallel-size {}: at least 1", o.tensor_parallel_size);
    }
    devices = o.devices;
    if (devices.empty()) {
      for (int r = 0; r < world; ++r) devices.push_back(o.device + r);
    }
    if (static_cast<int>(devices.size()) != world || devices[0] != o.device) {
      fail("tensor parallelism: {} ranks need {} devices starting at device {}, got {}", world,
           world, o.device, devices.size());
    }
    if (world == 1) return;
    if (o.rank_collectives) {
      for (int r = 0; r < world; ++r) {
        collectives.push_back(o.rank_collectives(r));
        if (collectives.back() == nullptr) fail("tensor parallelism: rank {} has no collectives", r);
      }
      return;
    }
    nccl_library = nccl::Library::load();
    communicators = std::make_unique<nccl::Communicators>(*nccl_library, devices);
    for (int r = 0; r < world; ++r) {
      owned.push_back(std::make_unique<NcclRankCollectives>(*communicators, r));
      collectives.push_back(owned.back().get());
    }
  }
  RankCollectives* of(int rank) const {
    return collectives.empty() ? nullptr : collectives[static_cast<size_t>(rank)];
  }

  TensorParallelShape shape;
  std::vector<int> devices;
  std::unique_ptr<nccl::Library> nccl_library;
  std::unique_ptr<nccl::Communicators> communicators;
  std::vector<std::unique_ptr<RankCollectives>> owned;
  std::vector<RankCollectives*> collectives;
};

}  // namespace

struct CudaExecutor::Impl {
  Impl(const ModelConfig& config, const Weights& weights, const CudaExecutorOptions& o)
      : options(o), cuda(o.device), stream(cuda.stream), step_start(cuda.start),
        step_end(cuda.end), ranks(config, o),
        model(config, weights, stream, ranks.shape, 0, ranks.of(0)) {
    for (int r = 1; r < ranks.shape.world; ++r) {
      workers.push_back(std::make_unique<RankWorker>(ranks.devices[static_cast<size_t>(r)],
                                                     config, weights, ranks.shape, r,
                                                     ranks.of(r)));
    }
    PACELINE_CUDA_CHECK(cudaSetDevice(o.device));
  }
  ~Impl() {
    graphs.reset();
    workers.clear();
  }

  CudaExecutorOptions options;
  StreamAndEvents cuda;
  cudaStream_t stream;
  cudaEvent_t step_start;
  cudaEvent_t step_end;
  TensorParallelRanks ranks;
  CudaModel model;  // rank 0
  std::vector<std::unique_ptr<RankWorker>> workers;  // ranks 1 and up
  StepLimits limits;
  StepBuffers eager_inputs;
  Activations eager_acts;
  std::unique_ptr<DecodeGraphs> graphs;
  std::unique_ptr<HostKvTier> host_tier;
  KvLoadFaults faults;  // PACELINE_FAILPOINT_KV_LOAD, with a host tier
  PinnedBuffer host_tokens;
  DeviceBuffer sample_params;  // SampleRow per sampled row
  DeviceBuffer sample_out;
  PinnedBuffer sample_params_host;
  PinnedBuffer host_sampled;
  GpuLogitsProcessing logits_processing;  // logit_bias and penalties, before the draw
  // Rows that asked for logprobs (launch_logprobs): their LogprobRow, and what it computed.
  DeviceBuffer logprob_rows;
  DeviceBuffer logprob_out;
  PinnedBuffer logprob_rows_host;
  PinnedBuffer host_logprobs;
  // Launches launch_logprobs for the rows that asked, after the sampler (it reads the chosen
  // tokens on the device), and the copy of its results to host_logprobs; their LogprobRows.
  std::vector<LogprobRow> enqueue_logprobs(const StepPlan& plan, int64_t vocab);
  // A step whose loads failed: the copies that were enqueued finish, and no forward runs.
  StepResult without_forward(const StepPlan& plan, std::vector<BlockCopy> failed);
  // Runs rank 0's part of what every worker was just started on, then waits for every worker
  // (their tasks may read what the caller owns, so all are waited for whatever one threw);
  // rethrows rank 0's exception, else the first worker's.
  void on_every_rank(const std::function<void()>& rank0);
  // The plan's KV copies on every rank's stream, ahead of its forward; the loads refused on any
  // rank (a failed load fails the step on all of them: no rank runs the forward).
  std::vector<BlockCopy> transfer_kv(const KvTransfers& t);
  // FP8 cache: the clamp counter's value after each step (read with the step's tokens), and
  // its value before the step, so that a step reports what it clamped.
  PinnedBuffer host_fp8_clamped;
  unsigned long long fp8_clamped_seen = 0;
  float last_gpu_ms = 0.0f;
  Activations* last_acts = nullptr;
  int last_num_logits = 0;
  bool last_used_graph = false;
};

void CudaExecutor::Impl::on_every_rank(const std::function<void()>& rank0) {
  std::exception_ptr error;
  try {
    rank0();
  } catch (...) {
    error = std::current_exception();
  }
  for (auto& w : workers) {
    try {
      w->wait();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

namespace {

// What the eager path reserves at startup besides max_num_batched_tokens rows (it grows past
// these when a step needs more).
constexpr int64_t kEagerDecodeRows = 1024;
constexpr int64_t kEagerLogitRows = 1024;
constexpr int kSampleRowsPerLaunch = 256;  // rows of one sampling launch

// Each rank's KV cache: --kv-cache-memory as given (vLLM's: one GPU's), or what
// --gpu-memory-utilization leaves on rank 0's device after the weights (every rank's, when
// several share it: `sharing` ranks) and the activations, shared out among the ranks there.
KvCacheShape size_kv_cache(const CudaModel& model, const CudaExecutorOptions& o,
                           int64_t graph_rows, int sharing) {
  const ModelConfig& c = model.rank_config();  // this rank's widths
  const int splits = decode_splits_for(o.fp8_kv_cache).max_splits;
  const int64_t block_bytes = c.kv_bytes_per_token(o.fp8_kv_cache ? 1 : 2) * o.block_size;
  int64_t bytes = 0;
  if (o.kv_cache_bytes) {
    bytes = *o.kv_cache_bytes;
  } else {
    if (!(o.gpu_memory_utilization > 0.0 && o.gpu_memory_utilization <= 1.0)) {
      fail("--gpu-memory-utilization: {} is not in (0, 1]", o.gpu_memory_utilization);
    }
    size_t free_bytes = 0, total_bytes = 0;
    PACELINE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const auto used = static_cast<int64_t>(total_bytes - free_bytes);
    const int64_t activations =
        (o.max_num_batched_tokens + graph_rows) * Activations::bytes_per_row(c) +
        (kEagerDecodeRows + graph_rows) * Activations::bytes_per_decode_row(c, splits) +
        (kEagerLogitRows + graph_rows) *
            Activations::bytes_per_logit_row(c, model.tensor_parallel().world) +
        (int64_t{1} << 30);
    bytes = (static_cast<int64_t>(o.gpu_memory_utilization * static_cast<double>(total_bytes)) -
             used - sharing * activations) /
            sharing;
    spdlog::info("cuda: {:.2f} GiB total, {:.2f} GiB in use after the weights, {:.2f} GiB kept "
                 "for activations; KV cache gets {:.2f} GiB{} at --gpu-memory-utilization {}",
                 static_cast<double>(total_bytes) / (1 << 30),
                 static_cast<double>(used) / (1 << 30),
                 static_cast<double>(activations) / (1 << 30),
                 static_cast<double>(std::max<int64_t>(bytes, 0)) / (1 << 30),
                 sharing > 1 ? fmt::format(" a rank ({} ranks share the device)", sharing)
                             : std::string(),
                 o.gpu_memory_utilization);
  }
  KvCacheShape kv{bytes / block_bytes, o.block_size};
  if (kv.num_blocks < 1) {
    fail("KV cache: {} bytes hold no block of {} bytes (raise --gpu-memory-utilization or "
         "--kv-cache-memory)", bytes, block_bytes);
  }
  return kv;
}

// FP8 prefill attention when asked for: refused below compute capability 8.9 (no FP8 tensor
// cores), and bf16 for a head size the FP8 kernel does not cover, said in the log.
PrefillPrecision prefill_precision_for(const CudaModel& model, const CudaExecutorOptions& o) {
  if (!o.fp8_prefill_attention) {
    spdlog::info("cuda: prefill attention in bf16");
    return PrefillPrecision::bf16;
  }
  int major = 0, minor = 0;
  PACELINE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, o.device));
  PACELINE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, o.device));
  if (major * 10 + minor < 89) {
    fail("--prefill-attention-dtype fp8: {} has compute capability {}.{}; FP8 tensor cores need "
         "8.9 or newer (Ada, Hopper); use --prefill-attention-dtype bf16",
         cuda_device_description(), major, minor);
  }
  const AttentionShape s = model.attention_shape();
  if (!prefill_attention_fp8_supported(s)) {
    spdlog::warn("cuda: --prefill-attention-dtype fp8: the FP8 kernel does not cover head_dim {} "
                 "with {} query heads per KV head; prefill attention stays bf16",
                 s.head_dim, s.num_heads / s.num_kv_heads);
    return PrefillPrecision::bf16;
  }
  spdlog::info("cuda: prefill attention in fp8 (q, K, P and V in e4m3, float32 accumulation)");
  return PrefillPrecision::fp8;
}

}  // namespace

CudaExecutor::CudaExecutor(const ModelConfig& config, const Weights& weights,
                           const CudaExecutorOptions& options)
    : impl_(std::make_unique<Impl>(config, weights, options)) {
  Impl& m = *impl_;
  if (options.block_size < 1) fail("block size {} must be positive", options.block_size);
  m.model.set_small_m_gemm(gemm_small_m_for(options.max_num_seqs));
  spdlog::info("cuda: decode rows through the {} GEMM (at most {} a step), prefill rows through "
               "cuBLASLt's algorithm for {} rows",
               m.model.small_m_gemm() ? "small-M" : "cuBLASLt", options.max_num_seqs,
               m.model.prefill_gemm_plan() ? kPrefillPlanRows : kGemmRows);
  std::vector<int32_t> sizes;
  const int world = m.ranks.shape.world;
  if (!options.enforce_eager) {
    for (int32_t s : options.cudagraph_sizes) {
      if (s > 0) sizes.push_back(s);
    }
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  }
  const int64_t graph_rows = sizes.empty() ? 0 : sizes.back();
  const auto sharing = static_cast<int>(
      std::count(m.ranks.devices.begin(), m.ranks.devices.end(), options.device));
  m.model.allocate_kv_cache(size_kv_cache(m.model, options, graph_rows, sharing),
                            options.fp8_kv_cache);
  // Every rank holds as many blocks as rank 0 (the same KV heads each).
  for (auto& w : m.workers) w->allocate_kv_cache(m.model.kv_cache_shape(), options.fp8_kv_cache);

  const KvCacheShape kv = m.model.kv_cache_shape();
  if (options.host_kv_bytes > 0) {
    // vLLM's --kv-offloading-size: the size summed over the ranks, each holding its KV heads'
    // part of every host block (a rank's block is 1 / world of the model's).
    const int64_t block_bytes = m.model.kv_bytes_per_block() * world;
    const int64_t host_blocks = options.host_kv_bytes / block_bytes;
    if (host_blocks < 1) {
      fail("--kv-offloading-size: {} bytes hold no KV block of {} bytes{}", options.host_kv_bytes,
           block_bytes, world > 1 ? fmt::format(" ({} ranks' parts)", world) : std::string());
    }
    const auto t0 = std::chrono::steady_clock::now();
    m.host_tier = std::make_unique<HostKvTier>(host_blocks, m.model.kv_block_layout());
    for (auto& w : m.workers) w->create_host_tier(host_blocks);
    m.faults = KvLoadFaults::from_env();
    spdlog::info("cuda: host KV tier of {} blocks ({:.2f} GiB pinned{}) in {:.2f} s", host_blocks,
                 static_cast<double>(host_blocks * block_bytes) / (1 << 30),
                 world > 1 ? fmt::format(" over {} ranks", world) : std::string(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  m.limits.vocab_size = config.vocab_size;
  m.limits.num_blocks = kv.num_blocks;
  m.limits.block_size = kv.block_size;
  m.model.set_prefill_precision(prefill_precision_for(m.model, options));
  for (auto& w : m.workers) w->configure(m.model.small_m_gemm(), m.model.prefill_precision());
  m.limits.prefill_tile_rows =
      prefill_tile_rows(m.model.attention_shape(), m.model.prefill_precision());
  m.eager_acts.reserve(m.model.rank_config(), options.max_num_batched_tokens, kEagerDecodeRows,
                       kEagerLogitRows, m.model.decode_splits().max_splits, world);

  const int64_t max_len = options.max_model_len > 0 ? options.max_model_len
                                                     : config.max_position_embeddings;
  const int64_t max_ctx = std::min(max_len, kv.num_blocks * kv.block_size);
  const int64_t max_blocks_per_seq = (max_ctx + kv.block_size - 1) / kv.block_size;
  m.graphs = std::make_unique<DecodeGraphs>(m.model, m.stream, m.limits, max_blocks_per_seq);
  for (auto& w : m.workers) w->create_graphs(m.limits, max_blocks_per_seq);
  if (!sizes.empty()) {
    // Every rank captures the same sizes at once: the eager run before each capture meets the
    // other ranks' collectives.
    for (auto& w : m.workers) w->start_capture(sizes);
    double seconds = 0;
    m.on_every_rank([&] { seconds = m.graphs->capture(sizes); });
    spdlog::info("cuda: captured {} decode CUDA graphs (batch {}..{}){} in {:.2f} s",
                 sizes.size(), sizes.front(), sizes.back(),
                 world > 1 ? fmt::format(" on each of {} ranks", world) : std::string(), seconds);
  }
  spdlog::info("cuda: {} on {}: weights {:.2f} GiB, KV cache {} blocks of {} tokens ({:.2f} GiB, {})",
               config.name, cuda_device_description(),
               static_cast<double>(m.model.weight_bytes()) / (1 << 30), kv.num_blocks,
               kv.block_size,
               static_cast<double>(kv.num_blocks * m.model.kv_bytes_per_block()) / (1 << 30),
               m.model.kv_fp8() ? "fp8_e4m3" : "bfloat16");
}

CudaExecutor::~CudaExecutor() = default;

ExecutorCapabilities CudaExecutor::capabilities() const {
  ExecutorCapabilities x;
  x.kv = impl_->model.kv_cache_shape();
  x.kv_dtype = impl_->model.kv_fp8() ? "fp8_e4m3" : "bfloat16";
  x.kv_element_bytes = impl_->model.kv_element_bytes();
  x.graph_sizes = impl_->graphs->sizes();
  x.max_num_batched_tokens = impl_->options.max_num_batched_tokens;
  x.num_host_kv_blocks = impl_->host_tier ? impl_->host_tier->num_blocks() : 0;
  return x;
}

const std::vector<int32_t>& CudaExecutor::graph_sizes() const { return impl_->graphs->sizes(); }

bool CudaExecutor::last_step_used_graph() const { return impl_->last_used_graph; }

double CudaExecutor::last_gpu_ms() const { return impl_->last_gpu_ms; }

namespace {

RowLogprobs to_row_logprobs(const LogprobResult& r, int32_t num_top, int64_t vocab) {
  RowLogprobs out;
  out.chosen = {r.token, r.logprob};
  const auto k = static_cast<int32_t>(std::min<int64_t>(num_top, vocab));
  for (int32_t i = 0; i < k; ++i) out.top.push_back({r.top_tokens[i], r.top_logprobs[i]});
  return out;
}

}  // namespace

std::vector<LogprobRow> CudaExecutor::Impl::enqueue_logprobs(const StepPlan& plan,
                                                             int64_t vocab) {
  Impl& m = *this;
  std::vector<LogprobRow> rows;
  int row = 0, sampled = 0;
  for (const ScheduledSeq& s : plan.seqs) {
    for (int32_t i = 0; i < s.num_logits; ++i, ++row) {
      const int32_t sampled_index = s.sampling.greedy() ? -1 : sampled++;
      if (s.num_logprobs < 0) continue;
      LogprobRow r;
      r.row = row;
      r.sampled = sampled_index;
      r.num_top = std::min(s.num_logprobs, kMaxGpuTopLogprobs);
      rows.push_back(r);
    }
  }
  if (rows.empty()) return rows;
  const size_t row_bytes = rows.size() * sizeof(LogprobRow);
  const size_t out_bytes = rows.size() * sizeof(LogprobResult);
  m.logprob_rows_host.reserve(row_bytes);
  std::memcpy(m.logprob_rows_host.as<void>(), rows.data(), row_bytes);
  m.logprob_rows.reserve(row_bytes);
  m.logprob_out.reserve(out_bytes);
  m.host_logprobs.reserve(out_bytes);
  PACELINE_CUDA_CHECK(cudaMemcpyAsync(m.logprob_rows.as<void>(), m.logprob_rows_host.as<void>(),
                                      row_bytes, cudaMemcpyHostToDevice, m.stream));
  const int32_t* greedy = m.last_acts->sampled.as<int32_t>();
  const int32_t* drawn = sampled > 0 ? m.sample_out.as<int32_t>() : greedy;
  PACELINE_CUDA_CHECK(launch_logprobs(m.last_acts->logits.as<float>(), vocab,
                                      m.logprob_rows.as<LogprobRow>(),
                                      static_cast<int>(rows.size()), greedy, drawn,
                                      m.logprob_out.as<LogprobResult>(), m.stream));
  PACELINE_CUDA_CHECK(cudaMemcpyAsync(m.host_logprobs.as<void>(), m.logprob_out.as<void>(),
                                      out_bytes, cudaMemcpyDeviceToHost, m.stream));
  return rows;
}

std::vector<BlockCopy> CudaExecutor::Impl::transfer_kv(const KvTransfers& t) {
  if (t.empty()) return {};
  for (auto& w : workers) w->start_kv_transfers(t);
  std::vector<BlockCopy> failed;
  on_every_rank([&] { failed = enqueue_kv_transfers(host_tier.get(), &faults, t, stream); });
  for (auto& w : workers) {
    for (const BlockCopy& c : w->kv_transfers_failed()) {
      if (std::find(failed.begin(), failed.end(), c) == failed.end()) failed.push_back(c);
    }
  }
  return failed;
}

StepResult CudaExecutor::Impl::without_forward(const StepPlan& plan,
                                               std::vector<BlockCopy> failed) {
  PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  last_num_logits = 0;
  return result_without_forward(plan, std::move(failed));
}

StepResult CudaExecutor::execute(const StepPlan& plan) {
  const auto start = std::chrono::steady_clock::now();
  Impl& m = *impl_;
  PACELINE_CUDA_CHECK(cudaSetDevice(m.options.device));  // the engine calls from its own thread
  const int64_t vocab = m.model.config().vocab_size;

  int num_logits = 0;
  m.last_used_graph = m.graphs->fits(plan);
  if (m.last_used_graph) {
    const int32_t size = plan.padded_batch_size;
    if (!m.graphs->captured(size)) {  // a padded size between the sizes captured at startup
      const auto t0 = std::chrono::steady_clock::now();
      for (auto& w : m.workers) w->start_capture_size(size);
      m.on_every_rank([&] { m.graphs->capture_size(size); });
      spdlog::info("cuda: captured the decode graph of batch {} on first use in {:.3f} s", size,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    HostStep h = host_step_padded(plan, m.limits, size);
    PACELINE_CUDA_CHECK(cudaEventRecord(m.step_start, m.stream));
    std::vector<BlockCopy> failed = m.transfer_kv(plan.kv_transfers);
    if (!failed.empty()) return m.without_forward(plan, std::move(failed));
    // Every rank replays the same size; the graphs' collectives meet.
    for (auto& w : m.workers) w->start_replay(h, size);
    m.on_every_rank([&] { m.graphs->replay(h, size); });
    m.last_acts = &m.graphs->activations();
    num_logits = static_cast<int>(plan.seqs.size());
  } else {
    HostStep h = host_step_from_plan(plan, m.limits);
    num_logits = static_cast<int>(h.logit_rows.size());
    m.eager_acts.reserve(m.model.rank_config(), h.rows(),
                         static_cast<int64_t>(h.decode_rows.size()), std::max(1, num_logits),
                         m.model.decode_splits().max_splits, m.ranks.shape.world);
    PACELINE_CUDA_CHECK(cudaEventRecord(m.step_start, m.stream));
    std::vector<BlockCopy> failed = m.transfer_kv(plan.kv_transfers);
    if (!failed.empty()) return m.without_forward(plan, std::move(failed));
    StepCounts counts{h.rows(), num_logits, static_cast<int>(h.decode_rows.size()),
                      h.num_tiles()};
    // The other ranks' forwards start first: each collective needs every rank.
    for (auto& w : m.workers) w->start_forward(h, counts);
    m.on_every_rank([&] {
      m.eager_inputs.upload(h, m.stream);
      m.model.forward(counts, m.eager_inputs, m.eager_acts);
    });
    m.last_acts = &m.eager_acts;
  }
  m.last_num_logits = num_logits;

  // Greedy tokens for every row; float32 logits only for the rows that sample.
  m.host_tokens.reserve(static_cast<size_t>(std::max(1, num_logits)) * sizeof(int32_t));
  PACELINE_CUDA_CHECK(cudaMemcpyAsync(m.host_tokens.as<int32_t>(),
                                      m.last_acts->sampled.as<int32_t>(),
                                      static_cast<size_t>(num_logits) * sizeof(int32_t),
                                      cudaMemcpyDeviceToHost, m.stream));
  if (const unsigned long long* clamped = m.model.fp8_clamped_counter()) {
    m.host_fp8_clamped.reserve(sizeof(unsigned long long));
    PACELINE_CUDA_CHECK(cudaMemcpyAsync(m.host_fp8_clamped.as<void>(), clamped,
                                        sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                        m.stream));
  }
  m.logits_processing.enqueue(plan, m.last_acts->logits.as<float>(), vocab, m.stream);
  // Rows that sample (temperature > 0) are drawn on the GPU by launch_sample, with the host
  // sampler's semantics and its uniform number u = sample_uniform(seed, position).
  std::vector<SampleRow> sample_rows;
  {
    int row = 0;
    for (const ScheduledSeq& s : plan.seqs) {
      const int64_t first_position =
          s.start_pos + static_cast<int64_t>(s.tokens.size()) - s.num_logits;
      for (int32_t i = 0; i < s.num_logits; ++i, ++row) {
        if (s.sampling.greedy()) continue;
        SampleRow r;
        r.temperature = s.sampling.temperature;
        r.top_p = s.sampling.top_p;
        r.top_k = s.sampling.top_k;
        r.min_p = s.sampling.min_p;
        r.u = sample_uniform(s.seed, first_position + i);
        r.row = row;
        sample_rows.push_back(r);
      }
    }
  }
  const int num_sampled = static_cast<int>(sample_rows.size());
  if (num_sampled > 0) {
    const size_t param_bytes = sample_rows.size() * sizeof(SampleRow);
    m.sample_params_host.reserve(param_bytes);
    std::memcpy(m.sample_params_host.as<void>(), sample_rows.data(), param_bytes);
    m.sample_params.reserve(param_bytes);
    // kSampleRowsPerLaunch rows a launch, so a speculative verify step of many sequences takes
    // several.
    const int per_launch = std::min(num_sampled, kSampleRowsPerLaunch);
    m.sample_out.reserve(sample_rows.size() * sizeof(int32_t));
    m.host_sampled.reserve(sample_rows.size() * sizeof(int32_t));
    PACELINE_CUDA_CHECK(cudaMemcpyAsync(m.sample_params.as<void>(),
                                        m.sample_params_host.as<void>(), param_bytes,
                                        cudaMemcpyHostToDevice, m.stream));
    for (int first = 0; first < num_sampled; first += per_launch) {
      PACELINE_CUDA_CHECK(launch_sample(
          m.last_acts->logits.as<float>(), vocab, m.sample_params.as<SampleRow>() + first,
          std::min(per_launch, num_sampled - first),
          m.sample_out.as<int32_t>() + first, m.stream));
    }
    PACELINE_CUDA_CHECK(cudaMemcpyAsync(m.host_sampled.as<int32_t>(), m.sample_out.as<int32_t>(),
                                        sample_rows.size() * sizeof(int32_t),
                                        cudaMemcpyDeviceToHost, m.stream));
  }
  const std::vector<LogprobRow> logprob_rows = m.enqueue_logprobs(plan, vocab);
  PACELINE_CUDA_CHECK(cudaEventRecord(m.step_end, m.stream));
  PACELINE_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  PACELINE_CUDA_CHECK(cudaEventElapsedTime(&m.last_gpu_ms, m.step_start, m.step_end));
  m.logits_processing.patch_greedy_tokens(m.host_tokens.as<int32_t>());

  StepResult result;
  result.step_id = plan.step_id;
  if (m.model.fp8_clamped_counter() != nullptr) {
    const unsigned long long total = *m.host_fp8_clamped.as<unsigned long long>();
    result.kv_fp8_clamped = static_cast<int64_t>(total - m.fp8_clamped_seen);
    if (m.fp8_clamped_seen == 0 && total > 0) {
      spdlog::warn("cuda: FP8 KV cache: {} K/V values beyond e4m3's +-448 were clamped in step "
                   "{} (counted in kv_cache_fp8_clamped_total; the cache is stored unscaled)",
                   total, plan.step_id);
    }
    m.fp8_clamped_seen = total;
  }
  result.seqs.reserve(plan.seqs.size());
  int row = 0;
  int next_sampled = 0;
  size_t next_logprobs = 0;
  for (const ScheduledSeq& s : plan.seqs) {
    SeqResult& out = result.seqs.emplace_back();
    out.request_id = s.request_id;
    for (int32_t i = 0; i < s.num_logits; ++i, ++row) {
      out.tokens.push_back(s.sampling.greedy() ? m.host_tokens.as<int32_t>()[row]
                                               : m.host_sampled.as<int32_t>()[next_sampled++]);
      if (s.num_logprobs >= 0) {
        out.logprobs.push_back(
            to_row_logprobs(m.host_logprobs.as<LogprobResult>()[next_logprobs],
                            logprob_rows[next_logprobs].num_top, vocab));
        ++next_logprobs;
      }
    }
  }
  result.step_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  return result;
}

std::vector<float> CudaExecutor::last_logits() const {
  const Impl& m = *impl_;
  std::vector<float> out(static_cast<size_t>(m.last_num_logits) *
                         static_cast<size_t>(m.model.config().vocab_size));
  if (m.last_acts != nullptr && !out.empty()) {
    PACELINE_CUDA_CHECK(cudaMemcpy(out.data(), m.last_acts->logits.as<float>(),
                                   out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  return out;
}

}  // namespace paceline
