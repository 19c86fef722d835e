// Paged flash-decoding for rows with one query token each (decode, speculative verify).
//
// Work items are (row, KV head, piece of the context) with the pieces of decode_split_plan,
// which depends only on the row's own context (kernels.h): batch invariance. A persistent grid
// (as many blocks as fit on the GPU, fixed per row count, so CUDA graphs can capture it) lists
// the items of all rows and takes them in turn; a padding row or a short context has fewer
// items, never idle blocks. A block's warps take the piece's 16-key tiles round-robin; each warp
// copies its tiles with cp.async into its own shared-memory stages, whole 128-byte lines per
// copy (attention_decode.cuh), one tile in flight while it computes the last (bf16), or three
// (FP8: e4m3 tiles of half the bytes, widened to f16 in registers as the fragments are read,
// in the same shared memory). The group's query heads share every K/V byte on the tensor cores.
// The block merges its warps' softmax states into one piece (a row of one piece gets its output
// here); a second kernel merges the pieces of each row (attention_decode_merge.cuh).
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>

#include "exec/cuda/attention_decode_merge.cuh"
#include "exec/cuda/attention_decode_tile.cuh"
#include "exec/cuda/programmatic_launch.cuh"

namespace paceline::cuda {
namespace decode {

// 168 registers for the production shape (ptxas, CUDA 13.0; 163 for FP8 with four stages): three
// blocks per SM, as many as its shared memory allows. A bound of three blocks made ptxas spill.
template <int HD, int WARPS, int STAGES, bool FP8>
__global__ void __launch_bounds__(WARPS * 32)
    decode_kernel(const float* __restrict__ qkv, const int32_t* __restrict__ rows, int num_rows,
                  DecodeSplits splits, AttentionShape shape, RowInputs in, LayerCache cache,
                  float* __restrict__ partial_acc, float* __restrict__ partial_ml,
                  bf16* __restrict__ out) {
  using L = HeadLayout<HD>;
  extern __shared__ __align__(16) uint32_t smem[];
  uint32_t* staging = smem;
  int* prefix = reinterpret_cast<int*>(smem + staging_words<HD, WARPS, STAGES, FP8>());
  int4* info = reinterpret_cast<int4*>(prefix + prefix_ints(num_rows));

  allow_dependent_launch();  // the merge may start meanwhile
  const int kv_heads = shape.num_kv_heads;
  // The work list comes from the step's positions alone; K, V and q are the kernels' ahead
  // (programmatic_launch.cuh).
  const int total = list_items(rows, num_rows, splits, kv_heads, in, prefix, info);
  wait_for_prerequisites();
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int g = lane / 4;
  const int c = lane % 4;
  const int group = shape.num_heads / kv_heads;
  const int kv_size = kv_heads * HD;
  const int qkv_width = (shape.num_heads + 2 * kv_heads) * HD;
  // q is pre-scaled so that the scores come out in base 2, as in the prefill kernel.
  const float q_scale = rsqrtf(static_cast<float>(HD)) * 1.4426950408889634f;
  // This warp's stage s is at my_stage + s * WARPS * kTile (an FP8 tile is half a bf16 one).
  constexpr int kTile = tile_words<HD, FP8>();
  uint32_t* my_stage = staging + warp * kTile;
  // Rows without keys (padding) get zeros, as the rest of the forward expects finite values.
  for (int pr = blockIdx.x; pr < num_rows; pr += gridDim.x) {
    if (info[pr].y > 0) continue;
    bf16* o = out + static_cast<int64_t>(info[pr].x) * shape.num_heads * HD;
    for (int i = threadIdx.x; i < shape.num_heads * HD; i += blockDim.x) o[i] = __float2bfloat16(0.0f);
  }

  for (int item = blockIdx.x; item < total; item += gridDim.x) {
    int r = 0;  // the last row whose items start at or before `item`
    for (int hi = num_rows; hi - r > 1;) {
      const int mid = (r + hi) / 2;
      if (prefix[mid] <= item) r = mid; else hi = mid;
    }
    const int4 ri = info[r];  // row, context, block-table offset
    const int local = item - prefix[r];
    const int split = local / kv_heads;
    const int kv_head = local % kv_heads;
    const DecodeSplitPlan plan = decode_split_plan(ri.y, splits);
    const int k0 = split * plan.chunk;
    const int k_end = min(k0 + plan.chunk, ri.y);
    const int tiles = (k_end - k0 + 15) / 16;
    const int my_tiles = warp < tiles ? (tiles - 1 - warp) / WARPS + 1 : 0;
    const int32_t* blocks = in.blocks + ri.z;
    const int bs = cache.block_size;
    const int64_t head_off = static_cast<int64_t>(kv_head) * HD;

    // Slot of key (lane % 16) of this warp's tile j, clamped into the piece: a clamped key's
    // copy is real data that the mask then ignores.
    auto slot_of = [&](int j) {
      const int key = min(k0 + (warp + j * WARPS) * 16 + lane % 16, k_end - 1);
      return blocks[key / bs] * bs + key % bs;
    };
    // Starts the copies of tile j into stage `stage`; key k of the tile has its slot in lane
    // `from + k`.
    auto issue = [&](int j, int stage, int slot, int from) {
      if (j >= my_tiles) return;
      auto slot_from = [&](int key) { return __shfl_sync(kFull, slot, from + key); };
      if constexpr (FP8) {
        copy_tile_fp8<HD>(my_stage + stage * WARPS * kTile, lane, cache.k8 + head_off,
                          cache.v8 + head_off, kv_size, slot_from);
      } else {
        copy_tile<HD>(my_stage + stage * WARPS * kTile, lane, cache.k + head_off,
                      cache.v + head_off, kv_size, slot_from);
      }
    };

    // Prologue: the first STAGES - 1 tiles, two tiles' slots per load of the block table.
#pragma unroll
    for (int j = 0; j < STAGES - 1; j += 2) {
      const int jj = j + lane / 16;
      const int slot = jj < my_tiles ? slot_of(jj) : 0;
      issue(j, j, slot, 0);
      cp_async_commit();
      if (j + 1 < STAGES - 1) {
        issue(j + 1, j + 1, slot, 16);
        cp_async_commit();
      }
    }
    int next_slot = STAGES - 1 < my_tiles ? slot_of(STAGES - 1) : 0;

    // q of head g of the group, in this lane's K order.
    uint32_t qa[L::kKWords];
    {
      const float* q = qkv + static_cast<int64_t>(ri.x) * qkv_width +
                       static_cast<int64_t>(kv_head * group + min(g, group - 1)) * HD;
#pragma unroll
      for (int w = 0; w < L::kKWords; ++w) {
        if constexpr (FP8) {  // K's pair order (HeadLayout::k_pair)
          const int e = L::k_pair(w, c);
          qa[w] = g < group ? pack_f16(q[e] * q_scale, q[e + L::pair_step(L::kCK)] * q_scale) : 0u;
        } else {
          const float2 v = *reinterpret_cast<const float2*>(q + L::k_element(w, c));
          qa[w] = g < group ? pack_bf16(v.x * q_scale, v.y * q_scale) : 0u;
        }
      }
    }

    float m_run = -INFINITY, l_run = 0.0f;
    float acc[L::kSteps][4];
#pragma unroll
    for (int mt = 0; mt < L::kSteps; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.0f;

    for (int j = 0; j < my_tiles; ++j) {
      cp_async_wait<STAGES - 2>();  // tile j has landed
      __syncwarp();                 // other lanes' copies are visible, the last tile is read
      issue(j + STAGES - 1, (j + STAGES - 1) % STAGES, next_slot, 0);
      cp_async_commit();
      if (j + STAGES < my_tiles) next_slot = slot_of(j + STAGES);
      const int tb = k0 + (warp + j * WARPS) * 16;
      tile_update<HD, FP8>(my_stage + (j % STAGES) * WARPS * kTile, lane, tb, k_end, qa, m_run,
                           l_run, acc);
    }
    cp_async_wait<0>();
    if constexpr (FP8) {  // V was read times 2^-8: exact in f32
#pragma unroll
      for (int mt = 0; mt < L::kSteps; ++mt) {
        acc[mt][0] *= 256.0f, acc[mt][1] *= 256.0f, acc[mt][2] *= 256.0f, acc[mt][3] *= 256.0f;
      }
    }

    merge_warps<HD, WARPS, FP8>(smem, warp, lane, group, m_run, l_run, acc);
    const int64_t first = (static_cast<int64_t>(r) * shape.num_heads + kv_head * group) *
                              splits.max_splits + split;
    bf16* out_row = out + (static_cast<int64_t>(ri.x) * shape.num_heads + kv_head * group) * HD;
    write_piece<HD, WARPS>(smem, group, splits.max_splits, first, plan.count == 1, out_row,
                           partial_acc, partial_ml);
    __syncthreads();  // the next item's copies overwrite the shared memory
  }
}

// As many blocks as fit on the GPU at once (the occupancy of this kernel at this shared-memory
// size), but no more than there can be items. Depends on the row count only, never on the rows'
// contexts, so a CUDA graph captured for a batch size launches the right grid for any step.
int persistent_blocks(const void* kernel, int threads, int smem, int64_t max_items) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int> per_sm;
  static int sms = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (sms == 0) {
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  }
  auto [it, fresh] = per_sm.try_emplace({kernel, smem}, 0);
  if (fresh) cudaOccupancyMaxActiveBlocksPerMultiprocessor(&it->second, kernel, threads, smem);
  return static_cast<int>(std::max<int64_t>(
      1, std::min<int64_t>(static_cast<int64_t>(std::max(it->second, 1)) * sms, max_items)));
}

template <int HD, int WARPS, int STAGES, bool FP8 = false>
cudaError_t launch(const float* qkv, const int32_t* rows, int num_rows, DecodeSplits splits,
                   AttentionShape shape, RowInputs in, LayerCache cache, float* partial_acc,
                   float* partial_ml, bf16* out, cudaStream_t stream) {
  auto kernel = decode_kernel<HD, WARPS, STAGES, FP8>;
  static const cudaError_t configured = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
      smem_bytes<HD, WARPS, STAGES, FP8>(kMaxRowsPerLaunch));
  if (configured != cudaSuccess) return configured;
  const int64_t head_stride = static_cast<int64_t>(shape.num_heads) * splits.max_splits;
  for (int first = 0; first < num_rows; first += kMaxRowsPerLaunch) {
    const int n = std::min(kMaxRowsPerLaunch, num_rows - first);
    const int smem = smem_bytes<HD, WARPS, STAGES, FP8>(n);
    const int blocks = persistent_blocks(reinterpret_cast<const void*>(kernel), WARPS * 32, smem,
                                         static_cast<int64_t>(n) * shape.num_kv_heads *
                                             splits.max_splits);
    float* acc = partial_acc + first * head_stride * HD;
    float* ml = partial_ml + first * head_stride * 2;
    cudaError_t e =
        launch_after_previous(ChainedKernel::kDecode, kernel, dim3(blocks), dim3(WARPS * 32), smem,
                              stream, qkv, rows + first, n, splits, shape, in, cache, acc, ml, out);
    if (e != cudaSuccess) return e;
    const int merge_smem = static_cast<int>(sizeof(float)) *
                           (2 * splits.max_splits + 1) * (shape.num_heads / shape.num_kv_heads);
    e = launch_after_previous(
        ChainedKernel::kMerge,
        splits.max_splits > kMergeBatch ? merge_kernel<HD, kMergeBatchLong> : merge_kernel<HD>,
        dim3(n, shape.num_kv_heads), dim3(kMergeThreads), merge_smem, stream, acc, ml,
        rows + first, splits, shape, in, out);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

bool valid(AttentionShape shape, DecodeSplits splits) {
  return decode_attention_supported(shape) && splits.max_splits >= 1 && splits.min_chunk >= 1;
}

}  // namespace decode

bool decode_attention_supported(AttentionShape s) {
  const int hd = s.head_dim;
  return s.num_kv_heads > 0 && s.num_kv_heads <= decode::kMaxKvHeads &&
         s.num_heads % s.num_kv_heads == 0 && s.num_heads / s.num_kv_heads <= 8 &&
         (hd == 16 || hd == 32 || hd == 64 || hd == 128 || hd == 256);
}

cudaError_t launch_attention_decode(const float* qkv, const int32_t* rows, int num_rows,
                                    DecodeSplits splits, AttentionShape shape, RowInputs in,
                                    LayerCache cache, float* partial_acc, float* partial_ml,
                                    bf16* out, cudaStream_t stream) {
  if (!decode::valid(shape, splits)) return cudaErrorInvalidValue;
  if (num_rows <= 0) return cudaGetLastError();
  using decode::kStages;
  using decode::kStagesFp8;
  using decode::kWarps;
  using decode::launch;
  if (cache.fp8()) {
    switch (shape.head_dim) {
      case 16: return launch<16, kWarps, kStagesFp8, true>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
      case 32: return launch<32, kWarps, kStagesFp8, true>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
      case 64: return launch<64, kWarps, kStagesFp8, true>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
      case 128: return launch<128, kWarps, kStagesFp8, true>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
      case 256: return launch<256, kWarps, kStagesFp8, true>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
      default: return cudaErrorInvalidValue;
    }
  }
  switch (shape.head_dim) {
    case 16: return launch<16, kWarps, kStages>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
    case 32: return launch<32, kWarps, kStages>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
    case 64: return launch<64, kWarps, kStages>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
    case 128: return launch<128, kWarps, kStages>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
    case 256: return launch<256, kWarps, kStages>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_attention_decode_variant(int warps, int stages, const float* qkv,
                                            const int32_t* rows, int num_rows, DecodeSplits splits,
                                            AttentionShape shape, RowInputs in, LayerCache cache,
                                            float* partial_acc, float* partial_ml, bf16* out,
                                            cudaStream_t stream) {
  if (!decode::valid(shape, splits) || shape.head_dim != 128 || cache.fp8()) {
    return cudaErrorInvalidValue;  // the pipeline-shape study is of the bf16 cache only
  }
  if (num_rows <= 0) return cudaGetLastError();
  using decode::launch;
  switch (warps * 10 + stages) {
    case 42: return launch<128, 4, 2>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
    case 43: return launch<128, 4, 3>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
    case 82: return launch<128, 8, 2>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace paceline::cuda
