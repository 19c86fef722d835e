// The small-M GEMM of decode rows (gemm_small_m.h: the design and why a row's bits do not depend
// on the batch).
#include "exec/cuda/gemm_small_m.h"

#include <cooperative_groups.h>

#include <type_traits>

#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/programmatic_launch.cuh"
#include "exec/cuda/swiglu.cuh"
#include "exec/cuda/wgmma.cuh"
#include "exec/cuda/wgmma_narrow.cuh"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 128;  // 4 warps, 32 features each
constexpr int kFeatures = static_cast<int>(kSmallMFeatures);
constexpr int kChunkBytes = static_cast<int>(kSmallMChunk) * 2;  // one row of a stage: 128 bytes
constexpr int kWeightStageBytes = kFeatures * kChunkBytes;        // 16 KB
// Floats of a row of partial sums in shared memory: 4 more than the features, so that the
// accumulators a warp stores (8 features x 4 rows two apart) fall in 32 distinct banks.
constexpr int kPartPitch = kFeatures + 4;

// A stage's row r (a weight row or a row of x) holds 64 k in 8 pieces of 16 bytes; piece c lies
// at position c ^ (r % 8): wgmma's 128-byte swizzle (wgmma.cuh), with the stages 1,024-byte
// aligned.
__device__ __forceinline__ uint32_t swizzled(int r, int c) {
  return static_cast<uint32_t>(r * kChunkBytes + ((c ^ (r & 7)) << 4));
}

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory, bypassing L1; `valid` false writes zeros.
__device__ __forceinline__ void copy16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void wait_groups() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// The cluster's last barrier: a block may leave once every block of its cluster has arrived,
// that is, once each has done the adds that used its reads of the others' shared memory (a read
// is done when its value is used). Nothing else needs ordering, so the arrival is relaxed:
// cluster.sync()'s arrival releases the block's earlier writes, which compiles to a
// MEMBAR.ALL.GPU that waits for the stores of y to be acknowledged, and nothing reads y before
// this kernel's grid has finished (docs/performance.md, "Session 35").
__device__ __forceinline__ void leave_cluster() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::
                   : "memory");
}

template <typename Out>
__device__ __forceinline__ void store_out(Out* y, float v, float beta);

template <>
__device__ __forceinline__ void store_out<float>(float* y, float v, float beta) {
  *y = beta == 0.0f ? v : __fmaf_rn(beta, *y, v);
}

template <>
__device__ __forceinline__ void store_out<bf16>(bf16* y, float v, float beta) {
  *y = __float2bfloat16_rn(beta == 0.0f ? v : __fmaf_rn(beta, __bfloat162float(*y), v));
}

template <int NT>
constexpr int stage_bytes() {
  return kWeightStageBytes + NT * 8 * kChunkBytes;
}
// Stages of the pipeline: as many as keep three blocks on an SM (at most 75 KB of shared memory
// each). With two, a cluster of five blocks (qkv_proj's pieces) finds room for only 47 of its 48
// clusters on the H200's GPCs, and the 48th runs alone after the rest: twice the time (ncu,
// docs/performance.md). The depth does not enter a row's arithmetic.
template <int NT>
constexpr int stages() {
  constexpr int most = static_cast<int>(kSmallMStages);
  return most * stage_bytes<NT>() + 1024 <= kSmallMSharedPerBlock ? most : most - 1;
}
template <int NT>
constexpr int shared_bytes() {
  static_assert(NT * 8 * kPartPitch * 4 <= stages<NT>() * stage_bytes<NT>());
  static_assert(stages<NT>() * stage_bytes<NT>() + 1024 <= kSmallMSharedPerBlock);
  return stages<NT>() * stage_bytes<NT>() + 1024;  // room to align the stages to 1,024 bytes
}

