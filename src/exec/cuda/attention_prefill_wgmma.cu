// Prefill attention on Hopper's warpgroup MMAs (wgmma), head_dim 128: the kernel prefill takes
// on the H200 (attention_prefill.cu chooses it). A block of two warpgroups takes a tile of
// consecutive rows of one sequence and one KV head; its 128 query slots are (row, head of the
// group) pairs, 64 per warpgroup, so GQA heads share every K/V chunk. q waits in shared memory
// (bf16, pre-scaled by log2(e) / sqrt(head_dim)), and keys stream through shared memory 128 at a
// time from the paged cache in three stages: after a chunk's barrier, the next chunk's copies
// start while the warpgroups compute (bulk tensor copies of whole blocks for a sized bf16 cache,
// cp.async otherwise). An FP8 cache is widened to f16 on its way in instead (one conversion
// instruction a pair of values, exact), and its kernels multiply on f16 tensor cores: q and P
// are then f16 too (three more mantissa bits than bf16; q clamped to f16's range).
// Per chunk a warpgroup issues S = q . K^T (8 MMAs of k16 from shared memory), masks and runs the
// online softmax in registers (base 2), and O += P . V with P from registers, as bf16 (f16), and
// V read MN-major. Causal and varlen: a query sees the keys at positions <= its own. A query's
// result depends only on its own keys: chunks start at key 0 whatever the tile, and a chunk a query
// cannot see changes none of its bits, so the tiling is free to change.
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "exec/cuda/attention_prefill_wgmma.cuh"
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kv_fp8.cuh"
#include "exec/cuda/tma.cuh"
#include "exec/cuda/wgmma.cuh"

#include <cudaTypedefs.h>

namespace paceline::cuda {
namespace {

constexpr int kHeadDim = 128;
constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
constexpr int kWarpgroups = 2;
constexpr int kThreads = 128 * kWarpgroups;
constexpr int kSlots = 64 * kWarpgroups;  // query slots per block
constexpr int kKeys = 128;                // keys per chunk
constexpr int kStages = 3;                // chunks in shared memory: two read, one in flight
constexpr uint32_t kQBytes = kSlots * kHeadDim * 2;
constexpr uint32_t kTileBytes = kKeys * kHeadDim * 2;  // one K or V chunk
constexpr uint32_t kAtomBytes = kKeys * 128;           // 64 columns of a chunk
// q, then K of each stage, then V of each stage; 1,024 bytes to align the swizzle atoms.
constexpr size_t kSmemBytes = kQBytes + 2 * kStages * kTileBytes + 1024;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}
__device__ __forceinline__ void st_shared16(uint32_t dst, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
__device__ __forceinline__ uint32_t pack_f16(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
// Two MMA operands in one word: f16 (F16: an FP8 cache's kernels) or bf16.
template <bool F16>
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  if constexpr (F16) {
    return pack_f16(lo, hi);
  } else {
    return pack_bf16(lo, hi);
  }
}

struct ChunkSource {
  const int32_t* blocks;  // the sequence's block table
  int block_size;
  int shift;  // log2(block_size) when it is a power of two, else -1
  int kv_heads;
  int kv_head;
  int last_pos;

  // The index in the block table of the block holding key.
  __device__ __forceinline__ int block_of(int key) const {
    return shift >= 0 ? key >> shift : key / block_size;
  }
  // The element `first` of key's head vector, key being in cache block `block` (the block
  // table's entry for it, read by the caller).
  __device__ __forceinline__ int64_t element_in(int block, int key, int first) const {
    const int offset = shift >= 0 ? key & (block_size - 1) : key % block_size;
    return kv_row(block, offset, kv_head, kv_heads, block_size) * kHeadDim + first;
  }
  // The first element of key's 16-byte bf16 chunk c.
  __device__ __forceinline__ int64_t element(int key, int c) const {
    return element_in(blocks[block_of(key)], key, c * 8);
  }
};

// Keys [base, base + kKeys) of the tile's KV head into one stage's K and V tiles (zeros past
// last_pos, so that masked keys multiply finite values): asynchronous copies, one group. A
// thread always copies the same 16-byte column c of keys j0, j0 + 16, ...: its swizzled offsets
// are one offset plus multiples of 16 rows.
constexpr int kRowsPerPass = kThreads / kChunks;  // 16 keys a pass of every thread
constexpr int kPasses = kKeys / kRowsPerPass;     // 8

__device__ __forceinline__ void load_chunk_bf16(uint32_t k_s, uint32_t v_s, int base,
                                                const ChunkSource& src, const LayerCache& cache) {
  const int c = threadIdx.x % kChunks, j0 = threadIdx.x / kChunks;
  const uint32_t at0 = wgmma::swizzled_offset(kKeys, j0, c);
#pragma unroll
  for (int n = 0; n < kPasses; ++n) {
    const int key = base + j0 + n * kRowsPerPass;
    const uint32_t at = at0 + n * kRowsPerPass * 128;
    if (key > src.last_pos) {
      st_shared16(k_s + at, make_uint4(0, 0, 0, 0));
      st_shared16(v_s + at, make_uint4(0, 0, 0, 0));
    } else {
      const int64_t e = src.element(key, c);
      cp_async16(k_s + at, cache.k + e);
      cp_async16(v_s + at, cache.v + e);
    }
  }
  cp_async_commit();
}

// The FP8 cache's chunk: eight e4m3 bytes a vector widened to eight f16 (exact), in batches of
// four vectors whose loads are all issued before the first store.
__device__ __forceinline__ void load_chunk_fp8(uint32_t k_s, uint32_t v_s, int base,
                                               const ChunkSource& src, const LayerCache& cache) {
  constexpr int kBatch = 4;
  static_assert(kPasses % kBatch == 0, "batches per thread");
  const int c = threadIdx.x % kChunks, j0 = threadIdx.x / kChunks;
  const uint32_t at0 = wgmma::swizzled_offset(kKeys, j0, c);
#pragma unroll 1
  for (int b0 = 0; b0 < kPasses; b0 += kBatch) {
    uint2 kr[kBatch], vr[kBatch];
#pragma unroll
    for (int n = 0; n < kBatch; ++n) {
      const int key = base + j0 + (b0 + n) * kRowsPerPass;
      kr[n] = vr[n] = make_uint2(0, 0);  // e4m3 zeros widen to f16 +0: the bf16 path's zeros
      if (key <= src.last_pos) {
        const int64_t e = src.element(key, c);
        kr[n] = *reinterpret_cast<const uint2*>(cache.k8 + e);
        vr[n] = *reinterpret_cast<const uint2*>(cache.v8 + e);
      }
    }
#pragma unroll
    for (int n = 0; n < kBatch; ++n) {
      const uint32_t at = at0 + (b0 + n) * kRowsPerPass * 128;
      st_shared16(k_s + at, fp8x8_to_f16x8(kr[n]));
      st_shared16(v_s + at, fp8x8_to_f16x8(vr[n]));
    }
  }
}

template <bool FP8>
__device__ __forceinline__ void load_chunk(uint32_t k_s, uint32_t v_s, int base,
                                           const ChunkSource& src, const LayerCache& cache) {
  if constexpr (FP8) {
    load_chunk_fp8(k_s, v_s, base, src, cache);
  } else {
    load_chunk_bf16(k_s, v_s, base, src, cache);
  }
}

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// S = q . K^T of the warpgroup's 64 slots and a chunk's 128 keys, over head_dim in 8 steps of
// 16: 32 bytes further along a swizzled row each step, the next atom after four. Issued and
// committed; the caller waits (scores() below, or after handing the tensor cores on).
// The descriptors are encoded once a call, and each step's adds its byte offset / 16 (the start
// address field: shared memory stays below 256 KB, so no carry leaves it). F16: q and K are f16
// (an FP8 cache), else bf16.
template <bool F16>
__device__ __forceinline__ void issue_scores(float (&s)[64], uint32_t q_wg, uint32_t k_s) {
  const uint64_t a0 = wgmma::descriptor(q_wg, 16, 1024);
  const uint64_t b0 = wgmma::descriptor(k_s, 16, 1024);
  wgmma::fence();
#pragma unroll
  for (int st = 0; st < kHeadDim / 16; ++st) {
    const uint32_t col = (st % 4) * 32;
    const uint64_t a = a0 + (((st / 4) * kSlots * 128 + col) >> 4);
    const uint64_t b = b0 + (((st / 4) * kAtomBytes + col) >> 4);
    wgmma::mma_ss<F16>(s, a, b, st > 0);
  }
  wgmma::commit();
}

template <bool F16>
__device__ __forceinline__ void scores(float (&s)[64], uint32_t q_wg, uint32_t k_s) {
  issue_scores<F16>(s, q_wg, k_s);
  wgmma::wait<0>();
  wgmma::hold(s);
}

// The thread's two query rows: positions, the online softmax's running max and sum.
struct Rows {
  int pos[2];
  int first;  // the smaller position
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};
};

// The causal mask (MASKED: the chunk at `base` reaches past one of the warp's queries) and the
// online softmax's part on the scores, per query row (each row's 128 scores lie in the 4
// threads of a group): the rows' new maxima, the factors alpha that rescale what came before
// (l here, o by rescale() below), the exponentials in s and their sums.
template <bool MASKED>
__device__ __forceinline__ void softmax_scores(float (&s)[64], Rows& rows, int base, int tig,
                                               float (&alpha)[2]) {
  float chunk_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int h = (i % 4) / 2;
    if constexpr (MASKED) {
      const int key = base + (i / 4) * 8 + tig * 2 + (i % 2);
      if (key > rows.pos[h]) s[i] = -INFINITY;
    }
    chunk_max[h] = fmaxf(chunk_max[h], s[i]);
  }
  float ref[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    chunk_max[h] = fmaxf(chunk_max[h], __shfl_xor_sync(0xffffffffu, chunk_max[h], 1));
    chunk_max[h] = fmaxf(chunk_max[h], __shfl_xor_sync(0xffffffffu, chunk_max[h], 2));
    const float m_new = fmaxf(rows.m[h], chunk_max[h]);
    ref[h] = m_new == -INFINITY ? 0.0f : m_new;  // a row that sees nothing yet stays at zero
    alpha[h] = exp2_approx(rows.m[h] - ref[h]);
    rows.m[h] = m_new;
    rows.l[h] *= alpha[h];
  }
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    s[i] = exp2_approx(s[i] - ref[(i % 4) / 2]);
    rows.l[(i % 4) / 2] += s[i];
  }
}

