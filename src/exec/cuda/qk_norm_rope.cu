// Per row: QK-norm (Qwen3), RoPE at the row's position (cos and sin scaled by YaRN's attention
// factor), and the K/V store by slot mapping.
// One warp per head; the head passes through shared memory because RoPE pairs element i with
// i + head_dim / 2.
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"
#include "exec/cuda/kv_fp8.cuh"

namespace paceline::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxHeadDim = 512;

__global__ void qk_norm_rope_store_kernel(float* qkv, AttentionShape shape, const float* q_norm,
                                          const float* k_norm, float eps, const float* inv_freq,
                                          float rope_scale, RowInputs in, LayerCache cache) {
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

  float inv_rms = 1.0f;
  if (norm != nullptr) {
    float sum = 0.0f;
    for (int d = lane; d < hd; d += 32) sum += x[d] * x[d];
    sum = warp_sum(sum);
    inv_rms = 1.0f / sqrtf(sum / static_cast<float>(hd) + eps);
  }
  for (int d = lane; d < hd; d += 32) buf[d] = norm != nullptr ? norm[d] * (x[d] * inv_rms) : x[d];
  __syncwarp();

  const int half = hd / 2;
  int clamped = 0;  // FP8: this lane's stored values beyond e4m3's range (or NaN)
  const float pos = static_cast<float>(in.positions[row]);
  const int64_t slot = in.slots[row];
  const bool fp8 = cache.fp8();
  const int64_t k_at = slot * kv_size + (head - shape.num_heads) * hd;
  const bool store_k = !is_q && slot >= 0;
  for (int i = lane; i < half; i += 32) {
    const float angle = inv_freq[i] * pos;  // float32 product, as Hugging Face computes it
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
    const int kv_head = head - shape.num_heads;
    const float* v = row_qkv + q_size + kv_size + kv_head * hd;
    const int64_t v_at = slot * kv_size + kv_head * hd;
    if (fp8) {
      for (int d = lane; d < hd; d += 32) {
        cache.v8[v_at + d] = to_fp8(v[d]);
        clamped += beyond_e4m3(v[d]);
      }
    } else {
      for (int d = lane; d < hd; d += 32) cache.v[v_at + d] = __float2bfloat16(v[d]);
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
    qk_norm_rope_store_kernel<<<grid, kWarps * 32, 0, stream>>>(qkv, shape, q_norm, k_norm, eps,
                                                                inv_freq, rope_scale, in, cache);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
