#pragma once
// The analytic profile of a GPU: a step takes the larger of its bytes over the achievable memory
// bandwidth and its FLOPs over the matrix rate, plus a fixed per-step overhead. It stands in for a
// measured profile until one exists; docs/simulator.md states every assumption and its source.
//
// A forward is two kinds of kernels run one after the other, so the roofline is applied to each:
//   linear layers: max(weight bytes / bw, 2 * params * rows / rate(rows))
//   attention:     max(KV bytes read and written / bw, 4 * layers * q_size * pairs / attn_rate)
// with rate(M) = matrix_flops * M / (M + matrix_half_m): small-M GEMMs run far below peak. A
// decode that replays a CUDA graph pays `step_overhead_us`; any other step runs eagerly and pays
// the larger of its GPU time and the kernel launches of every layer.
//
// A tensor-parallel replica of N GPUs (docs/tensor-parallel.md's split) is priced per GPU: each
// reads weights / N (the norms are replicated), KV / N (its KV heads) and does FLOPs / N, then
// waits for the collectives, which nothing overlaps, of the values paceline's CUDA ranks exchange:
// the float32 residual's all-reduces of rows x hidden (the vocabulary-parallel embedding's, then
// two per layer) and one all-gather of the float32 logits (logit rows x vocab).
// A ring collective of S bytes takes 2 (N-1)/N S / busbw (all-reduce) or (N-1)/N S / busbw
// (all-gather) plus a fixed latency per call: nccl-tests' bus-bandwidth definition.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "sim/cost_model.h"

namespace paceline::sim {

struct GpuSpec {
  std::string name;
  double memory_bytes = 0;               // device memory
  double copy_bandwidth = 0;             // bytes/s, device-to-device copy (read + written)
  double bandwidth_fraction = 0;         // of copy_bandwidth that a whole forward achieves
  double matrix_flops = 0;               // dense bf16 GEMM rate at large M, FLOP/s
  double matrix_half_m = 0;              // rows at which a GEMM runs at half that rate
  double attention_flops = 0;            // attention kernel rate, FLOP/s
  double step_overhead_us = 0;           // scheduling, input preparation, sampling: every step
  double eager_launch_us_per_layer = 0;  // kernel launches of one layer without a graph
  int64_t weight_element_bytes = 2;      // bf16
  int64_t kv_element_bytes = 2;          // bf16
  // Tensor parallelism's collectives (only a replica of 2 or more GPUs pays them): the ring's bus
  // bandwidth between the GPUs, bytes/s per direction as nccl-tests' all_reduce_perf reports
  // "busbw", and the fixed time of one call. 0: unknown, and `sim -tp N` with N > 1 is refused.
  double allreduce_bus_bandwidth = 0;
  double allreduce_latency_us = 0;
  std::vector<std::string> assumptions;  // where each figure comes from

  double bandwidth() const { return copy_bandwidth * bandwidth_fraction; }
};

// Named GPUs ("h200"); paceline::Error for any other name.
GpuSpec gpu_spec_named(const std::string& name);
bool is_named_gpu(const std::string& name);

// The profile file form: {"type": "roofline", "gpu": {...}}.
nlohmann::json gpu_spec_to_json(const GpuSpec& gpu);
GpuSpec gpu_spec_from_json(const nlohmann::json& j, const std::string& where);

// Bytes of the weights a forward reads: every parameter except an untied input embedding table
// (a lookup touches only the rows of its tokens).
int64_t weight_bytes_read(const ModelConfig& model, int64_t element_bytes);
// Bytes of the weights one GPU of a TP-`tensor_parallel_size` replica holds: its 1/N of every
// projection, of the input embedding and of the lm_head (vocabulary rows), and whole copies of
// the norms (docs/tensor-parallel.md's split). At N = 1: every parameter.
int64_t weight_bytes_per_gpu(const ModelConfig& model, int64_t element_bytes,
                             int tensor_parallel_size);
// KV cache memory of the replica: N x (memory * gpu_memory_utilization - one GPU's weights), so
// that each GPU holds its KV/N heads of every block. Throws when a GPU has nothing left, and when
// N does not split the model (tensor_parallel_shape's message).
int64_t roofline_kv_cache_bytes(const GpuSpec& gpu, const ModelConfig& model,
                                double gpu_memory_utilization, int tensor_parallel_size = 1);

// Bytes of one value in the collectives of paceline's CUDA ranks: the residual they all-reduce and
// the logits they gather are float32.
inline constexpr double kCollectiveElementBytes = 4.0;

// Seconds of one ring all-reduce of `bytes` over `gpus` GPUs: 2 (N-1)/N bytes / bus_bandwidth +
// latency; 0 on one GPU.
double ring_all_reduce_seconds(double bytes, int gpus, double bus_bandwidth, double latency_s);
// Seconds of one ring all-gather whose result is `bytes` in all: (N-1)/N bytes / bus_bandwidth +
// latency; 0 on one GPU.
double ring_all_gather_seconds(double bytes, int gpus, double bus_bandwidth, double latency_s);

class RooflineCostModel final : public CostModel {
 public:
  // A replica of `tensor_parallel_size` GPUs; throws when it does not split the model, or when
  // N > 1 and the GPU has no all-reduce bandwidth.
  RooflineCostModel(GpuSpec gpu, ModelConfig model, int tensor_parallel_size = 1);

  int64_t step_time_ns(const StepWork& work) const override;
  std::string describe() const override;

  // The parts of a step's time, in seconds, for tests and the docs.
  struct Parts {
    double linear_s = 0;
    double attention_s = 0;
    double communication_s = 0;  // the all-reduces and the logits' all-gather (TP > 1)
    double overhead_s = 0;
    double total_s = 0;
  };
  Parts parts(const StepWork& work) const;
  const GpuSpec& gpu() const { return gpu_; }
  int tensor_parallel_size() const { return tp_; }

 private:
  GpuSpec gpu_;
  ModelConfig model_;
  int tp_ = 1;
  // Per GPU:
  double body_params_ = 0;  // per-token linear-layer parameters (no embedding, no LM head)
  double head_params_ = 0;  // LM head
  double weight_bytes_ = 0;
  double kv_bytes_per_token_ = 0;
  double attention_flops_per_pair_ = 0;
};

}  // namespace paceline::sim