// o times its rows' factors, before the chunk's P . V adds to it. Past a tile's first chunks a
// row's maximum rarely moves, and where it kept it alpha is 1 (ex2 of 0, tested as it is, not
// assumed): o times 1 is o, so a warp whose 16 rows all kept theirs skips the 64 multiplications,
// the same bits either way (the test on the warp's vote keeps the threads in step).
__device__ __forceinline__ void rescale(float (&o)[64], const float (&alpha)[2]) {
  if (__all_sync(0xffffffffu, alpha[0] == 1.0f && alpha[1] == 1.0f)) return;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      o[4 * j + 2 * h] *= alpha[h];
      o[4 * j + 2 * h + 1] *= alpha[h];
    }
  }
}

// P as bf16 (F16: f16) in the A fragments of O += P . V (16 keys a step).
template <bool F16>
__device__ __forceinline__ void pack_p(const float (&s)[64], uint32_t (&p)[kKeys / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    p[kk][0] = pack<F16>(s[8 * kk + 0], s[8 * kk + 1]);
    p[kk][1] = pack<F16>(s[8 * kk + 2], s[8 * kk + 3]);
    p[kk][2] = pack<F16>(s[8 * kk + 4], s[8 * kk + 5]);
    p[kk][3] = pack<F16>(s[8 * kk + 6], s[8 * kk + 7]);
  }
}

// The mask costs a compare and a select a score, so the chunks that need none (all but a tile's
// last one or two) go without: the warp's smallest position decides for all its threads, so
// that the shuffles inside run in step. The same arithmetic either way: a key the mask would
// drop is one no query of the warp can see, and there is none in an unmasked chunk.
__device__ __forceinline__ void softmax_scores(float (&s)[64], Rows& rows, int base, int tig,
                                               int warp_first, float (&alpha)[2]) {
  if (base + kKeys - 1 > warp_first) {
    softmax_scores<true>(s, rows, base, tig, alpha);
  } else {
    softmax_scores<false>(s, rows, base, tig, alpha);
  }
}

// The whole online softmax of a chunk: the scores' part, o rescaled, P packed.
template <bool F16>
__device__ __forceinline__ void softmax(float (&s)[64], uint32_t (&p)[kKeys / 16][4],
                                        float (&o)[64], Rows& rows, int base, int tig,
                                        int warp_first) {
  float alpha[2];
  softmax_scores(s, rows, base, tig, warp_first, alpha);
  rescale(o, alpha);
  pack_p<F16>(s, p);
}

// The smallest query position of the warp's rows (-1 where a row is past the tile: such a warp
// masks every chunk, as its rows see nothing).
__device__ __forceinline__ int warp_first_position(const Rows& rows) {
  return __reduce_min_sync(0xffffffffu, rows.first);
}

