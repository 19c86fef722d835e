// Paged flash-decoding for rows with one query token each (decode, speculative verify).
//
// Work items are (row, KV head, piece of the context) with the pieces of decode_split_plan,
// which depends only on the row's own context (kernels.h): batch invariance. A persistent grid
// (as many blocks as fit on the GPU, fixed per row count, so CUDA graphs can capture it) lists
// the items of all rows and takes them in turn; a padding row or a short context has fewer
// items, never idle blocks. A block's warps take the piece's 16-key tiles round-robin; each lane
// copies its share of K and V with cp.async into its own shared-memory slots, STAGES tiles in
// flight, so no barrier is needed inside the loop and the copies hide the memory latency. The
// group's query heads share every K/V byte (tensor cores, attention_decode.cuh). The block then
// merges its warps' softmax states into one partial per head; attention_decode_merge.cu merges
// the pieces.
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>

#include "exec/cuda/attention_decode_tile.cuh"

namespace paceline::cuda {
namespace decode {

template <int HD, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32)
    decode_kernel(const float* __restrict__ qkv, const int32_t* __restrict__ rows, int num_rows,
                  DecodeSplits splits, AttentionShape shape, RowInputs in, LayerCache cache,
                  float* __restrict__ partial_acc, float* __restrict__ partial_ml) {
  using L = HeadLayout<HD>;
  extern __shared__ __align__(16) uint32_t smem[];
  uint32_t* staging = smem;
  int* prefix = reinterpret_cast<int*>(smem + staging_words<HD, WARPS, STAGES>());
  int4* info = reinterpret_cast<int4*>(prefix + prefix_ints(num_rows));

  const int kv_heads = shape.num_kv_heads;
  const int total = list_items(rows, num_rows, splits, kv_heads, in, prefix, info);
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int g = lane / 4;
  const int c = lane % 4;
  const int group = shape.num_heads / kv_heads;
  const int kv_size = kv_heads * HD;
  const int qkv_width = (shape.num_heads + 2 * kv_heads) * HD;
  // q is pre-scaled so that the scores come out in base 2, as in the prefill kernel.
  const float q_scale = rsqrtf(static_cast<float>(HD)) * 1.4426950408889634f;
  uint32_t* my_stage = staging + warp * 32 * L::kLaneWords;

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
      uint32_t* st = my_stage + stage * WARPS * 32 * L::kLaneWords;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int s = __shfl_sync(0xffffffffu, slot, from + half * 8 + g);
        const bf16* src = cache.k + static_cast<int64_t>(s) * kv_size + head_off + c * 2 * L::kCK;
#pragma unroll
        for (int i = 0; i < L::kNK; ++i) {
          cp_async<4 * L::kCK>(smem_address(st + ((half * L::kNK + i) * 32 + lane) * L::kCK),
                               src + i * 8 * L::kCK);
        }
      }
      uint32_t* sv = st + 2 * 32 * L::kKWords;
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const int s = __shfl_sync(0xffffffffu, slot, from + (v / 2) * 8 + 2 * c + v % 2);
        const bf16* src = cache.v + static_cast<int64_t>(s) * kv_size + head_off + g * 2 * L::kCV;
#pragma unroll
        for (int i = 0; i < L::kNV; ++i) {
          cp_async<4 * L::kCV>(smem_address(sv + ((v * L::kNV + i) * 32 + lane) * L::kCV),
                               src + i * 16 * L::kCV);
        }
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
        const float2 v = *reinterpret_cast<const float2*>(q + L::k_element(w, c));
        qa[w] = g < group ? pack_bf16(v.x * q_scale, v.y * q_scale) : 0u;
      }
    }

    float m_run = -INFINITY, l_run = 0.0f;
    float acc[L::kSteps][4];