// One block: rows [64 blockIdx.x, +64) (a group), feature tile blockIdx.y (kFeatures features),
// split-K piece blockIdx.z. NT column tiles of 8 rows (a group's rows <= 8 NT). The groups are
// the fastest grid dimension, so the blocks of one (tile, piece) run side by side and all but the
// first find the weights in L2.
//
// Each k-block of 64 k is one pipeline stage: the tile's 128 weight rows and the group's 8 NT
// rows of x, copied by cp.async kStages - 1 k-blocks ahead. The block's warpgroup multiplies the
// two 64-feature halves of the tile by all 8 NT rows, four k-steps of 16 a stage
// (wgmma.m64nNk16, both operands read from the swizzled stage through descriptors).
//
// SWIGLU (gate_up with its weight rows in turns of 64, gate_up_layout.h): the tile's
// two 64-feature halves are gate and up of the same 64 columns of act, and the block writes
// act = silu(gate) * up in bf16 (y_all: act, row pitch n / 2, beta unused) from the sums a plain
// call would have written, so its bits are those of the plain call and the SwiGLU kernel.
// N quads (four adjacent features of a row of the partial sums, at at[0..N) in this block's
// shared memory) summed over the cluster's `pieces` blocks: every piece's reads issued before the
// first add (the reads cross the cluster, and one at a time they cost a round trip each), the
// adds in piece order, so the bits are those of a sum taken piece by piece.
template <int N>
__device__ __forceinline__ void sum_over_pieces(cooperative_groups::cluster_group& cluster,
                                                const float* const (&at)[N], int pieces,
                                                float (&sum)[N][4]) {
  float4 v[kSmallMMaxPieces][N];
#pragma unroll
  for (int p = 0; p < static_cast<int>(kSmallMMaxPieces); ++p) {
    if (p < pieces) {
#pragma unroll
      for (int q = 0; q < N; ++q) {
        v[p][q] = *reinterpret_cast<const float4*>(
            cluster.map_shared_rank(const_cast<float*>(at[q]), p));
      }
    }
  }
#pragma unroll
  for (int q = 0; q < N; ++q) sum[q][0] = sum[q][1] = sum[q][2] = sum[q][3] = 0.0f;
#pragma unroll
  for (int p = 0; p < static_cast<int>(kSmallMMaxPieces); ++p) {
    if (p < pieces) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
#pragma unroll
        for (int q = 0; q < N; ++q) {
          const float x = c == 0 ? v[p][q].x : c == 1 ? v[p][q].y : c == 2 ? v[p][q].z : v[p][q].w;
          sum[q][c] = __fadd_rn(sum[q][c], x);
        }
      }
    }
  }
}