// O += P . V: V's rows are keys (k), its columns head_dim (n, contiguous: MN-major), the two
// 64-column atoms kAtomBytes apart, groups of 8 keys 1,024 bytes apart.
// Issued and committed; accumulate() below also waits. The caller holds o first (and not
// after another MMA's issue: an accumulator defined inside a stage serializes it).
template <bool F16>
__device__ __forceinline__ void issue_accumulate(float (&o)[64], const uint32_t (&p)[kKeys / 16][4],
                                                 uint32_t v_s) {
  const uint64_t b0 = wgmma::descriptor(v_s, kAtomBytes, 1024);
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    wgmma::mma_rs_b_mn_major<F16>(o, p[kk], b0 + ((kk * 16 * 128) >> 4));
  }
  wgmma::commit();
}

template <bool F16>
__device__ __forceinline__ void accumulate(float (&o)[64], const uint32_t (&p)[kKeys / 16][4],
                                           uint32_t v_s) {
  wgmma::hold(o);
  issue_accumulate<F16>(o, p, v_s);
  wgmma::wait<0>();
  wgmma::hold(o);
}

// The tile of rows a block takes: where its q comes from and its output goes.
struct TileRows {
  int first_row;
  int tile_rows;
  int kv_head;
  int group;  // query heads per KV head
  int q_size;
  int qkv_width;
};

// q of the tile's 128 slots (row, head of the group) into shared memory as bf16 (F16: as f16,
// clamped to its finite range), pre-scaled by log2(e) / sqrt(head_dim) so that the scores come
// out in base 2; zeros past the tile's rows.
template <bool F16>
__device__ __forceinline__ void stage_q(uint32_t q_s, const float* qkv, const TileRows& t,
                                        int threads) {
  const float scale = 1.4426950408889634f * rsqrtf(static_cast<float>(kHeadDim));
  for (int i = threadIdx.x; i < kSlots * kChunks; i += threads) {
    const int slot = i / kChunks, c = i % kChunks;
    const int r = slot / t.group;
    uint4 packed = make_uint4(0, 0, 0, 0);
    if (r < t.tile_rows) {
      const int head = t.kv_head * t.group + slot % t.group;
      const float4* q = reinterpret_cast<const float4*>(
          qkv + static_cast<int64_t>(t.first_row + r) * t.qkv_width + head * kHeadDim + c * 8);
      const float4 a = q[0], b = q[1];
      // An f16 q past 65,504 would be infinite (and its scores NaN); bf16 holds any float.
      const auto qs = [&](float x) {
        return F16 ? fminf(fmaxf(x * scale, -65504.0f), 65504.0f) : x * scale;
      };
      packed = make_uint4(pack<F16>(qs(a.x), qs(a.y)), pack<F16>(qs(a.z), qs(a.w)),
                          pack<F16>(qs(b.x), qs(b.y)), pack<F16>(qs(b.z), qs(b.w)));
    }
    st_shared16(q_s + wgmma::swizzled_offset(kSlots, slot, c), packed);
  }
}

// The thread's two query slots, rows g and g + 8 of its warp's 16 in warpgroup `wg`'s 64 (of the
// computing warpgroups), and their positions.
__device__ __forceinline__ Rows slot_rows(const TileRows& t, const RowInputs& in, int wg, int warp,
                                          int g) {
  Rows rows;
  rows.first = INT_MAX;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = (wg * 64 + warp * 16 + g + 8 * h) / t.group;
    rows.pos[h] = r < t.tile_rows ? in.positions[t.first_row + r] : -1;
    rows.first = min(rows.first, rows.pos[h]);
  }
  return rows;
}

// Warpgroup `wg`'s last query position (rows are in position order; -1 without rows): chunks past
// it hold only keys its queries cannot see. The same for every thread of the warpgroup, as the
// MMAs need.
__device__ __forceinline__ int last_position(const TileRows& t, const RowInputs& in, int wg) {
  const int first = wg * 64 / t.group;
  return first < t.tile_rows
             ? in.positions[t.first_row + min(t.tile_rows - 1, (wg * 64 + 63) / t.group)]
             : -1;
}

// o / l of the thread's two slots into out (bf16), rows past the tile's left alone.
__device__ __forceinline__ void write_rows(const float (&o)[64], const Rows& rows,
                                           const TileRows& t, bf16* out, int wg, int warp, int g,
                                           int tig) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = rows.l[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int slot = wg * 64 + warp * 16 + g + 8 * h;
    const int r = slot / t.group;
    if (r >= t.tile_rows) continue;
    const int head = t.kv_head * t.group + slot % t.group;
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    bf16* dst = out + static_cast<int64_t>(t.first_row + r) * t.q_size + head * kHeadDim + tig * 2;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      *reinterpret_cast<__nv_bfloat162*>(dst + j * 8) =
          __floats2bfloat162_rn(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
    }
  }
}

