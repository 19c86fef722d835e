#pragma once
// FP8 (e4m3, OCP "fn": no infinities, max 448) KV elements: the store's rounding and the
// attention kernels' widening to bfloat16. Every e4m3 value is exact in f16 and in bf16, so the
// widening loses nothing; the rounding on store (nearest, saturating to +-448) is the only error
// an FP8 cache adds.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace paceline::cuda {

__device__ __forceinline__ uint8_t to_fp8(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

// Two e4m3 bytes (the low one first) as two floats.
__device__ __forceinline__ float2 fp8x2_to_float2(uint16_t two) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
}

// Two e4m3 bytes as a bf16 pair in one word (the low byte in the low half).
__device__ __forceinline__ uint32_t fp8x2_to_bf16x2(uint16_t two) {
  const float2 f = fp8x2_to_float2(two);
  __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
  return *reinterpret_cast<uint32_t*>(&b);
}

// Eight e4m3 bytes as eight bf16 (16 bytes), in order.
__device__ __forceinline__ uint4 fp8x8_to_bf16x8(uint2 raw) {
  uint4 out;
  out.x = fp8x2_to_bf16x2(static_cast<uint16_t>(raw.x & 0xffffu));
  out.y = fp8x2_to_bf16x2(static_cast<uint16_t>(raw.x >> 16));
  out.z = fp8x2_to_bf16x2(static_cast<uint16_t>(raw.y & 0xffffu));
  out.w = fp8x2_to_bf16x2(static_cast<uint16_t>(raw.y >> 16));
  return out;
}

}  // namespace paceline::cuda