#pragma unroll
    for (int mt = 0; mt < L::kSteps; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.0f;

    for (int j = 0; j < my_tiles; ++j) {
      cp_async_wait<STAGES - 2>();  // tile j has landed
      issue(j + STAGES - 1, (j + STAGES - 1) % STAGES, next_slot, 0);
      cp_async_commit();
      if (j + STAGES < my_tiles) next_slot = slot_of(j + STAGES);
      const uint32_t* st = my_stage + (j % STAGES) * WARPS * 32 * L::kLaneWords;
      const int tb = k0 + (warp + j * WARPS) * 16;
      tile_update<HD>(st, lane, tb, k_end, qa, m_run, l_run, acc);
    }
    cp_async_wait<0>();

    merge_warps<HD, WARPS>(smem, warp, lane, group, m_run, l_run, acc);
    const int64_t first = (static_cast<int64_t>(r) * shape.num_heads + kv_head * group) *
                              splits.max_splits + split;
    write_partial<HD, WARPS>(smem, group, splits.max_splits, first, partial_acc, partial_ml);
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

template <int HD, int WARPS, int STAGES>
cudaError_t launch(const float* qkv, const int32_t* rows, int num_rows, DecodeSplits splits,
                   AttentionShape shape, RowInputs in, LayerCache cache, float* partial_acc,
                   float* partial_ml, cudaStream_t stream) {
  auto kernel = decode_kernel<HD, WARPS, STAGES>;
  static const int max_smem = [&] {
    const int bytes = smem_bytes<HD, WARPS, STAGES>(kMaxRowsPerLaunch);
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    return bytes;
  }();
  (void)max_smem;
  const int64_t head_stride = static_cast<int64_t>(shape.num_heads) * splits.max_splits;
  for (int first = 0; first < num_rows; first += kMaxRowsPerLaunch) {
    const int n = std::min(kMaxRowsPerLaunch, num_rows - first);
    const int smem = smem_bytes<HD, WARPS, STAGES>(n);
    const int blocks = persistent_blocks(reinterpret_cast<const void*>(kernel), WARPS * 32, smem,
                                         static_cast<int64_t>(n) * shape.num_kv_heads *
                                             splits.max_splits);
    kernel<<<blocks, WARPS * 32, smem, stream>>>(qkv, rows + first, n, splits, shape, in, cache,
                                                 partial_acc + first * head_stride * HD,
                                                 partial_ml + first * head_stride * 2);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace decode

bool decode_attention_supported(AttentionShape s) {
  const int hd = s.head_dim;
  return s.num_kv_heads > 0 && s.num_heads % s.num_kv_heads == 0 &&
         s.num_heads / s.num_kv_heads <= 8 &&
         (hd == 16 || hd == 32 || hd == 64 || hd == 128 || hd == 256);
}

cudaError_t launch_attention_decode(const float* qkv, const int32_t* rows, int num_rows,
                                    DecodeSplits splits, AttentionShape shape, RowInputs in,
                                    LayerCache cache, float* partial_acc, float* partial_ml,
                                    cudaStream_t stream) {
  if (!decode_attention_supported(shape) || splits.max_splits < 1 || splits.min_chunk < 1) {
    return cudaErrorInvalidValue;
  }
  if (num_rows <= 0) return cudaGetLastError();
#define PACELINE_DECODE(HD)                                                                  \
  case HD:                                                                                   \
    return decode::launch<HD, decode::kWarps, decode::kStages>(                              \
        qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, stream);
  switch (shape.head_dim) {
    PACELINE_DECODE(16)
    PACELINE_DECODE(32)
    PACELINE_DECODE(64)
    PACELINE_DECODE(128)
    PACELINE_DECODE(256)
    default:
      return cudaErrorInvalidValue;
  }
#undef PACELINE_DECODE
}

cudaError_t launch_attention_decode_variant(int warps, int stages, const float* qkv,
                                            const int32_t* rows, int num_rows, DecodeSplits splits,
                                            AttentionShape shape, RowInputs in, LayerCache cache,
                                            float* partial_acc, float* partial_ml,
                                            cudaStream_t stream) {
  if (!decode_attention_supported(shape) || shape.head_dim != 128 || splits.max_splits < 1 ||
      splits.min_chunk < 1) {
    return cudaErrorInvalidValue;
  }
  if (num_rows <= 0) return cudaGetLastError();
  using decode::launch;
  const int key = warps * 10 + stages;
  switch (key) {
    case 42: return launch<128, 4, 2>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, stream);
    case 43: return launch<128, 4, 3>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, stream);
    case 44: return launch<128, 4, 4>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, stream);
    case 82: return launch<128, 8, 2>(qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace paceline::cuda