// The two warpgroups run a chunk apart, so that one's softmax overlaps the other's MMAs: in
// step n (after the barrier that publishes chunk n), warpgroup 0 computes chunk n whole, while
// warpgroup 1 finishes chunk n - 1 (softmax, P . V) and then computes chunk n's scores, which it
// keeps in registers for step n + 1. Three stages: chunk n + 1 loads while chunks n and n - 1
// are read.
template <bool FP8>
__global__ void __launch_bounds__(kThreads, 1)
    attention_prefill_wgmma_kernel(const float* qkv, const int32_t* tiles, AttentionShape shape,
                                   RowInputs in, LayerCache cache, bf16* out,
                                   const __grid_constant__ CUtensorMap k_map,
                                   const __grid_constant__ CUtensorMap v_map, bool bulk) {
  extern __shared__ unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full[kStages];  // bulk copies of each stage's chunk landed
  allow_dependent_launch();                        // o_proj may fetch its weights meanwhile
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t q_s = (raw + 1023u) & ~1023u;  // swizzle atoms need 1,024-byte alignment
  const uint32_t k_base = q_s + kQBytes;
  const uint32_t v_base = k_base + kStages * kTileBytes;

  // Tiles in reverse: the last rows of a sequence see the most keys, and starting them first
  // keeps the short ones for the end of the grid, where they fill the gaps.
  const int tile = gridDim.x - 1 - blockIdx.x;
  const int seq = tiles[tile * 3];
  const int first_row = tiles[tile * 3 + 1];
  const int tile_rows = tiles[tile * 3 + 2];
  const int kv_head = blockIdx.y;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int q_size = shape.num_heads * kHeadDim;
  const int kv_size = shape.num_kv_heads * kHeadDim;
  const int qkv_width = q_size + 2 * kv_size;
  const int wg = threadIdx.x / 128;
  const int warp = threadIdx.x % 128 / 32;  // within the warpgroup
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;    // fragment row group
  const int tig = lane % 4;  // thread in group

  const int bs = cache.block_size;
  const ChunkSource src{in.blocks + in.seq_block_offset[seq],
                        bs,
                        (bs & (bs - 1)) == 0 ? __ffs(bs) - 1 : -1,
                        shape.num_kv_heads,
                        kv_head,
                        in.positions[first_row + tile_rows - 1]};
  const int num_chunks = src.last_pos / kKeys + 1;
  const uint32_t full0 = smem_addr(&full[0]);
  // Chunk c comes by bulk tensor copies when they are set up and it holds no key past last_pos
  // (the last chunk comes by per-thread copies, which write zeros past it).
  auto by_bulk = [&](int c) { return bulk && (c + 1) * kKeys - 1 <= src.last_pos; };
  auto issue = [&](int c) {
    const uint32_t at = c % kStages * kTileBytes;
    if (!by_bulk(c)) {
      load_chunk<FP8>(k_base + at, v_base + at, c * kKeys, src, cache);
      return;
    }
    if (threadIdx.x != 0) return;
    const uint32_t bar = full0 + c % kStages * 8;
    tma::barrier_expect_bytes(bar, 2 * kTileBytes);
    const int first_block = c * kKeys / src.block_size;
    for (int b = 0; b < kKeys / src.block_size; ++b) {
      // The block's rows of this KV head (kv_row, kernels.h): one box of block_size rows.
      const int y = static_cast<int>(
          kv_row(src.blocks[first_block + b], 0, kv_head, shape.num_kv_heads, src.block_size));
      const uint32_t row = b * src.block_size * 128;
#pragma unroll
      for (int atom = 0; atom < kHeadDim / 64; ++atom) {
        const int x = atom * 64;
        tma::load_2d(k_base + at + atom * kAtomBytes + row, &k_map, x, y, bar);
        tma::load_2d(v_base + at + atom * kAtomBytes + row, &v_map, x, y, bar);
      }
    }
  };
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) tma::barrier_init(full0 + 8 * i, 1);
    tma::barrier_init_fence();
  }
  __syncthreads();
  // The first chunk is on its way while q is staged.
  issue(0);

  const TileRows t{first_row, tile_rows, kv_head, group, q_size, qkv_width};
  stage_q<FP8>(q_s, qkv, t, kThreads);
  Rows rows = slot_rows(t, in, wg, warp, g);
  const int wg_last = last_position(t, in, wg);
  const int warp_first = warp_first_position(rows);

  float o[64], s[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.0f;
  uint32_t p[kKeys / 16][4];
  const uint32_t q_wg = q_s + wg * 64 * 128;
  bool scored = false;  // warpgroup 1: the previous chunk's scores wait in s

  for (int n = 0; n <= num_chunks; ++n) {
    if (n < num_chunks) {
      if (by_bulk(n)) {
        tma::barrier_wait(full0 + n % kStages * 8, (n / kStages) & 1);
      } else if constexpr (!FP8) {
        cp_async_wait_all();  // chunk n (the only group in flight)
      }
      wgmma::fence_shared_for_async();
    }
    // Chunk n (and q) is visible to every thread, and the buffer chunk n + 1 goes into (chunk
    // n - 2's) is read by nobody any more.
    __syncthreads();
    if (n + 1 < num_chunks) issue(n + 1);
    const uint32_t here = n % kStages * kTileBytes;
    const bool visible = n < num_chunks && n * kKeys <= wg_last;
    if (wg == 0) {
      if (visible) {
        scores<FP8>(s, q_wg, k_base + here);
        softmax<FP8>(s, p, o, rows, n * kKeys, tig, warp_first);
        accumulate<FP8>(o, p, v_base + here);
      }
    } else {
      if (scored) {
        softmax<FP8>(s, p, o, rows, (n - 1) * kKeys, tig, warp_first);
        accumulate<FP8>(o, p, v_base + (n + kStages - 1) % kStages * kTileBytes);
      }
      scored = visible;
      if (visible) scores<FP8>(s, q_wg, k_base + here);
    }
  }

  write_rows(o, rows, t, out, wg, warp, g, tig);
}

// ---- The warp-specialized kernel (default: a bf16 cache by bulk copies, an FP8 cache) ----
// A third warpgroup produces: for a bf16 cache one of its threads streams the chunks by bulk
// tensor copies into the three stages as soon as both consumers have released a stage (a barrier
// per stage, "empty", beside the one that counts the bytes in, "full"), so the loads run up to
// three chunks ahead instead of one and no block-wide barrier is left in the loop. For an FP8
// cache its 128 threads copy each chunk's e4m3 bytes by cp.async into one of two staging buffers
// and widen the previous chunk into one of two f16 stages (the same values as load_chunk_fp8),
// then arrive on its "full" barrier, so the consumers see what the two-warpgroup kernel's do.
// Three warpgroups put three warps on each scheduler, so a thread starts with 168 registers; the
// producer gives most of its registers to the consumers (setmaxnreg: 40 against 232 a thread,
// which ptxas allocates by region: without it the consumers spill 32 bytes, with it none, CUDA
// 13.0). The consumers take turns on the tensor cores for q . K^T (two named barriers passed back
// and forth, each handed on once the scores are in), so that one's softmax runs while the other's
// scores are computed.
constexpr int kWsThreads = 128 * 3;
constexpr int kTurnBarrier = 1;      // named barriers 1 and 2: consumer 0's and consumer 1's turn
constexpr int kZeroBarrier = 3;      // 3 and 4: within a consumer, after zeroing V's tail
constexpr int kProducerBarrier = 5;  // the FP8 producer's 128 threads
// The bf16 producer: lane 0 of each of warpgroup 0's warps issues the bulk copies of every
// fourth block of a chunk, so that the 4 copies a block (K and V, two 64-column atoms each) and
// its block-table read leave from four schedulers at once. One thread issuing all of them (32 a
// chunk at 16-token blocks) could not keep ahead of the consumers (docs/performance.md,
// "Session 27").
constexpr int kProducerWarps = 4;
// An FP8 cache: two f16 stages, and after them two staging buffers of raw e4m3 chunks (K and V,
// 16 KB each) that the producer fills (bulk copies or cp.async) and widens into the stages: the
// shared memory of three bf16 stages.
constexpr uint32_t kTile8Bytes = kKeys * kHeadDim;
constexpr int kStaging = 2;
// The FP8 producer's registers and its consumers': together at most the 384 x 168 the block was
// launched with (128 x 56 + 256 x 224 = 384 x 168; past it setmaxnreg.inc waits forever; the
// consumers without the overlap fit 224 without a spill). 56 rather than 40, with the block
// numbers read a chunk ahead (below): 3.8% off the kernel at 32k rows on an H100; the read ahead
// alone was 3.6% slower, the registers alone are not yet measured (docs/performance.md,
// "Session 28").
constexpr int kFp8ProducerRegisters = 56;
constexpr int kFp8ConsumerRegisters = 224;
template <bool FP8>
constexpr int ws_stages() {
  return FP8 ? 2 : kStages;
}
static_assert(2 * ws_stages<true>() * kTileBytes + kStaging * 2 * kTile8Bytes <=
                  2 * kStages * kTileBytes,
              "the FP8 layout fits the bf16 one");

