#pragma once
// Building blocks of the decode attention (attention_decode.cu): asynchronous copies into shared
// memory, the bf16 tensor-core product, and where each thread's K and V words sit in a head.
//
// A warp takes 16 keys per tile and computes S = Q Kᵀ and Oᵀ += Vᵀ Pᵀ with mma.sync m16n8k16,
// the group's query heads as the rows of S (at most 8 of its 16; the rest are zeros, the
// tensor cores have time to spare). A dot product does not care in which order its dimensions
// are summed, so each thread's share of a key is whatever 16-byte pieces of the head are
// contiguous in memory, and q is laid out in the same order; likewise the output dimensions of
// Oᵀ and the keys of P. That makes every K and V load a 16-byte copy of contiguous bytes and the
// fragments need no shuffles; V only needs its key pairs interleaved (one byte_perm per word).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace paceline::cuda::decode {

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte copies bypass L1 (.cg): every K/V byte is read once.
template <int BYTES>
__device__ __forceinline__ void cp_async(uint32_t dst, const void* src) {
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(BYTES));
  }
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

__device__ __forceinline__ float2 unpack_bf16(uint32_t w) {
  return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&w));
}

// c += a . b: a 16x16 (row), b 16x8 (col), bf16 in, f32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The same product in f16 (the FP8 cache's kernel: e4m3 values are exact in f16).
__device__ __forceinline__ void mma_f16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                        uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_f16(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

__device__ __forceinline__ float2 unpack_f16(uint32_t w) {
  return __half22float2(*reinterpret_cast<__half2*>(&w));
}

// Loads N 32-bit words (N = 1, 2 or 4) from shared memory.
template <int N>
__device__ __forceinline__ void load_words(uint32_t* dst, const uint32_t* src) {
  if constexpr (N == 4) {
    const uint4 v = *reinterpret_cast<const uint4*>(src);
    dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
  } else if constexpr (N == 2) {
    const uint2 v = *reinterpret_cast<const uint2*>(src);
    dst[0] = v.x, dst[1] = v.y;
  } else {
    dst[0] = *src;
  }
}

constexpr int largest_piece(int words) { return words % 4 == 0 ? 4 : words % 2 == 0 ? 2 : 1; }

// Shared memory of a tile: K and V each [16 keys][HD] bf16, the 16-byte chunks of a key's row
// swizzled (chunk ^ k_swizzle(key), chunk ^ v_swizzle(key)) so that the fragment reads below hit
// eight different bank groups per 8 lanes. The copies are cooperative: HD / 8 consecutive lanes
// copy one key's row, so each copy instruction reads whole 128-byte lines (the L2 serves those
// at full rate; 64-byte pieces per key left it the bottleneck at 75% of the copy bandwidth).
//
// Fragments of lane (g = lane / 4, c = lane % 4). K: the four lanes c of row g read key g of
// each 8-key half of the tile, HD / 8 words each in pieces of CK words, piece i being elements
// [i * 8 CK + c * 2 CK, + 2 CK); word 2kk of lane c is the bf16 pair (2c, 2c + 1) of k-step kk,
// word 2kk + 1 the pair (2c + 8, 2c + 9). V: lane (g, c) reads keys 2c, 2c + 1, 8 + 2c, 9 + 2c,
// HD / 16 words each in pieces of CV words at elements [i * 16 CV + g * 2 CV, + 2 CV); word mt
// is m-tile mt of Oᵀ, its rows g and g + 8 being the pair's two elements.
template <int HD>
struct HeadLayout {
  static_assert(HD % 16 == 0 && HD <= 256, "head_dim");
  static constexpr int kKWords = HD / 8;   // per lane and key
  static constexpr int kVWords = HD / 16;  // per lane and key
  static constexpr int kCK = largest_piece(kKWords);
  static constexpr int kCV = largest_piece(kVWords);
  static constexpr int kNK = kKWords / kCK;  // pieces per key
  static constexpr int kNV = kVWords / kCV;
  static constexpr int kSteps = HD / 16;      // k-steps of q . k, m-tiles of o
  static constexpr int kRowChunks = HD / 8;   // 16-byte chunks per key
  static constexpr int kRowWords = HD / 2;
  static constexpr int kKeysPerCopy = 32 / kRowChunks;  // keys per warp copy instruction
  static constexpr int kCopies = 16 / kKeysPerCopy;     // per tile, for K and again for V
  static constexpr int kTileWords = 2 * 16 * kRowWords;  // K and V of 16 keys
  static constexpr bool kSwizzle = kRowChunks >= 8;     // rows of 128 bytes or more

  __device__ static int k_element(int w, int c) {
    return (w / kCK) * 8 * kCK + c * 2 * kCK + 2 * (w % kCK);
  }
  __device__ static int v_element(int w, int g) {
    return (w / kCV) * 16 * kCV + g * 2 * kCV + 2 * (w % kCV);
  }
  // K reads: lanes 0-7 are rows g, g + 1 (one even, one odd) at the same chunks.
  __device__ static int k_swizzle(int key) { return kSwizzle ? (key & 1) << 2 : 0; }
  // V reads: lanes 0-7 are rows 2c (four of them) at chunks g and g + 1.
  __device__ static int v_swizzle(int key) { return kSwizzle ? ((key >> 1) & 3) << 1 : 0; }
  // Word of element `e` of key `key` in a [16][HD] region.
  __device__ static int k_word(int key, int e) {
    return key * kRowWords + (((e / 8) ^ k_swizzle(key)) * 8 + e % 8) / 2;
  }
  __device__ static int v_word(int key, int e) {
    return key * kRowWords + (((e / 8) ^ v_swizzle(key)) * 8 + e % 8) / 2;
  }
};

}  // namespace paceline::cuda::decode
