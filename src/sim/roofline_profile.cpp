#include "sim/roofline_profile.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "model/tensor_parallel_shape.h"

namespace paceline::sim {

namespace {

// ../shared/guide/gpu.md: figures measured on the project's H200 (2026-11-29); the rest are
// stated assumptions, each with its reason.
GpuSpec h200() {
  GpuSpec g;
  g.name = "h200";
  g.memory_bytes = 143771.0 * 1024 * 1024;
  g.copy_bandwidth = 4.275e12;
  g.bandwidth_fraction = 0.8;
  g.matrix_flops = 750e12;
  g.matrix_half_m = 128;
  g.attention_flops = 400e12;
  g.step_overhead_us = 500;
  g.eager_launch_us_per_layer = 100;
  // Leads, not measurements: no machine of two GPUs has been lent (issue 18). Replace both with
  // nccl-tests' all_reduce_perf on two H200s of the x2 kind (busbw at 16 KB-64 MB, and the
  // time of the smallest sizes), with NCCL_NVLS_ENABLE=0.
  g.allreduce_bus_bandwidth = 450e9;
  g.allreduce_latency_us = 10;
  g.assumptions = {
      "memory 143,771 MiB: the project's H200 (../shared/guide/gpu.md)",
      "copy_bandwidth 4.275 TB/s: measured device-to-device copy, bytes read + written",
      "bandwidth_fraction 0.8: a whole forward streams weights and KV at 80% of the copy "
      "ceiling (llama.cpp reaches 77% at batch 1 on the same card, gpt-fast 68%)",
      "matrix_flops 750 TFLOP/s: bf16 dense at large M, below the 848 TFLOP/s of a cuBLAS "
      "4096^3 GEMM because a model's GEMMs are narrower (k/v projections) and the rest of the "
      "layer (norms, RoPE, activation) is not free",
      "matrix_half_m 128: a GEMM with M rows runs at M / (M + 128) of that rate (small-M GEMMs "
      "cannot fill 132 SMs)",
      "attention_flops 400 TFLOP/s: paged varlen flash attention, bf16, head_dim 128",
      "step_overhead_us 500: scheduling, input preparation and sampling per step, chosen so "
      "that Qwen3-8B decode at batch 1 lands near llama.cpp's measured 5.00 ms",
      "eager_launch_us_per_layer 100: launches of one layer's kernels without a CUDA graph; an "
      "eager step takes the larger of its GPU time and the launches",
      "KV cache = memory * gpu_memory_utilization - weights (no activation reserve)",
      "allreduce_bus_bandwidth 450 GB/s: LEAD, NOT MEASURED: NVIDIA's published NVLink figure "
      "for the H200 SXM (900 GB/s per GPU, both directions together), halved for one direction; "
      "nccl-tests' busbw at large sizes reaches less than this peak. Tensor parallelism only",
      "allreduce_latency_us 10: LEAD, NOT MEASURED: the order of a small NCCL all-reduce within "
      "one NVLink node. Both must be replaced by all_reduce_perf (nccl-tests) on two H200s",
      "not modelled: activation traffic, overlap of communication with compute, power and "
      "clock throttling",
  };
  return g;
}

double positive(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number()) fail("{}: gpu.{} must be a number", where, key);
  const double v = j[key].get<double>();
  if (!(v > 0) || !std::isfinite(v)) fail("{}: gpu.{} must be positive, got {}", where, key, v);
  return v;
}

double non_negative(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return 0;
  if (!j[key].is_number()) fail("{}: gpu.{} must be a number", where, key);
  const double v = j[key].get<double>();
  if (!(v >= 0) || !std::isfinite(v)) fail("{}: gpu.{} must be >= 0, got {}", where, key, v);
  return v;
}

}  // namespace

bool is_named_gpu(const std::string& name) {
  return name == "h200";
}

GpuSpec gpu_spec_named(const std::string& name) {
  if (name == "h200") return h200();
  fail("unknown GPU '{}' (known: h200); pass a profile file for another", name);
}

nlohmann::json gpu_spec_to_json(const GpuSpec& g) {
  return {{"name", g.name},
          {"memory_bytes", g.memory_bytes},
          {"copy_bandwidth", g.copy_bandwidth},
          {"bandwidth_fraction", g.bandwidth_fraction},
          {"matrix_flops", g.matrix_flops},
          {"matrix_half_m", g.matrix_half_m},
          {"attention_flops", g.attention_flops},
          {"step_overhead_us", g.step_overhead_us},
          {"eager_launch_us_per_layer", g.eager_launch_us_per_layer},
          {"weight_element_bytes", g.weight_element_bytes},
          {"kv_element_bytes", g.kv_element_bytes},
          {"allreduce_bus_bandwidth", g.allreduce_bus_bandwidth},
          {"allreduce_latency_us", g.allreduce_latency_us},
          {"assumptions", g.assumptions}};
}