__device__ __forceinline__ void barrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// The same, predicated: no branch around it (the overlapped loop has MMAs in flight there).
__device__ __forceinline__ void named_arrive_if(int id, int threads, bool arrive) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %2, 0;\n@p bar.arrive %0, %1;\n}\n" ::"r"(id),
               "r"(threads), "r"(static_cast<int>(arrive))
               : "memory");
}

template <int N>
__device__ __forceinline__ void registers_down() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void registers_up() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
__device__ __forceinline__ uint2 ld_shared8(uint32_t src) {
  uint2 v;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(src) : "memory");
  return v;
}

// The FP8 producer (the 128 threads of warpgroup 0): chunk c's e4m3 bytes of the tile's KV head,
// keys up to last_pos, by cp.async into a staging buffer (rows of 128 bytes), one group. A thread
// copies piece pt % 8 (16 bytes) of keys pt / 8 + 16 n in both planes; four keys' block numbers
// are read before their copies, so those reads of the block table travel together.
__device__ __forceinline__ void stage_fp8_chunk(uint32_t k8_s, uint32_t v8_s, int c,
                                                const ChunkSource& src, const LayerCache& cache,
                                                int pt) {
  constexpr int kPer = kKeys / 16;  // keys a thread copies
  constexpr int kBatch = 4;         // keys whose block numbers are read together
  const int piece = pt % 8, j0 = pt / 8;
#pragma unroll 1
  for (int n0 = 0; n0 < kPer; n0 += kBatch) {
    int block[kBatch];
#pragma unroll
    for (int n = 0; n < kBatch; ++n) {
      const int key = c * kKeys + j0 + 16 * (n0 + n);
      block[n] = key <= src.last_pos ? src.blocks[src.block_of(key)] : 0;
    }
#pragma unroll
    for (int n = 0; n < kBatch; ++n) {
      const int j = j0 + 16 * (n0 + n), key = c * kKeys + j;
      if (key <= src.last_pos) {
        const int64_t e = src.element_in(block[n], key, piece * 16);  // 16 e4m3 a piece
        cp_async16(k8_s + j * 128 + piece * 16, cache.k8 + e);
        cp_async16(v8_s + j * 128 + piece * 16, cache.v8 + e);
      }
    }
  }
  cp_async_commit();
}

// Staged e4m3 bytes of chunk c widened into an f16 stage, in the layout bulk copies give (zeros
// past last_pos): the values the two-warpgroup kernel's load_chunk_fp8 stores. A thread takes
// the 16-byte column pt % 16 of keys pt / 16 + 8 n, four keys' loads before their stores; a
// quarter warp writes one 128-byte row of an atom.
__device__ __forceinline__ void widen_fp8_chunk(uint32_t k_s, uint32_t v_s, uint32_t k8_s,
                                                uint32_t v8_s, int c, int last_pos, int pt) {
  constexpr int kBatch = 4;
  constexpr int kStep = 128 / kChunks;  // keys a pass of the 128 threads
  const int cc = pt % kChunks, j0 = pt / kChunks;
#pragma unroll 1
  for (int j = j0; j < kKeys; j += kBatch * kStep) {
    uint2 kr[kBatch], vr[kBatch];
#pragma unroll
    for (int n = 0; n < kBatch; ++n) {
      const int jn = j + n * kStep;
      kr[n] = vr[n] = make_uint2(0, 0);  // e4m3 zeros widen to f16 +0
      if (c * kKeys + jn <= last_pos) {
        kr[n] = ld_shared8(k8_s + jn * 128 + cc * 8);
        vr[n] = ld_shared8(v8_s + jn * 128 + cc * 8);
      }
    }
#pragma unroll
    for (int n = 0; n < kBatch; ++n) {
      const uint32_t at = wgmma::swizzled_offset(kKeys, j + n * kStep, cc);
      st_shared16(k_s + at, fp8x8_to_f16x8(kr[n]));
      st_shared16(v_s + at, fp8x8_to_f16x8(vr[n]));
    }
  }
}