template <int NT, typename Out, bool SWIGLU = false>
__global__ void __launch_bounds__(kThreads, 3)
    gemm_small_m_kernel(const bf16* __restrict__ x_all, int all_rows, int64_t k,
                        const bf16* __restrict__ w, int64_t n, Out* y_all, float beta,
                        int64_t blocks_per_piece, int pieces) {
  static_assert(!SWIGLU || std::is_same_v<Out, bf16>, "act is bf16");
  extern __shared__ __align__(128) unsigned char smem[];
  // The kernel after it (launched programmatically: programmatic_launch.cuh) may load its
  // weights or inputs meanwhile; it waits for this one before reading y.
  allow_dependent_launch();
  constexpr int kRowsX = NT * 8;
  constexpr int kStages = stages<NT>();
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4;
  const int t = lane % 4;
  const int group = static_cast<int>(blockIdx.x);
  const int64_t tile = blockIdx.y;
  const int piece = static_cast<int>(blockIdx.z);
  const int first_row = group * static_cast<int>(kSmallMRows);
  const int rows = min(static_cast<int>(kSmallMRows), all_rows - first_row);
  const bf16* x = x_all + static_cast<int64_t>(first_row) * k;
  const int64_t y_pitch = SWIGLU ? n / 2 : n;
  Out* y = y_all + static_cast<int64_t>(first_row) * y_pitch;
  const int64_t f_tile = tile * kFeatures;
  const int64_t kblocks = (k + kSmallMChunk - 1) / kSmallMChunk;
  const int64_t kb_begin = piece * blocks_per_piece;
  const int64_t kb_end = min(kb_begin + blocks_per_piece, kblocks);
  const int steps = static_cast<int>(kb_end - kb_begin);
  // The stages, 1,024-byte aligned (the swizzle's period, as wgmma's descriptors need).
  const uint32_t base = (smem_address(smem) + 1023u) & ~1023u;

  // This thread's copies of a stage: 8 weight pieces (rows threadIdx.x / 8 + 16 i, piece
  // threadIdx.x % 8) and, while rows remain, pieces of x the same way.
  const int copy_row = static_cast<int>(threadIdx.x) / 8;
  const int copy_piece = static_cast<int>(threadIdx.x) % 8;
  auto load_weights = [&](int slot, int64_t kb) {
    const uint32_t stage = base + static_cast<uint32_t>(slot * stage_bytes<NT>());
    const int64_t kk = kb * kSmallMChunk + copy_piece * 8;
    const bool k_ok = kk < k;
#pragma unroll
    for (int i = 0; i < kFeatures / 16; ++i) {
      const int r = copy_row + 16 * i;
      const bool ok = k_ok && f_tile + r < n;
      copy16(stage + swizzled(r, copy_piece), ok ? w + (f_tile + r) * k + kk : w, ok);
    }
  };
  auto load_x = [&](int slot, int64_t kb) {
    const uint32_t xs =
        base + static_cast<uint32_t>(slot * stage_bytes<NT>()) + kWeightStageBytes;
    const int64_t kk = kb * kSmallMChunk + copy_piece * 8;
    const bool k_ok = kk < k;
#pragma unroll
    for (int i = 0; i < (kRowsX + 15) / 16; ++i) {
      const int r = copy_row + 16 * i;
      if (r < kRowsX) {
        const bool ok = k_ok && r < rows;
        copy16(xs + swizzled(r, copy_piece), ok ? x + static_cast<int64_t>(r) * k + kk : x, ok);
      }
    }
  };

  // Accumulators: fragment i, column tile j, element c (the m16n8 C fragment): feature
  // feature_of(i, c), row 8 j + 2 t + c % 2.
  float acc[2][NT * 4];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int e = 0; e < NT * 4; ++e) acc[i][e] = 0.0f;
  }

  // The first stages' weights depend on nothing before this kernel: they are on their way while
  // the kernel before it (launched ahead of it, programmatically) finishes; x and y only after.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) load_weights(s, kb_begin + s);
  }
  wait_for_prerequisites();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) load_x(s, kb_begin + s);
    commit();
  }
  for (int step = 0; step < steps; ++step) {
    wait_groups<kStages - 2>();
    wgmma::fence_shared_for_async();
    __syncthreads();  // the stage is in; everybody is done with the slot refilled below
    if (step + kStages - 1 < steps) {
      load_weights((step + kStages - 1) % kStages, kb_begin + step + kStages - 1);
      load_x((step + kStages - 1) % kStages, kb_begin + step + kStages - 1);
    }
    commit();
    const uint32_t stage = base + static_cast<uint32_t>((step % kStages) * stage_bytes<NT>());
    const uint32_t xs = stage + kWeightStageBytes;
    // Fragment i: the warpgroup's 64 features [64 i, +64) by all 8 NT rows, 16 k at a time
    // (k-step s starts 32 bytes into the swizzled rows).
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const uint64_t b = wgmma::descriptor(xs + 32 * s, 16, 1024);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        wgmma::mma_ss<NT * 8>(acc[i], wgmma::descriptor(stage + i * 64 * kChunkBytes + 32 * s,
                                                        16, 1024),
                              b);
      }
    }
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::hold(acc[0]);
    wgmma::hold(acc[1]);
  }
  wait_groups<0>();

  // The feature of fragment i's element c (in the tile): the warp's 16-row slice of the
  // warpgroup's 64.
  const auto feature_of = [&](int i, int c) { return 64 * i + 16 * warp + g + (c >= 2 ? 8 : 0); };
  if (pieces == 1 && SWIGLU) {
    // Fragment 0 holds gate, fragment 1 up, of the same act columns [64 tile, + 64).
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = j * 8 + 2 * t + c % 2;
        if (r < rows) {
          y[r * y_pitch + tile * 64 + feature_of(0, c)] =
              __float2bfloat16(silu_times(acc[0][4 * j + c], acc[1][4 * j + c]));
        }
      }
    }
    return;
  }
  if (pieces == 1) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int64_t f = f_tile + feature_of(i, c);
          const int r = j * 8 + 2 * t + c % 2;
          if (r < rows && f < n) store_out(y + r * n + f, acc[i][4 * j + c], beta);
        }
      }
    }
    return;
  }
  // The pieces of a tile are one cluster (piece = rank). Each block puts its partial sums in its
  // own shared memory ([row][feature], the pipeline's stages being done with); then each adds
  // a share of the tile's elements over the cluster's blocks in piece order and stores them.
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __syncthreads();  // every warpgroup MMA of the block is done with the stages
  float* part = reinterpret_cast<float*>(smem + (base - smem_address(smem)));
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = j * 8 + 2 * t + c % 2;
        part[r * kPartPitch + feature_of(i, c)] = acc[i][4 * j + c];
      }
    }
  }
  cluster.sync();
  // Four adjacent features at a time (16-byte reads of the partial rows, whose pitch keeps them
  // aligned), summed by sum_over_pieces.
  constexpr int kQuads = kFeatures / 4;
  if constexpr (SWIGLU) {
    // Each gate quad with the up quad 64 features on, both summed in piece order as below.
    constexpr int kGateQuads = kQuads / 2;
    for (int q = piece * kThreads + static_cast<int>(threadIdx.x); q < rows * kGateQuads;
         q += pieces * kThreads) {
      const int r = q / kGateQuads;
      const int fl = (q % kGateQuads) * 4;
      const float* const at[2] = {part + r * kPartPitch + fl, part + r * kPartPitch + fl + 64};
      float s[2][4];
      sum_over_pieces<2>(cluster, at, pieces, s);
      const float(&gs)[4] = s[0];
      const float(&us)[4] = s[1];
      const __nv_bfloat162 lo =
          __floats2bfloat162_rn(silu_times(gs[0], us[0]), silu_times(gs[1], us[1]));
      const __nv_bfloat162 hi =
          __floats2bfloat162_rn(silu_times(gs[2], us[2]), silu_times(gs[3], us[3]));
      uint2 packed;
      packed.x = *reinterpret_cast<const uint32_t*>(&lo);
      packed.y = *reinterpret_cast<const uint32_t*>(&hi);
      *reinterpret_cast<uint2*>(y + r * y_pitch + tile * 64 + fl) = packed;
    }
  } else {
    for (int q = piece * kThreads + static_cast<int>(threadIdx.x); q < rows * kQuads;
         q += pieces * kThreads) {
      const int r = q / kQuads;
      const int fl = (q % kQuads) * 4;
      const float* const at[1] = {part + r * kPartPitch + fl};
      float s[1][4];
      sum_over_pieces<1>(cluster, at, pieces, s);
      const float(&sum)[4] = s[0];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int64_t f = f_tile + fl + c;
        if (f < n) store_out(y + r * n + f, sum[c], beta);
      }
    }
  }
  leave_cluster();  // no block leaves while another still reads its shared memory
}

