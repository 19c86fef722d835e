// Per row: QK-norm (Qwen3), RoPE at the row's position (cos and sin scaled by YaRN's attention
// factor), and the K/V store by slot mapping.
// One warp per head; the head passes through shared memory because RoPE pairs element i with
// i + head_dim / 2. Every load a warp needs (its head of q or k, the norm's weights, the RoPE
// frequencies, the row's position and slot, and for a K head its V) is issued before the first
// is used: a decode step's launch of one row is bound by the loads' latency, and the weights and
// frequencies come from HBM (the model's weights stream through L2 between two layers). The
// arithmetic, and its order, is the loop's over memory.
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"
#include "exec/cuda/kv_fp8.cuh"
#include "exec/cuda/programmatic_launch.cuh"

namespace paceline::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxHeadDim = 512;

// kPer elements of the head a lane (head_dim <= 32 kPer).
template <int kPer>
__global__ void qk_norm_rope_store_kernel(float* qkv, AttentionShape shape, const float* q_norm,
                                          const float* k_norm, float eps, const float* inv_freq,
                                          float rope_scale, RowInputs in, LayerCache cache) {
  constexpr int kHalfPer = (kPer + 1) / 2;  // RoPE pairs a lane handles
  __shared__ float head_buf[kWarps][kMaxHeadDim];
  const int row = blockIdx.x;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int head = blockIdx.y * kWarps + warp;
  const int hd = shape.head_dim;
  const int q_size = shape.num_heads * hd;
  const int kv_size = shape.num_kv_heads * hd;
  if (head >= shape.num_heads + shape.num_kv_heads) return;

  const bool is_q = head < shape.num_heads;
  float* row_qkv = qkv + static_cast<int64_t>(row) * (q_size + 2 * kv_size);
  float* x = is_q ? row_qkv + head * hd : row_qkv + q_size + (head - shape.num_heads) * hd;
  const float* norm = is_q ? q_norm : k_norm;
  float* buf = head_buf[warp];

  const int half = hd / 2;
  const int kv_head = head - shape.num_heads;
  const float* v = is_q ? nullptr : row_qkv + q_size + kv_size + kv_head * hd;  // a K head's V
  // Every load first (see the top of the file).
  const float pos = static_cast<float>(in.positions[row]);
  const int64_t slot = in.slots[row];
  // The norm's weights and the frequencies do not depend on the kernel ahead, the head does
  // (programmatic_launch.cuh).
  float xs[kPer], gs[kPer], vs[kPer], fs[kHalfPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int d = lane + 32 * j;
    gs[j] = d < hd && norm != nullptr ? norm[d] : 0.0f;
  }
#pragma unroll
  for (int j = 0; j < kHalfPer; ++j) {
    const int i = lane + 32 * j;
    fs[j] = i < half ? inv_freq[i] : 0.0f;
  }
  wait_for_prerequisites();
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int d = lane + 32 * j;
    const bool in_head = d < hd;
    xs[j] = in_head ? x[d] : 0.0f;
    vs[j] = in_head && !is_q ? v[d] : 0.0f;
  }

  float inv_rms = 1.0f;
  if (norm != nullptr) {
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      if (lane + 32 * j < hd) sum += xs[j] * xs[j];
    }
    sum = warp_sum(sum);
    inv_rms = 1.0f / sqrtf(sum / static_cast<float>(hd) + eps);
  }
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int d = lane + 32 * j;
    if (d < hd) buf[d] = norm != nullptr ? gs[j] * (xs[j] * inv_rms) : xs[j];
  }
  __syncwarp();

  int clamped = 0;  // FP8: this lane's stored values beyond e4m3's range (or NaN)
  const bool fp8 = cache.fp8();
  const int bs = cache.block_size;
  const int64_t k_at =
      is_q || slot < 0 ? 0 : kv_slot_row(slot, kv_head, shape.num_kv_heads, bs) * hd;
  const bool store_k = !is_q && slot >= 0;
#pragma unroll
  for (int j = 0; j < kHalfPer; ++j) {
    const int i = lane + 32 * j;
    if (i >= half) break;
    const float angle = fs[j] * pos;  // float32 product, as Hugging Face computes it
    // Hugging Face: cos and sin times the attention scaling (YaRN), rounded to float32.
    const float c = __fmul_rn(cosf(angle), rope_scale);
    const float s = __fmul_rn(sinf(angle), rope_scale);
    const float x1 = buf[i];
    const float x2 = buf[half + i];
    const float o1 = x1 * c - x2 * s;
    const float o2 = x2 * c + x1 * s;
    if (is_q) {
      x[i] = o1;
      x[half + i] = o2;
    } else if (store_k && fp8) {
      cache.k8[k_at + i] = to_fp8(o1);
      cache.k8[k_at + half + i] = to_fp8(o2);
      clamped += beyond_e4m3(o1) + beyond_e4m3(o2);
    } else if (store_k) {
      cache.k[k_at + i] = __float2bfloat16(o1);
      cache.k[k_at + half + i] = __float2bfloat16(o2);
    }
  }
  if (!is_q && slot >= 0) {
    const int64_t v_at = k_at;  // the same place in the V plane
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int d = lane + 32 * j;
      if (d >= hd) break;
      if (fp8) {
        cache.v8[v_at + d] = to_fp8(vs[j]);
        clamped += beyond_e4m3(vs[j]);
      } else {
        cache.v[v_at + d] = __float2bfloat16(vs[j]);
      }
    }
  }
  // One atomic a warp (the whole warp gets here: its head is one warp's), and only when it
  // clamped something.
  if (fp8 && cache.fp8_clamped != nullptr) {
    const unsigned any = __ballot_sync(0xffffffffu, clamped != 0);
    if (any != 0) {
      const int total = __reduce_add_sync(0xffffffffu, static_cast<unsigned>(clamped));
      if (lane == 0) atomicAdd(cache.fp8_clamped, static_cast<unsigned long long>(total));
    }
  }
  // The decode attention after it (launched programmatically when PACELINE_PDL_CHAIN names it)
  // may start once every block of this one is here: it is a persistent grid that fills every SM,
  // and started earlier its waiting blocks would hold the SMs this kernel's later blocks need.
  allow_dependent_launch();
}

}  // namespace

cudaError_t launch_qk_norm_rope_store(float* qkv, int rows, AttentionShape shape,
                                      const float* q_norm, const float* k_norm, float eps,
                                      const float* inv_freq, float rope_scale, RowInputs in,
                                      LayerCache cache, cudaStream_t stream) {
  if (shape.head_dim > kMaxHeadDim || shape.head_dim % 2 != 0) return cudaErrorInvalidValue;
  if (rows > 0) {
    const int heads = shape.num_heads + shape.num_kv_heads;
    dim3 grid(rows, (heads + kWarps - 1) / kWarps);
    const auto run = [&](auto kernel) {
      return launch_after_previous(ChainedKernel::kQk, kernel, grid, dim3(kWarps * 32), 0, stream,
                                   qkv, shape, q_norm, k_norm, eps, inv_freq, rope_scale, in,
                                   cache);
    };
    const int per = (shape.head_dim + 31) / 32;
    if (per <= 1) return run(qk_norm_rope_store_kernel<1>);
    if (per <= 2) return run(qk_norm_rope_store_kernel<2>);
    if (per <= 4) return run(qk_norm_rope_store_kernel<4>);
    if (per <= 8) return run(qk_norm_rope_store_kernel<8>);
    return run(qk_norm_rope_store_kernel<16>);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