// OVERLAP: FA3's intra-warpgroup overlap. A consumer's turn issues chunk c's q . K^T and then
// chunk c - 1's P . V, and chunk c's softmax runs while that P . V is in flight; once it has
// landed, o is rescaled for chunk c and chunk c's P packed. The same operations on o in the same
// order as the plain loop: the same bits. The default for a bf16 cache (11% faster at 32k rows on
// an H100), not for an FP8 one, whose producer is the limit (7% slower); docs/performance.md,
// session 28.
template <bool FP8, bool OVERLAP>
__global__ void __launch_bounds__(kWsThreads, 1)
    attention_prefill_ws_kernel(const float* qkv, const int32_t* tiles, AttentionShape shape,
                                RowInputs in, LayerCache cache, bf16* out,
                                const __grid_constant__ CUtensorMap k_map,
                                const __grid_constant__ CUtensorMap v_map, bool bulk) {
  constexpr int kS = ws_stages<FP8>();
  extern __shared__ unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full[kS];          // a stage's bytes landed
  __shared__ __align__(8) uint64_t empty[kS];         // both consumers are done with a stage
  __shared__ __align__(8) uint64_t staged[kStaging];  // FP8 by bulk copies: a chunk's e4m3 landed
  allow_dependent_launch();
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t q_s = (raw + 1023u) & ~1023u;
  const uint32_t k_base = q_s + kQBytes;
  const uint32_t v_base = k_base + kS * kTileBytes;
  const uint32_t staging = v_base + kS * kTileBytes;  // FP8: buffer b's K at + 2 b kTile8Bytes

  const int tile = gridDim.x - 1 - blockIdx.x;  // the longest tiles first, as above
  const int seq = tiles[tile * 3];
  const int first_row = tiles[tile * 3 + 1];
  const int tile_rows = tiles[tile * 3 + 2];
  const int kv_head = blockIdx.y;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int q_size = shape.num_heads * kHeadDim;
  const int kv_size = shape.num_kv_heads * kHeadDim;
  const int qkv_width = q_size + 2 * kv_size;
  // 0 produces, 1 and 2 consume. Broadcast from lane 0 so that the compiler knows it is one
  // value a warp: the MMAs' descriptors, which derive from it, then stay in uniform registers
  // (3-5% off the kernel on the H100, docs/performance.md "Session 26").
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  const int bs = cache.block_size;
  const ChunkSource src{in.blocks + in.seq_block_offset[seq],
                        bs,
                        (bs & (bs - 1)) == 0 ? __ffs(bs) - 1 : -1,
                        shape.num_kv_heads,
                        kv_head,
                        in.positions[first_row + tile_rows - 1]};
  const int num_chunks = src.last_pos / kKeys + 1;
  const uint32_t full0 = smem_addr(&full[0]);
  const uint32_t empty0 = smem_addr(&empty[0]);
  if (threadIdx.x == 0) {
    for (int i = 0; i < kS; ++i) {
      // FP8: every producer thread arrives; bf16: each producer warp, with its bytes.
      tma::barrier_init(full0 + 8 * i, FP8 ? 128 : kProducerWarps);
      tma::barrier_init(empty0 + 8 * i, 256);
    }
    if (FP8 && bulk) {
      for (int i = 0; i < kStaging; ++i) tma::barrier_init(smem_addr(&staged[i]), kProducerWarps);
    }
    tma::barrier_init_fence();
  }
  const TileRows t{first_row, tile_rows, kv_head, group, q_size, qkv_width};
  stage_q<FP8>(q_s, qkv, t, kWsThreads);
  wgmma::fence_shared_for_async();
  __syncthreads();  // the barriers and q, for everyone; the last block-wide barrier

  if (wg == 0 && FP8) {
    registers_down<kFp8ProducerRegisters>();
    // Chunk c + 1's bytes travel while chunk c is widened; a stage is widened into once both
    // consumers have released it.
    const int pt = threadIdx.x;
    auto k8_of = [&](int c) { return staging + c % kStaging * 2 * kTile8Bytes; };
    if (bulk) {
      // A sized cache whose blocks tile a chunk: lane 0 of each warp copies every fourth block
      // of a chunk's e4m3 bytes (K and V, rows of 128 bytes: the cp.async layout) by bulk
      // copies and arrives on the buffer's barrier with its bytes, as the bf16 producer does;
      // no address arithmetic and no cp.async waits left to the 128 threads but the widening.
      const int pw = pt / 32, lane = pt % 32;
      const int last_block = src.last_pos / bs;
      const int chunk_blocks = kKeys / bs;
      const uint32_t staged0 = smem_addr(&staged[0]);
      // Lane l of warp pw reads the block number of block pw + 4 l of a chunk, a chunk before
      // its copies leave, so that the block table's latency passes during a widening.
      auto read_blocks = [&](int c) {
        const int b = pw + kProducerWarps * lane, first_block = c * chunk_blocks;
        return b < chunk_blocks && first_block + b <= last_block ? src.blocks[first_block + b] : 0;
      };
      auto copy_chunk = [&](int c, int block_numbers) {
        const int first_block = c * chunk_blocks;
        const int blocks = min(chunk_blocks, last_block - first_block + 1);
        const int mine = max(0, (blocks - pw + kProducerWarps - 1) / kProducerWarps);
        const uint32_t bar = staged0 + 8 * (c % kStaging);
        if (lane == 0) {
          tma::barrier_expect_bytes(bar, static_cast<uint32_t>(mine * bs * kHeadDim * 2));
        }
        for (int i = 0; i < mine; ++i) {
          const int b = pw + kProducerWarps * i;
          const int y = static_cast<int>(kv_row(__shfl_sync(0xffffffffu, block_numbers, i), 0,
                                                kv_head, shape.num_kv_heads, bs));
          const uint32_t row = b * bs * kHeadDim;
          if (lane == 0) {
            tma::load_2d(k8_of(c) + row, &k_map, 0, y, bar);
            tma::load_2d(k8_of(c) + kTile8Bytes + row, &v_map, 0, y, bar);
          }
        }
      };
      copy_chunk(0, read_blocks(0));
      int ahead = num_chunks > 1 ? read_blocks(1) : 0;
      for (int c = 0; c < num_chunks; ++c) {
        const int stage = c % kS;
        tma::barrier_wait(staged0 + 8 * (c % kStaging), (c / kStaging) & 1);
        // Everyone has widened chunk c - 1: its staging buffer, chunk c + 1's, is free (the
        // fence orders those reads before the copies' writes).
        named_sync(kProducerBarrier, 128);
        if (c + 1 < num_chunks) {
          wgmma::fence_shared_for_async();
          copy_chunk(c + 1, ahead);
          if (c + 2 < num_chunks) ahead = read_blocks(c + 2);
        }
        if (c >= kS) tma::barrier_wait(empty0 + 8 * stage, (c / kS - 1) & 1);
        widen_fp8_chunk(k_base + stage * kTileBytes, v_base + stage * kTileBytes, k8_of(c),
                        k8_of(c) + kTile8Bytes, c, src.last_pos, pt);
        wgmma::fence_shared_for_async();  // the stores, for the MMAs' reads
        barrier_arrive(full0 + 8 * stage);
      }
      return;
    }
    stage_fp8_chunk(k8_of(0), k8_of(0) + kTile8Bytes, 0, src, cache, pt);
    for (int c = 0; c < num_chunks; ++c) {
      const int stage = c % kS;
      cp_async_wait_all();
      // Everyone's bytes of chunk c are in, and everyone has widened chunk c - 1 (its staging
      // buffer, chunk c + 1's, is free).
      named_sync(kProducerBarrier, 128);
      if (c + 1 < num_chunks) {
        stage_fp8_chunk(k8_of(c + 1), k8_of(c + 1) + kTile8Bytes, c + 1, src, cache, pt);
      }
      if (c >= kS) tma::barrier_wait(empty0 + 8 * stage, (c / kS - 1) & 1);
      widen_fp8_chunk(k_base + stage * kTileBytes, v_base + stage * kTileBytes, k8_of(c),
                      k8_of(c) + kTile8Bytes, c, src.last_pos, pt);
      wgmma::fence_shared_for_async();  // the stores, for the MMAs' reads
      barrier_arrive(full0 + 8 * stage);
    }
    return;
  }
  if (wg == 0) {
    registers_down<40>();
    if (threadIdx.x % 32 != 0) return;
    const int pw = threadIdx.x / 32;  // this producer warp: blocks pw, pw + 4, ... of a chunk
    const int last_block = src.last_pos / bs;
    const int chunk_blocks = kKeys / bs;  // bulk copies only where blocks tile a chunk
    for (int c = 0; c < num_chunks; ++c) {
      const int stage = c % kS;
      if (c >= kS) tma::barrier_wait(empty0 + 8 * stage, (c / kS - 1) & 1);
      const int first_block = c * chunk_blocks;
      const int blocks = min(chunk_blocks, last_block - first_block + 1);
      const int mine = max(0, (blocks - pw + kProducerWarps - 1) / kProducerWarps);
      const uint32_t bar = full0 + 8 * stage;
      // A warp without blocks in this chunk still arrives (with no bytes).
      tma::barrier_expect_bytes(bar, static_cast<uint32_t>(mine * bs * kHeadDim * 2 * 2));
      const uint32_t at = stage * kTileBytes;
      for (int b = pw; b < blocks; b += kProducerWarps) {
        const int y = static_cast<int>(
            kv_row(src.blocks[first_block + b], 0, kv_head, shape.num_kv_heads, bs));
        const uint32_t row = b * bs * 128;
#pragma unroll
        for (int atom = 0; atom < kHeadDim / 64; ++atom) {
          const int x = atom * 64;
          tma::load_2d(k_base + at + atom * kAtomBytes + row, &k_map, x, y, bar);
          tma::load_2d(v_base + at + atom * kAtomBytes + row, &v_map, x, y, bar);
        }
      }
    }
    return;
  }
  registers_up<FP8 ? kFp8ConsumerRegisters : 232>();

  const int cw = wg - 1;                  // this consumer
  const int ct = threadIdx.x - 128 * wg;  // thread within it
  const int warp = ct / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;
  const int tig = lane % 4;
  Rows rows = slot_rows(t, in, cw, warp, g);
  const int cw_last = last_position(t, in, cw);
  const int warp_first = warp_first_position(rows);
  float o[64], s[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.0f;
  uint32_t p[kKeys / 16][4];
  const uint32_t q_cw = q_s + cw * 64 * 128;
  const int my_turn = kTurnBarrier + cw;
  const int other_turn = kTurnBarrier + 1 - cw;
  if (cw == 1) named_arrive(kTurnBarrier, 256);  // consumer 0 goes first

  if constexpr (OVERLAP) {
    // The chunks this consumer's rows see are a prefix; past it a consumer only passes turns
    // and releases stages. No branch while an MMA is in flight but the softmax's mask choice
    // (ptxas serializes MMAs around one that may define their registers).
    const int visible_chunks = cw_last < 0 ? 0 : min(num_chunks, cw_last / kKeys + 1);
    auto enter = [&](int c, bool visible) {  // chunk c's bytes in, V's tail zeroed
      tma::barrier_wait(full0 + 8 * (c % kS), (c / kS) & 1);
      const int tail = src.last_pos + 1 - c * kKeys;
      if (!FP8 && visible && tail < kKeys) {
        const uint32_t v_s = v_base + c % kS * kTileBytes;
        for (int i = ct; i < (kKeys - tail) * kChunks; i += 128) {
          st_shared16(v_s + wgmma::swizzled_offset(kKeys, tail + i / kChunks, i % kChunks),
                      make_uint4(0, 0, 0, 0));
        }
        wgmma::fence_shared_for_async();
        named_sync(kZeroBarrier + cw, 128);
      }
    };
    // The last turn is not passed on: the other consumer has no more chunks to take it for.
    auto pass = [&](int c) { return cw == 0 || c + 1 < num_chunks; };
    int c = 0;
    if (visible_chunks > 0) {
      float alpha[2];
      enter(0, true);
      named_sync(my_turn, 256);
      scores<FP8>(s, q_cw, k_base);
      named_arrive_if(other_turn, 256, pass(0));
      softmax_scores(s, rows, 0, tig, warp_first, alpha);
      rescale(o, alpha);
      pack_p<FP8>(s, p);
      for (c = 1; c < visible_chunks; ++c) {
        const uint32_t here = c % kS * kTileBytes;
        const int prev = (c - 1) % kS;
        enter(c, true);
        named_sync(my_turn, 256);
        wgmma::hold(o);
        issue_scores<FP8>(s, q_cw, k_base + here);
        issue_accumulate<FP8>(o, p, v_base + prev * kTileBytes);  // chunk c - 1's P . V
        named_arrive_if(other_turn, 256, pass(c));
        wgmma::wait<1>();  // the scores (committed first)
        wgmma::hold(s);
        softmax_scores(s, rows, c * kKeys, tig, warp_first, alpha);
        wgmma::wait<0>();  // chunk c - 1's P . V: o and p are free, its stage released
        wgmma::hold(o);
        barrier_arrive(empty0 + 8 * prev);
        rescale(o, alpha);
        pack_p<FP8>(s, p);
      }
      accumulate<FP8>(o, p, v_base + (c - 1) % kS * kTileBytes);
      barrier_arrive(empty0 + 8 * ((c - 1) % kS));
    }
    for (; c < num_chunks; ++c) {
      enter(c, false);
      named_sync(my_turn, 256);
      named_arrive_if(other_turn, 256, pass(c));
      barrier_arrive(empty0 + 8 * (c % kS));
    }
  } else {
    for (int c = 0; c < num_chunks; ++c) {
      const int stage = c % kS;
      const uint32_t here = stage * kTileBytes;
      tma::barrier_wait(full0 + 8 * stage, (c / kS) & 1);
      const bool visible = c * kKeys <= cw_last;
      // V's rows past the tile's last key hold what the stage held before (or the tail of the
      // last block): zeros, so that the masked keys multiply finite values. (The FP8 producer
      // wrote zeros there.)
      const int tail = src.last_pos + 1 - c * kKeys;
      if (!FP8 && visible && tail < kKeys) {
        for (int i = ct; i < (kKeys - tail) * kChunks; i += 128) {
          st_shared16(
              v_base + here + wgmma::swizzled_offset(kKeys, tail + i / kChunks, i % kChunks),
              make_uint4(0, 0, 0, 0));
        }
        wgmma::fence_shared_for_async();
        named_sync(kZeroBarrier + cw, 128);
      }
      // The last turn is not passed on: the other consumer has no more chunks to take it for.
      const bool pass = cw == 0 || c + 1 < num_chunks;
      named_sync(my_turn, 256);
      if (visible) {
        scores<FP8>(s, q_cw, k_base + here);
        if (pass) named_arrive(other_turn, 256);
        softmax<FP8>(s, p, o, rows, c * kKeys, tig, warp_first);
        accumulate<FP8>(o, p, v_base + here);
      } else if (pass) {
        named_arrive(other_turn, 256);
      }
      barrier_arrive(empty0 + 8 * stage);
    }
  }

  write_rows(o, rows, t, out, cw, warp, g, tig);
}

// A bf16 cache plane as a 2-D tensor of rows of one KV head (kv_row, kernels.h: [blocks x KV
// heads x block_size][head_dim]) whose boxes are one block's keys of one head, 64 columns, in the
// 128-byte swizzle the MMAs read. False where the driver has no encoder or refuses the shape.
bool kv_tensor_map(const bf16* plane, int64_t num_slots, int kv_heads, int block_size,
                   CUtensorMap* map) {
  const auto encode = tma::tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(kHeadDim),
                              static_cast<cuuint64_t>(num_slots) * kv_heads};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(kHeadDim) * sizeof(bf16)};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(block_size)};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<bf16*>(plane), dims, strides,
                box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// An FP8 cache plane as a 2-D tensor of rows of one KV head (bytes), whose boxes are one block's
