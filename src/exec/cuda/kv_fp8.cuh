#pragma once
// FP8 (e4m3, OCP "fn": no infinities, max 448) KV elements: the store's rounding and the
// attention kernels' widening to bfloat16 or f16. Every e4m3 value is exact in f16 and in bf16,
// so the widening loses nothing; the rounding on store (nearest, saturating to +-448) is the only
// error an FP8 cache adds.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace paceline::cuda {

// An f16 pair from e4m3 (normal or zero: e4m3's smallest subnormal, 2^-9, is a normal f16) as
// the bf16 pair of its values times 2^-112: the same sign, exponent field and top 7 mantissa bits
// (an e4m3 value has at most 3), so also normal or zero. tests/cuda/cuda_fp8_widen_test.cpp
// checks it on the host for every pair of e4m3 bytes but NaN.
__host__ __device__ constexpr uint32_t f16x2_to_bf16x2_scaled(uint32_t h) {
  return ((h >> 3) & 0x0fff0fffu) | (h & 0x80008000u);
}

// The rest is device code (host compilers see only the function above).
#if defined(__CUDACC__)

// Whether to_fp8 cannot keep x: beyond e4m3's largest finite value (448, where it saturates) or
// NaN.
__device__ __forceinline__ int beyond_e4m3(float x) {
  return !(fabsf(x) <= 448.0f);
}

__device__ __forceinline__ uint8_t to_fp8(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

// Two e4m3 bytes (the low one first) as two floats.
__device__ __forceinline__ float2 fp8x2_to_float2(uint16_t two) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
}

// Two e4m3 bytes (the low one first) as one f16 pair in order, exactly (sm_89+).
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint16_t two) {
  uint32_t h;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h) : "h"(two));
  return h;
}

// Two e4m3 bytes as a bf16 pair in one word (the low byte in the low half), exactly: the hardware
// conversion to an f16 pair (sm_89+), the bits moved into bf16 as above, and a multiplication by
// 2^112, exact for these normal values. One conversion instruction per pair, where going through
// f32 took three (e4m3 to f16, f16 to f32 twice, f32 to bf16 counted as one). An e4m3 NaN (never
// stored: the store saturates, and only a NaN activation gives one) comes out finite.
__device__ __forceinline__ uint32_t fp8x2_to_bf16x2(uint16_t two) {
  const uint32_t scaled = f16x2_to_bf16x2_scaled(e4m3x2_to_f16x2(two));
  __nv_bfloat162_raw two_112;
  two_112.x = two_112.y = 0x7780;  // 2^112
  const __nv_bfloat162 b =
      __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&scaled), __nv_bfloat162(two_112));
  return *reinterpret_cast<const uint32_t*>(&b);
}

// Four e4m3 bytes as two f16 pairs in order, exactly: (e, e + 1) and (e + 2, e + 3), one
// conversion a pair and nothing else.
__device__ __forceinline__ void e4m3x4_to_f16x4(uint32_t r, uint32_t& first, uint32_t& second) {
  asm("{\n.reg .b16 lo, hi;\n"
      "mov.b32 {lo, hi}, %2;\n"
      "cvt.rn.f16x2.e4m3x2 %0, lo;\n"
      "cvt.rn.f16x2.e4m3x2 %1, hi;\n}\n"
      : "=r"(first), "=r"(second)
      : "r"(r));
}

// Two keys' e4m3 bytes side by side as f16 pairs across the keys, exactly: one byte permute puts
// a's byte i beside b's byte i and a's byte i + 1 beside b's, then one conversion a pair. SEL
// 0x5140 takes bytes 0 and 1 of a and b, 0x7362 bytes 2 and 3: first = (a_i, b_i), second =
// (a_i+1, b_i+1). The FP8 decode attention's V fragments (a pair of keys of one element), where
// widening each key alone took one more permute a pair to regroup the halves.
template <uint32_t SEL>
__device__ __forceinline__ void e4m3_across_to_f16x2(uint32_t a, uint32_t b, uint32_t& first,
                                                     uint32_t& second) {
  asm("{\n.reg .b16 lo, hi;\n.reg .b32 p;\n"
      "prmt.b32 p, %2, %3, %4;\n"
      "mov.b32 {lo, hi}, p;\n"
      "cvt.rn.f16x2.e4m3x2 %0, lo;\n"
      "cvt.rn.f16x2.e4m3x2 %1, hi;\n}\n"
      : "=r"(first), "=r"(second)
      : "r"(a), "r"(b), "n"(SEL));
}

// Eight e4m3 bytes as eight f16 (16 bytes), in order and exactly: one conversion instruction a
// pair and nothing else (the prefill attention's FP8 cache, which multiplies on f16 tensor cores).
__device__ __forceinline__ uint4 fp8x8_to_f16x8(uint2 raw) {
  uint4 out;
  asm("{\n.reg .b16 lo, hi;\n"
      "mov.b32 {lo, hi}, %4;\n"
      "cvt.rn.f16x2.e4m3x2 %0, lo;\n"
      "cvt.rn.f16x2.e4m3x2 %1, hi;\n"
      "mov.b32 {lo, hi}, %5;\n"
      "cvt.rn.f16x2.e4m3x2 %2, lo;\n"
      "cvt.rn.f16x2.e4m3x2 %3, hi;\n}\n"
      : "=r"(out.x), "=r"(out.y), "=r"(out.z), "=r"(out.w)
      : "r"(raw.x), "r"(raw.y));
  return out;
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

#endif  // __CUDACC__

}  // namespace paceline::cuda