template <int NT, typename Out, bool SWIGLU = false>
cudaError_t configure() {
  return cudaFuncSetAttribute(gemm_small_m_kernel<NT, Out, SWIGLU>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes<NT>());
}

// The launch of a call: grid (row groups, feature tiles, pieces), a cluster of the pieces of a
// tile; attrs must live as long as the config.
template <int NT, typename Out>
cudaLaunchConfig_t launch_config(int rows, const SmallMPlan& p, cudaStream_t stream,
                                 cudaLaunchAttribute (&attrs)[2]) {
  const auto groups = static_cast<unsigned>((rows + kSmallMRows - 1) / kSmallMRows);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(groups, static_cast<unsigned>(p.tiles), static_cast<unsigned>(p.pieces));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = shared_bytes<NT>();
  config.stream = stream;
  attrs[0].id = cudaLaunchAttributeClusterDimension;
  attrs[0].val.clusterDim.x = 1;
  attrs[0].val.clusterDim.y = 1;
  attrs[0].val.clusterDim.z = static_cast<unsigned>(p.pieces);
  // Launched ahead of the kernel before it (which allows it): the weights' prefetch overlaps
  // that kernel's end (PACELINE_PDL=0: ordinary launches).
  attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[1].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attrs;
  config.numAttrs = programmatic_launch() ? 2 : 1;
  return config;
}

template <int NT, typename Out, bool SWIGLU = false>
cudaError_t launch(const bf16* x, int rows, int64_t k, const bf16* w, int64_t n, Out* y,
                   float beta, const SmallMPlan& p, cudaStream_t stream) {
  cudaLaunchAttribute attrs[2]{};
  const cudaLaunchConfig_t config = launch_config<NT, Out>(rows, p, stream, attrs);
  return cudaLaunchKernelEx(&config, gemm_small_m_kernel<NT, Out, SWIGLU>, x, rows, k, w, n, y,
                            beta, p.blocks_per_piece, static_cast<int>(p.pieces));
}

template <int NT>
cudaError_t cluster_fit(int rows, const SmallMPlan& p, int* clusters, int* resident) {
  cudaLaunchAttribute attrs[2]{};
  cudaLaunchConfig_t config = launch_config<NT, float>(rows, p, nullptr, attrs);
  config.numAttrs = 1;  // the cluster alone
  *clusters = static_cast<int>(config.gridDim.x * config.gridDim.y);
  return cudaOccupancyMaxActiveClusters(resident, gemm_small_m_kernel<NT, float>, &config);
}