// keys of one head (128 bytes a key, one contiguous run), unswizzled: the rows the FP8 producer
// widens from.
bool kv8_tensor_map(const uint8_t* plane, int64_t num_slots, int kv_heads, int block_size,
                    CUtensorMap* map) {
  const auto encode = tma::tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(kHeadDim),
                              static_cast<cuuint64_t>(num_slots) * kv_heads};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(kHeadDim)};
  const cuuint32_t box[2] = {kHeadDim, static_cast<cuuint32_t>(block_size)};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(plane), dims, strides,
                box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The tensor maps of a cache's planes (bf16 or FP8) when its size is known and its blocks are
// whole 8-row groups that tile a chunk; false otherwise (the kernels then copy by threads).
bool bulk_tensor_maps(AttentionShape shape, LayerCache cache, CUtensorMap* k_map,
                      CUtensorMap* v_map) {
  const int bs = cache.block_size;
  const int kv_heads = shape.num_kv_heads;
  if (cache.num_slots <= 0 || bs % 8 != 0 || kKeys % bs != 0) return false;
  if (cache.fp8()) {
    return kv8_tensor_map(cache.k8, cache.num_slots, kv_heads, bs, k_map) &&
           kv8_tensor_map(cache.v8, cache.num_slots, kv_heads, bs, v_map);
  }
  return kv_tensor_map(cache.k, cache.num_slots, kv_heads, bs, k_map) &&
         kv_tensor_map(cache.v, cache.num_slots, kv_heads, bs, v_map);
}