GpuSpec gpu_spec_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) fail("{}: 'gpu' must be an object", where);
  GpuSpec g;
  g.name = j.value("name", std::string("gpu"));
  g.memory_bytes = positive(j, "memory_bytes", where);
  g.copy_bandwidth = positive(j, "copy_bandwidth", where);
  g.bandwidth_fraction = positive(j, "bandwidth_fraction", where);
  if (g.bandwidth_fraction > 1) fail("{}: gpu.bandwidth_fraction must be at most 1", where);
  g.matrix_flops = positive(j, "matrix_flops", where);
  g.matrix_half_m = non_negative(j, "matrix_half_m", where);
  g.attention_flops = positive(j, "attention_flops", where);
  g.step_overhead_us = non_negative(j, "step_overhead_us", where);
  g.eager_launch_us_per_layer = non_negative(j, "eager_launch_us_per_layer", where);
  g.weight_element_bytes = static_cast<int64_t>(j.value("weight_element_bytes", 2.0));
  g.kv_element_bytes = static_cast<int64_t>(j.value("kv_element_bytes", 2.0));
  g.allreduce_bus_bandwidth = non_negative(j, "allreduce_bus_bandwidth", where);
  g.allreduce_latency_us = non_negative(j, "allreduce_latency_us", where);
  if (g.weight_element_bytes < 1 || g.kv_element_bytes < 1) {
    fail("{}: gpu element sizes must be at least 1 byte", where);
  }
  if (j.contains("assumptions")) {
    g.assumptions = j["assumptions"].get<std::vector<std::string>>();
  }
  return g;
}

int64_t weight_bytes_read(const ModelConfig& m, int64_t element_bytes) {
  const int64_t embedding = m.tie_word_embeddings ? 0 : m.vocab_size * m.hidden_size;
  return (m.num_parameters() - embedding) * element_bytes;
}

namespace {

// A model's parameters by how tensor parallelism places them.
struct ParamSplit {
  double embedding = 0;  // the input embedding table (also the lm_head when tied)
  double linear = 0;     // every layer's q/k/v/o and gate/up/down: split over the GPUs
  double norms = 0;      // every norm: replicated
};

ParamSplit param_split(const ModelConfig& m) {
  ParamSplit p;
  p.embedding = static_cast<double>(m.vocab_size * m.hidden_size);
  const double hidden = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.q_size()), kv = static_cast<double>(m.kv_size());
  const double layers = static_cast<double>(m.num_hidden_layers);
  p.linear = layers * (hidden * q + 2 * hidden * kv + q * hidden +
                       3 * hidden * static_cast<double>(m.intermediate_size));
  p.norms = static_cast<double>(m.num_parameters()) - p.linear - p.embedding -
            (m.tie_word_embeddings ? 0.0 : p.embedding);
  return p;
}

}  // namespace

int64_t weight_bytes_per_gpu(const ModelConfig& m, int64_t element_bytes, int tp) {
  tensor_parallel_shape(m, tp);
  if (tp == 1) return m.num_parameters() * element_bytes;
  const ParamSplit p = param_split(m);
  const double n = tp;
  // The embedding's and the lm_head's vocabulary rows / N (a tied head is the embedding's rows).
  const double params =
      p.norms + p.linear / n + p.embedding / n + (m.tie_word_embeddings ? 0.0 : p.embedding / n);
  return static_cast<int64_t>(params) * element_bytes;
}

int64_t roofline_kv_cache_bytes(const GpuSpec& gpu, const ModelConfig& model,
                                double gpu_memory_utilization, int tp) {
  if (!(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1)) {
    fail("--gpu-memory-utilization must be in (0, 1], got {}", gpu_memory_utilization);
  }
  const double weights =
      static_cast<double>(weight_bytes_per_gpu(model, gpu.weight_element_bytes, tp));
  const double kv = gpu.memory_bytes * gpu_memory_utilization - weights;
  if (kv <= 0) {
    if (tp == 1) {
      fail("{} has {:.1f} GB at utilization {}, less than the {:.1f} GB of {}'s weights",
           gpu.name, gpu.memory_bytes * gpu_memory_utilization / 1e9, gpu_memory_utilization,
           weights / 1e9, model.name);
    }
    fail("{} has {:.1f} GB at utilization {}, less than the {:.1f} GB of {}'s weights each GPU "
         "holds at --tensor-parallel-size {}", gpu.name,
         gpu.memory_bytes * gpu_memory_utilization / 1e9, gpu_memory_utilization, weights / 1e9,
         model.name, tp);
  }
  return static_cast<int64_t>(kv) * tp;
}

double ring_all_reduce_seconds(double bytes, int gpus, double bus_bandwidth, double latency_s) {
  if (gpus <= 1) return 0;
  const double n = gpus;
  return 2.0 * (n - 1) / n * bytes / bus_bandwidth + latency_s;
}

