#pragma once
// Hopper's warpgroup MMAs (wgmma, sm_90a) and the shared-memory layout they read: operand tiles
// of 128-byte rows in the 128-byte swizzle, addressed by 64-bit matrix descriptors. Shapes are
// m64n128k16 with bf16 (or f16: F16) inputs and float32 accumulators, the one shape the prefill
// attention uses; a warpgroup (four consecutive warps) issues each instruction together.
//
// The accumulator fragment (64 floats a thread) is the m16n8 C fragment of mma.sync repeated over
// the 16 n8 column tiles: warp w of the group holds rows 16w + lane / 4 (d[4j], d[4j + 1]) and
// 16w + lane / 4 + 8 (d[4j + 2], d[4j + 3]), at columns 8j + 2 (lane % 4) and the next. An A
// operand in registers is the m16n8k16 A fragment of mma.sync, one per warp.
#include <cstdint>

namespace paceline::cuda::wgmma {

#ifdef __CUDACC__

// A tile of `rows` rows of head_dim bf16 is stored as head_dim / 64 column blocks ("atoms"), each
// rows x 128 bytes, every group of 8 rows 1,024 bytes with its 16-byte chunks permuted (chunk c
// of row r at c ^ (r % 8)), as the 128-byte swizzle reads them. Atoms start 1,024-byte aligned.
// Byte offset of the 16-byte chunk c (8 elements, counted over the whole row) of row r.
__device__ __forceinline__ uint32_t swizzled_offset(int rows, int r, int c) {
  return static_cast<uint32_t>((c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
}

// A matrix descriptor for the 128-byte swizzle: start address (shared space), the leading and
// the stride byte offsets (the distance between atoms along the MN dimension of an MN-major
// operand, and between groups of 8 rows), all in units of 16 bytes.
__device__ __forceinline__ uint64_t descriptor(uint32_t smem_addr, uint32_t leading_bytes,
                                               uint32_t stride_bytes) {
  return static_cast<uint64_t>((smem_addr & 0x3ffff) >> 4) |
         static_cast<uint64_t>((leading_bytes >> 4) & 0x3fff) << 16 |
         static_cast<uint64_t>((stride_bytes >> 4) & 0x3fff) << 32 | uint64_t{1} << 62;
}

// Orders this thread's register and shared-memory writes before the warpgroup's next MMAs.
__device__ __forceinline__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Shared memory written by ordinary stores (or cp.async) becomes visible to the MMAs, which read
// it through the async proxy; each writing thread calls it before the barrier.
__device__ __forceinline__ void fence_shared_for_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving reads or writes of an accumulator across an MMA in flight.
template <int N>
__device__ __forceinline__ void hold(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The 64 accumulator operands of an m64n128 MMA (d[0..63], %0..%63), in the asm below.
#define PACELINE_WGMMA_D64                                                                      \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "  \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "  \
  "%56, %57, %58, %59, %60, %61, %62, %63}"
#define PACELINE_WGMMA_D64_OUT(d)                                                                 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),  \
      "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),  \
      "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),  \
      "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),  \
      "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// d (+)= A . B: A (64 x 16) and B (16 x 128) both from shared memory, K-major (rows of k);
// scale_d 0 overwrites d. F16: the operands are f16 instead of bf16.
template <bool F16 = false>
__device__ __forceinline__ void mma_ss(float (&d)[64], uint64_t a, uint64_t b, int scale_d) {
  if constexpr (F16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " PACELINE_WGMMA_D64
        ", %64, %65, p, 1, 1, 0, 0;\n}\n"
        : PACELINE_WGMMA_D64_OUT(d)
        : "l"(a), "l"(b), "r"(scale_d));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " PACELINE_WGMMA_D64
        ", %64, %65, p, 1, 1, 0, 0;\n}\n"
        : PACELINE_WGMMA_D64_OUT(d)
        : "l"(a), "l"(b), "r"(scale_d));
  }
}

// d += A . B: A from registers (the mma.sync A fragment of each warp's 16 rows), B (16 x 128)
// from shared memory, MN-major (rows of n: B[k][n] at row k). F16 as above.
template <bool F16 = false>
__device__ __forceinline__ void mma_rs_b_mn_major(float (&d)[64], const uint32_t (&a)[4],
                                                  uint64_t b) {
  if constexpr (F16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " PACELINE_WGMMA_D64
        ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : PACELINE_WGMMA_D64_OUT(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " PACELINE_WGMMA_D64
        ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : PACELINE_WGMMA_D64_OUT(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
  }
}

#undef PACELINE_WGMMA_D64
#undef PACELINE_WGMMA_D64_OUT

#endif  // __CUDACC__

}  // namespace paceline::cuda::wgmma