template <typename Out, bool SWIGLU = false>
cudaError_t launch_rows(const bf16* x, int rows, int64_t k, const bf16* w, int64_t n, Out* y,
                        float beta, const SmallMPlan& p, cudaStream_t stream) {
  // Column tiles: 1, 2, 4 or 8 (a group's rows rounded up); a row's arithmetic is the same in
  // each.
  if (rows <= 8) return launch<1, Out, SWIGLU>(x, rows, k, w, n, y, beta, p, stream);
  if (rows <= 16) return launch<2, Out, SWIGLU>(x, rows, k, w, n, y, beta, p, stream);
  if (rows <= 32) return launch<4, Out, SWIGLU>(x, rows, k, w, n, y, beta, p, stream);
  return launch<8, Out, SWIGLU>(x, rows, k, w, n, y, beta, p, stream);
}

}  // namespace

cudaError_t prepare_gemm_small_m() {
  static const cudaError_t status = [] {
    for (const cudaError_t e :
         {configure<1, float>(), configure<2, float>(), configure<4, float>(),
          configure<8, float>(), configure<1, bf16>(), configure<2, bf16>(), configure<4, bf16>(),
          configure<8, bf16>(), configure<1, bf16, true>(), configure<2, bf16, true>(),
          configure<4, bf16, true>(), configure<8, bf16, true>()}) {
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }();
  return status;
}

const SmallMClusterRoom& gemm_small_m_cluster_room() {
  // Every group size keeps three blocks on an SM (kSmallMSharedPerBlock); the 64-row kernel,
  // the largest, stands for all, so one plan serves every row count.
  static const SmallMClusterRoom room = [] {
    SmallMClusterRoom r;
    if (prepare_gemm_small_m() != cudaSuccess) return r;
    for (int p = 1; p <= static_cast<int>(kSmallMMaxPieces); ++p) {
      SmallMPlan one;
      one.tiles = 1;
      one.pieces = p;
      one.blocks_per_piece = 1;
      cudaLaunchAttribute attrs[2]{};
      cudaLaunchConfig_t config = launch_config<8, float>(1, one, nullptr, attrs);
      config.numAttrs = 1;  // the cluster alone
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, gemm_small_m_kernel<8, float>, &config) ==
          cudaSuccess) {
        r.clusters[p] = clusters;
      }
    }
    return r;
  }();
  return room;
}

SmallMPlan gemm_small_m_plan(int64_t k, int64_t n) {
  return small_m_plan(k, n, gemm_small_m_cluster_room());
}

cudaError_t gemm_small_m_cluster_fit(int rows, int64_t k, int64_t n, int* clusters, int* resident) {
  if (rows < 1 || rows > kSmallMRows || !small_m_supported(k)) return cudaErrorInvalidValue;
  if (const cudaError_t e = prepare_gemm_small_m(); e != cudaSuccess) return e;
  const SmallMPlan p = gemm_small_m_plan(k, n);
  if (rows <= 8) return cluster_fit<1>(rows, p, clusters, resident);
  if (rows <= 16) return cluster_fit<2>(rows, p, clusters, resident);
  if (rows <= 32) return cluster_fit<4>(rows, p, clusters, resident);
  return cluster_fit<8>(rows, p, clusters, resident);
}

cudaError_t launch_gemm_small_m(const bf16* x, int rows, int64_t k, const bf16* w, int64_t n,
                                void* y, bool y_bf16, float beta, cudaStream_t stream) {
  if (rows < 1 || rows > kSmallMLaunchRows || n < 1 || !small_m_supported(k)) {
    return cudaErrorInvalidValue;
  }
  const SmallMPlan p = gemm_small_m_plan(k, n);
  if (p.tiles > 65535 || p.pieces < 1) return cudaErrorInvalidValue;
  if (const cudaError_t e = prepare_gemm_small_m(); e != cudaSuccess) return e;
  if (y_bf16) return launch_rows(x, rows, k, w, n, static_cast<bf16*>(y), beta, p, stream);
  return launch_rows(x, rows, k, w, n, static_cast<float*>(y), beta, p, stream);
}

cudaError_t launch_gemm_small_m_swiglu(const bf16* x, int rows, int64_t k, const bf16* w,
                                       int64_t width, bf16* act, cudaStream_t stream) {
  if (rows < 1 || rows > kSmallMLaunchRows || width < 1 || width % kSwigluTurn != 0 ||
      !small_m_supported(k)) {
    return cudaErrorInvalidValue;
  }
  const SmallMPlan p = gemm_small_m_plan(k, 2 * width);  // the plain gate_up call's plan
  if (p.tiles > 65535 || p.pieces < 1) return cudaErrorInvalidValue;
  if (const cudaError_t e = prepare_gemm_small_m(); e != cudaSuccess) return e;
  return launch_rows<bf16, true>(x, rows, k, w, 2 * width, act, 0.0f, p, stream);
}

}  // namespace paceline::cuda
