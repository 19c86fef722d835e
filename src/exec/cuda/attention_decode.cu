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
#include <type_traits>
#include <utility>

#include "exec/cuda/attention_decode_merge.cuh"
#include "exec/cuda/attention_decode_tile.cuh"
#include "exec/cuda/programmatic_launch.cuh"
#include "exec/cuda/tma.cuh"

namespace paceline::cuda {
namespace decode {

// Where one work item sits (attention_decode.cu's item loop): its row (index into the launch's
// rows, and info's row, context and block-table offset), piece and KV head, its keys [k0,
// k_end), and this warp's share of its 16-key tiles.
struct ItemPlace {
  int r = 0;
  int4 ri{};
  int split = 0;
  int kv_head = 0;
  int pieces = 0;
  int k0 = 0;
  int k_end = 0;
  int my_tiles = 0;
};

template <int WARPS>
__device__ __forceinline__ ItemPlace place_of(int item, const int* prefix, const int4* info,
                                              int num_rows, int kv_heads, DecodeSplits splits,
                                              int warp) {
  ItemPlace p;
  for (int hi = num_rows; hi - p.r > 1;) {  // the last row whose items start at or before `item`
    const int mid = (p.r + hi) / 2;
    if (prefix[mid] <= item) p.r = mid; else hi = mid;
  }
  p.ri = info[p.r];
  const int local = item - prefix[p.r];
  p.split = local / kv_heads;
  p.kv_head = local % kv_heads;
  const DecodeSplitPlan plan = decode_split_plan(p.ri.y, splits);
  p.pieces = plan.count;
  p.k0 = p.split * plan.chunk;
  p.k_end = min(p.k0 + plan.chunk, p.ri.y);
  const int tiles = (p.k_end - p.k0 + 15) / 16;
  p.my_tiles = warp < tiles ? (tiles - 1 - warp) / WARPS + 1 : 0;
  return p;
}

// The warps' merge (merge_warps, write_piece) uses the end of the staging, so that a block can
// start copying its next item's first tiles into the stages before it while it merges: kAhead
// tiles of STAGES - 1 (all of them for bf16's two stages, two of three for FP8's four).
template <int HD, int WARPS>
constexpr int merge_words() {
  return 2 * WARPS * 8 + WARPS * 8 * HD;
}
template <int HD, int WARPS, int STAGES, bool FP8>
constexpr int merge_offset() {
  return (staging_words<HD, WARPS, STAGES, FP8>() - merge_words<HD, WARPS>()) / 4 * 4;
}
template <int HD, int WARPS, int STAGES, bool FP8>
constexpr int tiles_ahead() {
  const int free_stages = merge_offset<HD, WARPS, STAGES, FP8>() / (WARPS * tile_words<HD, FP8>());
  return free_stages < STAGES - 1 ? free_stages : STAGES - 1;
}

// Three blocks of four warps per SM, as many as its shared memory allows at head_dim 128, and the
// bound says so (12 warps, whatever WARPS; head_dim 256 has no bound, as it needs more registers):
// without it ptxas (CUDA 13.0) chose 128 registers for the FP8 kernel and spilled, once the
// rescale in tile_update became conditional; with it, 141 (FP8) and 158 (bf16), no spill.
//
// splits.prefetch: a block issues its next item's first tiles_ahead tiles (their block-table lookups
// and copies) before it merges the current item's warps, so the merge, the partial's writes and
// the next item's first memory round trips overlap; otherwise each item starts its copies after
// the last one's merge. The same arithmetic either way: only when the copies start differs.
//
// BULK (FP8, head_dim 128, blocks of 16 keys: a tile is one block's keys of one head, two
// contiguous runs of 2 KB): lane 0 of a warp copies a tile by two bulk tensor copies (k_map,
// v_map: rows of 128 bytes, boxes of 16 rows, the 128-byte swizzle) counted on the stage's
// barrier, where the warp's lanes otherwise issue 16-byte cp.asyncs, 8 each and their addresses
// (splits.fp8_bulk). The rest of the kernel is the same.
//
// LEAD: how many loop turns ahead a warp loads the block-table entries of the tiles it copies
// (DecodeSplits::fp8_table_lead): one, or a ring of LEAD entries; QNEXT: whether a block loads
// the next item's q during this item's merge (DecodeSplits::q_next). The same arithmetic either
// way.
template <int HD, int WARPS, int STAGES, bool FP8, bool BULK = false, int LEAD = 1,
          bool QNEXT = false>
__global__ void __launch_bounds__(WARPS * 32, HD <= 128 ? 12 / WARPS : 1)
    decode_kernel(const float* __restrict__ qkv, const int32_t* __restrict__ rows, int num_rows,
                  DecodeSplits splits, AttentionShape shape, RowInputs in, LayerCache cache,
                  float* __restrict__ partial_acc, float* __restrict__ partial_ml,
                  bf16* __restrict__ out, const __grid_constant__ CUtensorMap k_map,
                  const __grid_constant__ CUtensorMap v_map) {
  using L = HeadLayout<HD>;
  static_assert(!BULK || (FP8 && HD == 128), "bulk copies: an FP8 cache, head_dim 128");
  static_assert(LEAD >= 1, "entries are loaded at least a turn ahead");
  constexpr int kAhead = tiles_ahead<HD, WARPS, STAGES, FP8>();
  static_assert(kAhead >= 1, "the merge leaves no stage for the next item's first tile");
  extern __shared__ __align__(16) uint32_t smem[];
  uint32_t* staging = smem;
  if constexpr (BULK) {  // the swizzle's 1,024-byte alignment
    const uint32_t at = smem_address(smem);
    staging = smem + ((1024 - at % 1024) % 1024) / 4;
  }
  uint32_t* merge_area = staging + merge_offset<HD, WARPS, STAGES, FP8>();
  int* prefix = reinterpret_cast<int*>(staging + staging_words<HD, WARPS, STAGES, FP8>());
  int4* info = reinterpret_cast<int4*>(prefix + prefix_ints(num_rows));
  // BULK: barrier s of warp w at bars[w * STAGES + s], one arrival (lane 0's) a phase.
  uint64_t* bars = reinterpret_cast<uint64_t*>(info + num_rows);
  if constexpr (BULK) {
    if (threadIdx.x % 32 == 0) {
      for (int s = 0; s < STAGES; ++s) {
        tma::barrier_init(smem_address(bars + (threadIdx.x / 32) * STAGES + s), 1);
      }
      tma::barrier_init_fence();
    }
  }  // list_items' __syncthreads makes them visible

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
  const int qkv_width = (shape.num_heads + 2 * kv_heads) * HD;
  const int bs = cache.block_size;
  // q is pre-scaled so that the scores come out in base 2, as in the prefill kernel.
  const float q_scale = rsqrtf(static_cast<float>(HD)) * 1.4426950408889634f;
  // This warp's stage s is at my_stage + s * WARPS * kTile (an FP8 tile is half a bf16 one).
  constexpr int kTile = tile_words<HD, FP8>();
  uint32_t* my_stage = staging + warp * kTile;
  uint64_t* my_bars = bars + warp * STAGES;
  uint32_t phases = 0;  // BULK: bit s, the parity of stage s's next phase
  // Rows without keys (padding) get zeros, as the rest of the forward expects finite values.
  for (int pr = blockIdx.x; pr < num_rows; pr += gridDim.x) {
    if (info[pr].y > 0) continue;
    bf16* o = out + static_cast<int64_t>(info[pr].x) * shape.num_heads * HD;
    for (int i = threadIdx.x; i < shape.num_heads * HD; i += blockDim.x) o[i] = __float2bfloat16(0.0f);
  }

  // Key (lane % 16) of this warp's tile j of item p, clamped into the piece (a clamped key's
  // copy is real data that the mask then ignores), its block (a load of the block table) and
  // its row of the item's KV head in the planes (kv_row, kernels.h).
  auto key_of = [&](const ItemPlace& p, int j) {
    return min(p.k0 + (warp + j * WARPS) * 16 + lane % 16, p.k_end - 1);
  };
  auto block_of = [&](const ItemPlace& p, int key) { return in.blocks[p.ri.z + key / bs]; };
  auto row_at = [&](const ItemPlace& p, int key, int block) {
    return static_cast<int>(kv_row(block, key % bs, p.kv_head, kv_heads, bs));
  };
  auto row_of = [&](const ItemPlace& p, int j) {
    const int key = key_of(p, j);
    return row_at(p, key, block_of(p, key));
  };
  // Starts the copies of item p's tile j into stage `stage`; key k of the tile has its row in
  // lane `from + k`.
  auto issue = [&](const ItemPlace& p, int j, int stage, int row, int from) {
    if (j >= p.my_tiles) return;
    auto row_from = [&](int key) { return __shfl_sync(kFull, row, from + key); };
    if constexpr (BULK) {
      const int first = row_from(0);  // key 0 of the tile: its block's first row of the head
      if (lane == 0) {
        const uint32_t bar = smem_address(my_bars + stage);
        const uint32_t dst = smem_address(my_stage + stage * WARPS * kTile);
        tma::barrier_expect_bytes(bar, 2 * 16 * HD);
        tma::load_2d(dst, &k_map, 0, first, bar);
        tma::load_2d(dst + 16 * HD, &v_map, 0, first, bar);
      }
    } else if constexpr (FP8) {
      copy_tile_fp8<HD>(my_stage + stage * WARPS * kTile, lane, cache.k8, cache.v8, row_from);
    } else {
      copy_tile<HD>(my_stage + stage * WARPS * kTile, lane, cache.k, cache.v, row_from);
    }
  };
  // Tiles [J0, J1) of the prologue, tile j into stage j, two tiles' rows per load of the block
  // table; one commit group per tile (empty past the warp's tiles), in tile order.
  auto prologue = [&](const ItemPlace& p, auto j0, auto j1) {
    constexpr int J0 = decltype(j0)::value;
    constexpr int J1 = decltype(j1)::value;
#pragma unroll
    for (int j = J0; j < J1; j += 2) {
      const int jj = j + lane / 16;
      const int row = jj < p.my_tiles ? row_of(p, jj) : 0;
      issue(p, j, j, row, 0);
      cp_async_commit();
      if (j + 1 < J1) {
        issue(p, j + 1, j + 1, row, 16);
        cp_async_commit();
      }
    }
  };
  using Zero = std::integral_constant<int, 0>;
  using Ahead = std::integral_constant<int, kAhead>;
  using Last = std::integral_constant<int, STAGES - 1>;

  // QNEXT: the q values of an item (this lane's, as it reads them), loaded into q_next during the
  // merge of the block's item before it (every item but the block's first), so that an item's
  // first math does not wait for them (an H100 profile at 1k x 64: 21% of the samples on that
  // wait at an item's start).
  auto load_q = [&](const ItemPlace& p, float2 (&dst)[L::kKWords]) {
    const float* q = qkv + static_cast<int64_t>(p.ri.x) * qkv_width +
                     static_cast<int64_t>(p.kv_head * group + min(g, group - 1)) * HD;
#pragma unroll
    for (int w = 0; w < L::kKWords; ++w) dst[w] = *reinterpret_cast<const float2*>(q + L::k_element(w, c));
  };
  float2 q_next[QNEXT ? L::kKWords : 1];

  ItemPlace cur;
  bool started = false;  // cur's first kAhead tiles are already on their way
  if (blockIdx.x < total) cur = place_of<WARPS>(blockIdx.x, prefix, info, num_rows, kv_heads, splits, warp);
  for (int item = blockIdx.x; item < total; item += gridDim.x) {
    if (!started) prologue(cur, Zero{}, Ahead{});
    prologue(cur, Ahead{}, Last{});
    // The block-table entry of the tile a loop turn copies is loaded a turn ahead and used after
    // that turn's math (and here after q's loads): used at once, its latency stalled the warp
    // every tile (27% of the FP8 kernel's samples at 32k x 16 on an H100, session 30).
    // LEAD > 1: the entries of tiles STAGES - 1 to STAGES - 2 + LEAD in a ring, lead_*[0] the
    // next tile to copy; turn j loads the entry of tile j + STAGES - 1 + LEAD, used LEAD - 1
    // turns later.
    int next_key = key_of(cur, STAGES - 1);
    int next_block = STAGES - 1 < cur.my_tiles ? block_of(cur, next_key) : 0;
    int lead_key[LEAD], lead_block[LEAD];
    if constexpr (LEAD > 1) {
      lead_key[0] = next_key;
      lead_block[0] = next_block;
#pragma unroll
      for (int t = 1; t < LEAD; ++t) {
        lead_key[t] = key_of(cur, STAGES - 1 + t);
        lead_block[t] = STAGES - 1 + t < cur.my_tiles ? block_of(cur, lead_key[t]) : 0;
      }
    }

    // q of head g of the group, in this lane's K order (QNEXT: loaded during the merge of the
    // block's item before, where there was one).
    uint32_t qa[L::kKWords];
    auto pack_q = [&](float2 v) {
      if constexpr (FP8) {
        return g < group ? pack_f16(v.x * q_scale, v.y * q_scale) : 0u;
      } else {
        return g < group ? pack_bf16(v.x * q_scale, v.y * q_scale) : 0u;
      }
    };
    if constexpr (QNEXT) {
      if (item == static_cast<int>(blockIdx.x)) load_q(cur, q_next);
#pragma unroll
      for (int w = 0; w < L::kKWords; ++w) qa[w] = pack_q(q_next[w]);
    } else {
      const float* q = qkv + static_cast<int64_t>(cur.ri.x) * qkv_width +
                       static_cast<int64_t>(cur.kv_head * group + min(g, group - 1)) * HD;
#pragma unroll
      for (int w = 0; w < L::kKWords; ++w) {
        qa[w] = pack_q(*reinterpret_cast<const float2*>(q + L::k_element(w, c)));
      }
    }

    float m_run = -INFINITY, l_run = 0.0f;
    float acc[L::kSteps][4];
#pragma unroll
    for (int mt = 0; mt < L::kSteps; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.0f;

    int next_row = row_at(cur, next_key, next_block);
    for (int j = 0; j < cur.my_tiles; ++j) {
      if constexpr (BULK) {  // tile j has landed
        const int s = j % STAGES;
        tma::barrier_wait(smem_address(my_bars + s), (phases >> s) & 1u);
        phases ^= 1u << s;
      } else {
        cp_async_wait<STAGES - 2>();  // tile j has landed
      }
      __syncwarp();                 // other lanes' copies are visible, the last tile is read
      issue(cur, j + STAGES - 1, (j + STAGES - 1) % STAGES, next_row, 0);
      cp_async_commit();
      const bool more = j + STAGES < cur.my_tiles;
      if constexpr (LEAD > 1) {
#pragma unroll
        for (int t = 0; t + 1 < LEAD; ++t) {
          lead_key[t] = lead_key[t + 1];
          lead_block[t] = lead_block[t + 1];
        }
        const int far = j + STAGES - 1 + LEAD;  // the tile whose entry is loaded now
        if (far < cur.my_tiles) {
          lead_key[LEAD - 1] = key_of(cur, far);
          lead_block[LEAD - 1] = block_of(cur, lead_key[LEAD - 1]);
        }
      } else if (more) {
        next_key = key_of(cur, j + STAGES);
        next_block = block_of(cur, next_key);
      }
      const int tb = cur.k0 + (warp + j * WARPS) * 16;
      tile_update<HD, FP8, BULK>(my_stage + (j % STAGES) * WARPS * kTile, lane, tb, cur.k_end, qa,
                                 m_run, l_run, acc);
      if constexpr (LEAD > 1) {
        if (more) next_row = row_at(cur, lead_key[0], lead_block[0]);
      } else if (more) {
        next_row = row_at(cur, next_key, next_block);
      }
    }
    cp_async_wait<0>();

    const ItemPlace done = cur;
    const int next = item + gridDim.x;
    started = false;
    if (next < total) {
      cur = place_of<WARPS>(next, prefix, info, num_rows, kv_heads, splits, warp);
      if (splits.prefetch) {
        __syncwarp();  // every lane is done reading this warp's stages
        prologue(cur, Zero{}, Ahead{});
        started = true;
      }
    }

    merge_warps<HD, WARPS>(merge_area, warp, lane, group, m_run, l_run, acc);
    if constexpr (QNEXT) {  // the accumulators are in shared memory: their registers take q
      if (next < total) load_q(cur, q_next);
    }
    const int64_t first = (static_cast<int64_t>(done.r) * shape.num_heads + done.kv_head * group) *
                              splits.max_splits + done.split;
    bf16* out_row = out + (static_cast<int64_t>(done.ri.x) * shape.num_heads + done.kv_head * group) * HD;
    write_piece<HD, WARPS>(merge_area, group, splits.max_splits, first, done.pieces == 1, out_row,
                           partial_acc, partial_ml);
    if constexpr (BULK) tma::fence_proxy_async();  // the merge's writes before bulk copies
    __syncthreads();  // the next item's later copies overwrite the merge's shared memory
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

template <int HD, int WARPS, int STAGES, bool FP8 = false, bool BULK = false, int LEAD = 1,
          bool QNEXT = false>
cudaError_t launch_kernel(const float* qkv, const int32_t* rows, int num_rows, DecodeSplits splits,
                          AttentionShape shape, RowInputs in, LayerCache cache, float* partial_acc,
                          float* partial_ml, bf16* out, cudaStream_t stream,
                          const CUtensorMap& k_map = CUtensorMap{},
                          const CUtensorMap& v_map = CUtensorMap{}) {
  auto kernel = decode_kernel<HD, WARPS, STAGES, FP8, BULK, LEAD, QNEXT>;
  static const cudaError_t configured = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
      smem_bytes<HD, WARPS, STAGES, FP8, BULK>(kMaxRowsPerLaunch));
  if (configured != cudaSuccess) return configured;
  const int64_t head_stride = static_cast<int64_t>(shape.num_heads) * splits.max_splits;
  for (int first = 0; first < num_rows; first += kMaxRowsPerLaunch) {
    const int n = std::min(kMaxRowsPerLaunch, num_rows - first);
    const int smem = smem_bytes<HD, WARPS, STAGES, FP8, BULK>(n);
    const int blocks = persistent_blocks(reinterpret_cast<const void*>(kernel), WARPS * 32, smem,
                                         static_cast<int64_t>(n) * shape.num_kv_heads *
                                             splits.max_splits);
    float* acc = partial_acc + first * head_stride * HD;
    float* ml = partial_ml + first * head_stride * 2;
    cudaError_t e =
        launch_after_previous(ChainedKernel::kDecode, kernel, dim3(blocks), dim3(WARPS * 32), smem,
                              stream, qkv, rows + first, n, splits, shape, in, cache, acc, ml, out,
                              k_map, v_map);
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

// An FP8 cache plane (bytes, rows of 128 of one KV head: kv_row) as a 2-D tensor whose boxes are
// one block's 16 keys of one head, in the 128-byte swizzle (Fp8Layout<128, true>). False where
// the cache's size is not said, its blocks are not of 16 keys or the driver has no encoder.
bool fp8_tile_map(const uint8_t* plane, int64_t num_slots, int kv_heads, int block_size,
                  CUtensorMap* map) {
  const auto encode = tma::tensor_map_encoder();
  if (encode == nullptr || num_slots <= 0 || block_size != 16) return false;
  const cuuint64_t dims[2] = {128, static_cast<cuuint64_t>(num_slots) * kv_heads};
  const cuuint64_t strides[1] = {128};
  const cuuint32_t box[2] = {128, 16};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(plane), dims, strides,
                box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The kernel for the cache's element type; an FP8 cache's, at head_dim 128 where the tensor maps
// can be had, by splits.fp8_bulk, else with the block-table entries kDecodeTableLead turns ahead
// by splits.fp8_table_lead; the next item's q loaded during a merge by splits.q_next.
template <int HD, int WARPS, int STAGES, bool FP8 = false>
cudaError_t launch(const float* qkv, const int32_t* rows, int num_rows, DecodeSplits splits,
                   AttentionShape shape, RowInputs in, LayerCache cache, float* partial_acc,
                   float* partial_ml, bf16* out, cudaStream_t stream) {
  if constexpr (FP8 && HD == 128) {
    CUtensorMap k_map{}, v_map{};
    if (splits.fp8_bulk &&
        fp8_tile_map(cache.k8, cache.num_slots, shape.num_kv_heads, cache.block_size, &k_map) &&
        fp8_tile_map(cache.v8, cache.num_slots, shape.num_kv_heads, cache.block_size, &v_map)) {
      return launch_kernel<HD, WARPS, STAGES, FP8, true>(qkv, rows, num_rows, splits, shape, in,
                                                         cache, partial_acc, partial_ml, out,
                                                         stream, k_map, v_map);
    }
  }
  if constexpr (FP8) {
    if (splits.fp8_table_lead) {
      return splits.q_next
                 ? launch_kernel<HD, WARPS, STAGES, FP8, false, kDecodeTableLead, true>(
                       qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml,
                       out, stream)
                 : launch_kernel<HD, WARPS, STAGES, FP8, false, kDecodeTableLead>(
                       qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml,
                       out, stream);
    }
  }
  if (splits.q_next) {
    return launch_kernel<HD, WARPS, STAGES, FP8, false, 1, true>(
        qkv, rows, num_rows, splits, shape, in, cache, partial_acc, partial_ml, out, stream);
  }
  return launch_kernel<HD, WARPS, STAGES, FP8>(qkv, rows, num_rows, splits, shape, in, cache,
                                               partial_acc, partial_ml, out, stream);
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