double ring_all_gather_seconds(double bytes, int gpus, double bus_bandwidth, double latency_s) {
  if (gpus <= 1) return 0;
  const double n = gpus;
  return (n - 1) / n * bytes / bus_bandwidth + latency_s;
}

RooflineCostModel::RooflineCostModel(GpuSpec gpu, ModelConfig model, int tensor_parallel_size)
    : gpu_(std::move(gpu)), model_(std::move(model)), tp_(tensor_parallel_size) {
  tensor_parallel_shape(model_, tp_);
  if (tp_ > 1 && !(gpu_.allreduce_bus_bandwidth > 0)) {
    fail("--tensor-parallel-size {}: the profile of {} has no gpu.allreduce_bus_bandwidth (bytes/s "
         "per direction, nccl-tests' busbw) to price the all-reduces",
         tp_, gpu_.name);
  }
  // Per GPU: 1/N of every projection, of the LM head, of the KV heads and of the query heads;
  // the norms whole.
  const ParamSplit p = param_split(model_);
  const double n = tp_;
  head_params_ = p.embedding / n;
  body_params_ = p.linear / n + p.norms;
  weight_bytes_ = (body_params_ + head_params_) * static_cast<double>(gpu_.weight_element_bytes);
  kv_bytes_per_token_ = static_cast<double>(model_.kv_bytes_per_token(gpu_.kv_element_bytes)) / n;
  // Q.K^T and P.V, a multiply and an add each, over every query head of every layer.
  attention_flops_per_pair_ =
      4.0 * static_cast<double>(model_.num_hidden_layers * model_.q_size()) / n;
}

RooflineCostModel::Parts RooflineCostModel::parts(const StepWork& w) const {
  Parts p;
  if (w.num_seqs == 0) return p;
  const double bw = gpu_.bandwidth();
  const auto rows = static_cast<double>(w.tokens + w.padding_rows);
  const double rate = gpu_.matrix_flops * rows / (rows + gpu_.matrix_half_m);
  const double linear_flops =
      2.0 * body_params_ * rows +
      2.0 * head_params_ * static_cast<double>(w.logit_rows + w.padding_rows);
  p.linear_s = std::max(weight_bytes_ / bw, linear_flops / rate);

  // Every attended position's K and V are read once; the new tokens' K and V are written.
  const double kv_bytes = kv_bytes_per_token_ * static_cast<double>(w.context + w.tokens);
  const double attention_flops = attention_flops_per_pair_ * static_cast<double>(w.attention);
  p.attention_s = std::max(kv_bytes / bw, attention_flops / gpu_.attention_flops);

  if (tp_ > 1) {
    // The float32 residual's all-reduces of rows x hidden: the embedding's, then two per layer;
    // the float32 logits' all-gather.
    const double bw_ar = gpu_.allreduce_bus_bandwidth;
    const double latency_s = gpu_.allreduce_latency_us * 1e-6;
    const double reduce_bytes =
        rows * static_cast<double>(model_.hidden_size) * kCollectiveElementBytes;
    const double gather_bytes = static_cast<double>(w.logit_rows + w.padding_rows) *
                                static_cast<double>(model_.vocab_size) * kCollectiveElementBytes;
    p.communication_s =
        (2.0 * static_cast<double>(model_.num_hidden_layers) + 1.0) *
            ring_all_reduce_seconds(reduce_bytes, tp_, bw_ar, latency_s) +
        ring_all_gather_seconds(gather_bytes, tp_, bw_ar, latency_s);
  }
  const double gpu_s = p.linear_s + p.attention_s + p.communication_s;
  double busy_s = gpu_s;
  if (w.graph_batch == 0) {
    const double launch_s =
        gpu_.eager_launch_us_per_layer * 1e-6 * static_cast<double>(model_.num_hidden_layers);
    busy_s = std::max(gpu_s, launch_s);
  }
  p.overhead_s = gpu_.step_overhead_us * 1e-6 + (busy_s - gpu_s);
  p.total_s = gpu_.step_overhead_us * 1e-6 + busy_s;
  return p;
}

int64_t RooflineCostModel::step_time_ns(const StepWork& work) const {
  return std::max<int64_t>(1, std::llround(parts(work).total_s * 1e9));
}

std::string RooflineCostModel::describe() const {
  const std::string base =
      fmt::format("roofline {} ({:.2f} TB/s achievable, {:.0f} TFLOP/s), {}", gpu_.name,
                  gpu_.bandwidth() / 1e12, gpu_.matrix_flops / 1e12, model_.name);
  if (tp_ == 1) return base;
  return fmt::format("{}, tensor parallel {} (all-reduce {:.0f} GB/s bus, {:.0f} us a call)", base,
                     tp_, gpu_.allreduce_bus_bandwidth / 1e9, gpu_.allreduce_latency_us);
}

}  // namespace paceline::sim