// The warp-specialized kernel for a bf16 cache copied by bulk tensor copies and for an FP8 cache
// (the same bits as the two-warpgroup kernel; bf16 1.5x its speed on the H200,
// docs/performance.md); PACELINE_PREFILL_ATTENTION=wgmma keeps the two-warpgroup kernel, for
// comparison.
bool warp_specialized() {
  static const bool ws = [] {
    const char* env = std::getenv("PACELINE_PREFILL_ATTENTION");
    return env == nullptr || std::string(env) != "wgmma";
  }();
  return ws;
}

template <bool FP8>
cudaError_t launch(const float* qkv, const int32_t* tiles, int num_tiles, AttentionShape shape,
                   RowInputs in, LayerCache cache, bf16* out, cudaStream_t stream) {
  // Bulk copies: a cache whose size is known, blocks of whole 8-row groups that tile a chunk.
  CUtensorMap k_map{}, v_map{};
  const bool bulk = bulk_tensor_maps(shape, cache, &k_map, &v_map);
  dim3 grid(num_tiles, shape.num_kv_heads);
  // The warp-specialized kernel: a bf16 cache by bulk copies, an FP8 cache widened by its
  // producer from bytes copied in bulk (or by cp.async where bulk copies cannot be had).
  if ((bulk || FP8) && warp_specialized()) {
    // PACELINE_PREFILL_OVERLAP=1 or 0 takes or leaves the overlap for both caches (comparisons).
    static const int overlap_env = [] {
      const char* env = std::getenv("PACELINE_PREFILL_OVERLAP");
      if (env == nullptr) return -1;
      return std::string(env) == "1" ? 1 : std::string(env) == "0" ? 0 : -1;
    }();
    const bool overlap = overlap_env < 0 ? !FP8 : overlap_env == 1;
    const auto kernel =
        overlap ? attention_prefill_ws_kernel<FP8, true> : attention_prefill_ws_kernel<FP8, false>;
    static const cudaError_t ws_attribute = [] {
      const cudaError_t a = cudaFuncSetAttribute(attention_prefill_ws_kernel<FP8, false>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(kSmemBytes));
      const cudaError_t b = cudaFuncSetAttribute(attention_prefill_ws_kernel<FP8, true>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(kSmemBytes));
      return a != cudaSuccess ? a : b;
    }();
    if (ws_attribute != cudaSuccess) return ws_attribute;
    kernel<<<grid, kWsThreads, kSmemBytes, stream>>>(qkv, tiles, shape, in, cache, out, k_map,
                                                     v_map, bulk);
    return cudaGetLastError();
  }
  static const cudaError_t attribute = cudaFuncSetAttribute(
      attention_prefill_wgmma_kernel<FP8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(kSmemBytes));
  if (attribute != cudaSuccess) return attribute;
  attention_prefill_wgmma_kernel<FP8><<<grid, kThreads, kSmemBytes, stream>>>(
      qkv, tiles, shape, in, cache, out, k_map, v_map, bulk && !FP8);
  return cudaGetLastError();
}

}  // namespace

bool prefill_wgmma_bulk_copies(AttentionShape shape, LayerCache cache) {
  CUtensorMap k_map{}, v_map{};
  return prefill_wgmma_supported(shape) && bulk_tensor_maps(shape, cache, &k_map, &v_map);
}

bool prefill_wgmma_supported(AttentionShape shape) {
  if (shape.num_kv_heads <= 0 || shape.num_heads % shape.num_kv_heads != 0) return false;
  const int group = shape.num_heads / shape.num_kv_heads;
  // A warpgroup's 64 slots hold whole rows, so that its last position is one row's.
  return shape.head_dim == kHeadDim && 64 % group == 0;
}

int prefill_wgmma_tile_rows(AttentionShape shape) {
  return kSlots / (shape.num_heads / shape.num_kv_heads);
}

cudaError_t launch_attention_prefill_wgmma(const float* qkv, const int32_t* tiles, int num_tiles,
                                           AttentionShape shape, RowInputs in, LayerCache cache,
                                           bf16* out, cudaStream_t stream) {
  if (!prefill_wgmma_supported(shape)) return cudaErrorInvalidValue;
  if (num_tiles <= 0) return cudaGetLastError();
  if (cache.fp8()) return launch<true>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
  return launch<false>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
}

}  // namespace paceline::cuda
