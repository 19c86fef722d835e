#pragma once
// The CUDA Executor: runs a StepPlan on one GPU (CudaModel), replaying a CUDA graph for decode
// plans of a captured size, and samples one token per requested logit row. Greedy rows are
// sampled on the GPU (argmax, lowest index on ties, as sample_greedy); the others copy their row
// of float32 logits back and go through sample_token, so every executor draws the same token
// from the same logits. No CUDA header here: the CLI includes this from plain C++.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "model/config.h"
#include "model/weights.h"

namespace paceline {

namespace cuda {
class RankCollectives;
}

struct CudaExecutorOptions {
  int device = 0;
  int64_t block_size = 16;
  // KV cache bytes; unset: what gpu_memory_utilization of the device leaves after the weights
  // and the activations of max_num_batched_tokens rows (vLLM's semantics).
  std::optional<int64_t> kv_cache_bytes;
  double gpu_memory_utilization = 0.9;
  int64_t max_num_batched_tokens = 16384;
  // Longest context a sequence may reach (0: the model's max_position_embeddings).
  int64_t max_model_len = 0;
  // Decode batch sizes captured as CUDA graphs at startup; empty or enforce_eager: none.
  std::vector<int32_t> cudagraph_sizes;
  bool enforce_eager = false;
  // Bytes of pinned host memory for the host KV tier (--kv-offloading-size); 0: none. The
  // executor divides it by its own block size (its KV element size) and reports the blocks.
  int64_t host_kv_bytes = 0;
  // --kv-cache-dtype fp8: the KV cache in FP8 e4m3 (1 byte per element, unscaled) instead of
  // bfloat16; twice the blocks in the same memory, half the bytes each decode step reads.
  bool fp8_kv_cache = false;
  // --prefill-attention-dtype fp8: prefill attention's products on FP8 tensor cores (e4m3
  // operands, float32 accumulation; attention_prefill_fp8.cu) for the head sizes its kernel
  // covers. Needs compute capability 8.9 or newer: the constructor refuses an older GPU.
  bool fp8_prefill_attention = false;
  // The most sequences a step decodes (--max-num-seqs): at kSmallMAutoRows or fewer the decode
  // rows take the small-M GEMM (gemm.h; PACELINE_GEMM_SMALL_M=1 or 0 overrides).
  int64_t max_num_seqs = 256;
  // Tensor parallelism (docs/tensor-parallel.md): the ranks, rank r on devices[r] (empty:
  // device, device + 1, ...; devices[0] must be `device`). Rank 0 runs on the caller's thread,
  // the others on threads of their own, joined by NCCL unless rank_collectives gives each rank's
  // collectives (the GPU tests' ranks on one device), which must outlive the executor. For now
  // more than one rank runs eagerly (no CUDA graphs) and without a host KV tier.
  int tensor_parallel_size = 1;
  std::vector<int> devices;
  std::function<cuda::RankCollectives*(int rank)> rank_collectives;
};

// Whether a CUDA device is present and usable (false in a build without CUDA).
bool cuda_device_available();
// One line naming the device (e.g. "NVIDIA H200, 139.8 GiB, sm_90"), or why there is none.
std::string cuda_device_description();

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(const ModelConfig& config, const Weights& weights,
               const CudaExecutorOptions& options);
  ~CudaExecutor() override;

  StepResult execute(const StepPlan& plan) override;
  // The KV cache (bfloat16 or fp8_e4m3), the graphs captured at startup, activations for
  // max_num_batched_tokens.
  ExecutorCapabilities capabilities() const override;

  // The float32 logits of the last executed plan's logit rows, [rows][vocab] (copied back; for
  // tests and checks). Rows with logit_bias or penalties hold them applied (they are applied in
  // place just before the draw, gpu_logits_processing.h).
  std::vector<float> last_logits() const;
  // Captured sizes, and whether the last plan replayed a graph.
  const std::vector<int32_t>& graph_sizes() const;
  bool last_step_used_graph() const;
  // GPU time of the last execute, from CUDA events on its stream: the input upload, the forward
  // (or graph replay) and the sampled tokens' copy back, without host-side preparation.
  double last_gpu_ms() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paceline
