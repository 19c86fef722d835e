// Temperature / min_p / top-k / top-p sampling on the GPU with the semantics of the host's
// sample_token (src/exec/sampler.cpp): weights exp((l - max) / T) in double; candidates ordered by
// weight descending, ties by lower index; min_p keeps the weights of at least min_p; top-k keeps
// the first k; top-p the shortest head holding at least top_p of the remaining mass; the draw is
// the first candidate whose cumulative weight passes u * mass, u = sample_uniform(seed, position)
// computed by the caller.
//
// One cluster of kCluster blocks per sampled row (Hopper thread-block clusters): each block owns a
// contiguous slice of the row and keeps its slice's weights in its shared memory, and the blocks
// agree on every decision through distributed shared memory, so a row's passes run on eight SMs
// instead of one. Every "first candidate whose cumulative count or weight reaches a target" is
// found without sorting, by a radix select over the logits' order keys: four passes of 8 bits,
// each a histogram (count and weight per digit) of the candidates that share the digits chosen so
// far, summed over the cluster, then a scan of the tied candidates in index order (the slices are
// in index order, so the blocks' tied totals are scanned in rank order). Since the weight is
// monotone in the logit, the order of keys is the sampler's order.
//
// The weights are summed in 64-bit fixed point (each exp((l - max) / T) <= 1 rounded to a
// multiple of 2^-shift, shift chosen so that a whole row cannot overflow): integer additions are
// exact and associative, so every sum is the same whatever order the threads add in (the same
// token on every run), and shared-memory 64-bit integer atomics are native where double ones
// are compare-and-swap loops that serialize on the few busy bins of a flat row.
#include <cfloat>
#include <cmath>

#include <cooperative_groups.h>

#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kCluster = 8;                 // blocks per row (the portable cluster size)
constexpr int kSharedWeights = 20480;       // weights a block keeps in shared memory: 160 KiB,
                                            // rows of up to 163,840 entries; longer ones use the
                                            // global scratch
constexpr unsigned kFull = 0xffffffffu;
using u64 = unsigned long long;

// A candidate's place in the sampler's order: larger key first, then lower index.
struct Pos {
  uint32_t key;
  int32_t idx;
};

// Larger logits get larger keys (the usual sign-flip map of IEEE floats onto unsigned order).
__device__ __forceinline__ uint32_t order_key(float f) {
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) != 0 ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ bool at_or_before(uint32_t key, int32_t idx, Pos p) {
  return key > p.key || (key == p.key && idx <= p.idx);
}

// q comes later in the sampler's order than p (smaller key, then larger index); idx -1: none.
__device__ __forceinline__ bool later(Pos q, Pos p) {
  return q.idx >= 0 && (p.idx < 0 || q.key < p.key || (q.key == p.key && q.idx > p.idx));
}

enum class Reach { kCountAtLeast, kWeightAtLeast, kWeightAbove };

__device__ __forceinline__ bool reached(Reach r, u64 target, u64 weight, u64 count) {
  switch (r) {
    case Reach::kCountAtLeast: return count >= target;
    case Reach::kWeightAtLeast: return weight >= target;
    default: return weight > target;
  }
}

// What one block shows the rest of its cluster in one exchange.
struct Pub {
  u64 a;
  u64 b;
  uint32_t key;
  int32_t idx;
  float f;
  int32_t unused;
};

struct Shared {
  u64 hist_w[2][256];  // two, alternating: one may still be read by the cluster while the next
  unsigned hist_c[2][256];  // is built
  Pub pub[2];               // likewise
  Pub all[kCluster];        // the last exchange: every block's Pub, in rank order
  u64 scan_a[kWarps];
  u64 scan_b[kWarps];
  u64 total_a;
  u64 total_b;
  float warp_f[kWarps];
  Pos warp_pos[kWarps];
  int chosen;
  u64 chosen_w;
  u64 chosen_c;
  int claim_idx;
  u64 claim_w;
  u64 claim_c;
  int tie_last;
};

// The cluster a row runs on, and the parity of its alternating buffers (the same in every block:
// every block makes the same exchanges in the same order).
struct Row {
  Shared& s;
  cg::cluster_group cluster;
  int exchanges;
  int hists;
};

// Every block shows `mine` (thread 0's), and afterwards s.all holds all of them, in rank order.
// A buffer is written again two exchanges later, by when every reader has passed a cluster
// barrier after reading it.
__device__ void exchange(Row& r, const Pub& mine) {
  Shared& s = r.s;
  const int k = r.exchanges++ & 1;
  if (threadIdx.x == 0) s.pub[k] = mine;
  r.cluster.sync();
  if (threadIdx.x < kCluster) s.all[threadIdx.x] = *r.cluster.map_shared_rank(&s.pub[k], threadIdx.x);
  __syncthreads();
}

__device__ __forceinline__ u64 warp_sum(u64 v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// Adds (w, 1) to bin `digit` (-1: nothing) for every lane; one atomic per warp when all active
// lanes share a bin (the common case in the first passes over a flat distribution).
__device__ __forceinline__ void hist_add(u64* hist_w, unsigned* hist_c, int digit, u64 w) {
  const unsigned active = __ballot_sync(kFull, digit >= 0);
  if (active == 0) return;
  const int leader = __ffs(static_cast<int>(active)) - 1;
  const int d0 = __shfl_sync(kFull, digit, leader);
  if (__ballot_sync(kFull, digit == d0) == active) {
    const u64 sum = warp_sum(digit >= 0 ? w : 0ull);
    if (static_cast<int>(threadIdx.x % 32) == leader) {
      atomicAdd(&hist_w[d0], sum);
      atomicAdd(&hist_c[d0], static_cast<unsigned>(__popc(active)));
    }
  } else if (digit >= 0) {
    atomicAdd(&hist_w[digit], w);
    atomicAdd(&hist_c[digit], 1u);
  }
}

// Exclusive prefix sums of (a, b) over the block's threads in thread order, and their totals.
__device__ void exclusive_scan2(Shared& s, u64 a, u64 b, u64* ea, u64* eb, u64* ta, u64* tb) {
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  u64 ia = a, ib = b;
  for (int o = 1; o < 32; o <<= 1) {
    const u64 xa = __shfl_up_sync(kFull, ia, o), xb = __shfl_up_sync(kFull, ib, o);
    if (lane >= o) {
      ia += xa;
      ib += xb;
    }
  }
  if (lane == 31) {
    s.scan_a[warp] = ia;
    s.scan_b[warp] = ib;
  }
  __syncthreads();
  if (warp == 0) {
    const u64 xa = s.scan_a[lane], xb = s.scan_b[lane];
    u64 ya = xa, yb = xb;
    for (int o = 1; o < 32; o <<= 1) {
      const u64 za = __shfl_up_sync(kFull, ya, o), zb = __shfl_up_sync(kFull, yb, o);
      if (lane >= o) {
        ya += za;
        yb += zb;
      }
    }
    s.scan_a[lane] = ya - xa;
    s.scan_b[lane] = yb - xb;
    if (lane == 31) {
      s.total_a = ya;
      s.total_b = yb;
    }
  }
  __syncthreads();
  *ta = s.total_a;
  *tb = s.total_b;
  *ea = s.scan_a[warp] + ia - a;
  *eb = s.scan_b[warp] + ib - b;
  __syncthreads();
}

// The total of `v` over the row (every thread of every block of the cluster passes its own).
__device__ u64 row_sum(Row& r, u64 v) {
  u64 e, f, total, unused;
  exclusive_scan2(r.s, v, 0ull, &e, &f, &total, &unused);
  exchange(r, Pub{total, 0, 0, 0, 0.0f, 0});
  u64 sum = 0;
  for (int i = 0; i < kCluster; ++i) sum += r.s.all[i].a;
  return sum;
}

// The last of the positions the threads pass, in the sampler's order, over the whole row.
__device__ Pos row_last(Row& r, Pos mine) {
  Shared& s = r.s;
  for (int o = 16; o > 0; o >>= 1) {
    const Pos q{__shfl_xor_sync(kFull, mine.key, o), __shfl_xor_sync(kFull, mine.idx, o)};
    if (later(q, mine)) mine = q;
  }
  if (threadIdx.x % 32 == 0) s.warp_pos[threadIdx.x / 32] = mine;
  __syncthreads();
  Pos block{0xffffffffu, -1};
  for (int i = 0; i < kWarps; ++i) {
    if (later(s.warp_pos[i], block)) block = s.warp_pos[i];
  }
  exchange(r, Pub{0, 0, block.key, block.idx, 0.0f, 0});
  Pos last{0xffffffffu, -1};
  for (int i = 0; i < kCluster; ++i) {
    const Pos q{s.all[i].key, s.all[i].idx};
    if (later(q, last)) last = q;
  }
  return last;
}

struct Found {
  bool found;
  Pos pos;
  u64 cum_w;  // cumulative weight and count up to and including pos
  u64 cum_c;
};

// The row this block holds a slice of: logits l[lo, hi) and their weights w[i - w_base].
struct Slice {
  const float* l;
  const u64* w;
  int w_base;
  int lo;
  int hi;
};

// The first candidate at or before `bound`, in the sampler's order, whose cumulative count or
// weight reaches `target`; found = false when none does (rounding at the very end).
__device__ Found select(Row& r, const Slice& x, Pos bound, Reach reach, u64 target) {
  Shared& s = r.s;
  const int tid = static_cast<int>(threadIdx.x);
  u64 before_w = 0, before_c = 0;  // the candidates ahead of the bins chosen so far
  uint32_t prefix = 0;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    const int h = r.hists++ & 1;
    u64* hist_w = s.hist_w[h];
    unsigned* hist_c = s.hist_c[h];
    for (int i = tid; i < 256; i += kThreads) {
      hist_w[i] = 0;
      hist_c[i] = 0;
    }
    if (tid == 0) s.chosen = -1;
    __syncthreads();
    for (int base = x.lo; base < x.hi; base += kThreads) {
      const int i = base + tid;
      int digit = -1;
      u64 wi = 0;
      if (i < x.hi) {
        const uint32_t k = order_key(x.l[i]);
        if (at_or_before(k, i, bound) && (pass == 0 || (k >> (shift + 8)) == prefix)) {
          digit = static_cast<int>((k >> shift) & 0xffu);
          wi = x.w[i - x.w_base];
        }
      }
      hist_add(hist_w, hist_c, digit, wi);
    }
    r.cluster.sync();
    // Thread t holds digit 255 - t summed over the cluster, so thread order is the sampler's.
    u64 bw = 0, bc = 0;
    if (tid < 256) {
      for (int q = 0; q < kCluster; ++q) {
        bw += *r.cluster.map_shared_rank(&hist_w[255 - tid], q);
        bc += *r.cluster.map_shared_rank(&hist_c[255 - tid], q);
      }
    }
    u64 ew, ec, unused_w, unused_c;
    exclusive_scan2(s, bw, bc, &ew, &ec, &unused_w, &unused_c);
    // The chosen bin is the first non-empty one whose inclusive cumulative reaches the target.
    if (bc > 0) {
      const u64 xw = before_w + ew, xc = before_c + ec;
      if (reached(reach, target, xw + bw, xc + bc) &&
          (ec == 0 || !reached(reach, target, xw, xc))) {
        s.chosen = 255 - tid;
        s.chosen_w = xw;
        s.chosen_c = xc;
      }
    }
    __syncthreads();
    const int chosen = s.chosen;
    if (chosen < 0) return {false, bound, 0, 0};
    before_w = s.chosen_w;
    before_c = s.chosen_c;
    prefix = (prefix << 8) | static_cast<uint32_t>(chosen);
  }

  // The candidates with exactly this key, in index order: contiguous index ranges per thread,
  // the block's ranges in thread order, the blocks' slices in rank order.
  const int chunk = (x.hi - x.lo + kThreads - 1) / kThreads;
  const int lo = min(x.hi, x.lo + tid * chunk);
  const int hi = min(x.hi, lo + chunk);
  u64 lw = 0, lc = 0;
  int last = -1;
  for (int i = lo; i < hi; ++i) {
    if (order_key(x.l[i]) == prefix && at_or_before(prefix, i, bound)) {
      lw += x.w[i - x.w_base];
      lc += 1;
      last = i;
    }
  }
  if (tid == 0) {
    s.tie_last = -1;
    s.claim_idx = INT32_MAX;
  }
  u64 ew, ec, block_w, block_c;
  exclusive_scan2(s, lw, lc, &ew, &ec, &block_w, &block_c);  // its barriers publish the resets
  if (last >= 0) atomicMax(&s.tie_last, last);
  __syncthreads();
  exchange(r, Pub{block_w, block_c, 0, s.tie_last, 0.0f, 0});
  const unsigned rank = r.cluster.block_rank();
  u64 ahead_w = before_w, ahead_c = before_c, tied_w = 0, tied_c = 0;
  int tie_last = -1;
  for (int q = 0; q < kCluster; ++q) {
    if (static_cast<unsigned>(q) < rank) {
      ahead_w += s.all[q].a;
      ahead_c += s.all[q].b;
    }
    tied_w += s.all[q].a;
    tied_c += s.all[q].b;
    tie_last = max(tie_last, s.all[q].idx);
  }
  const u64 bw = ahead_w + ew, bc = ahead_c + ec;
  // The crossing is unique, so exactly one thread of the cluster claims it (the sums are exact).
  if (lc > 0 && !reached(reach, target, bw, bc)) {
    u64 cw = bw, cc = bc;
    for (int i = lo; i < hi; ++i) {
      if (order_key(x.l[i]) == prefix && at_or_before(prefix, i, bound)) {
        cw += x.w[i - x.w_base];
        cc += 1;
        if (reached(reach, target, cw, cc)) {
          s.claim_idx = i;
          s.claim_w = cw;
          s.claim_c = cc;
          break;
        }
      }
    }
  }
  __syncthreads();
  exchange(r, Pub{s.claim_w, s.claim_c, 0, s.claim_idx, 0.0f, 0});
  for (int q = 0; q < kCluster; ++q) {
    if (s.all[q].idx != INT32_MAX) return {true, Pos{prefix, s.all[q].idx}, s.all[q].a, s.all[q].b};
  }
  // Only a safeguard: the last tied candidate, with everything tied counted.
  return {true, Pos{prefix, tie_last}, before_w + tied_w, before_c + tied_c};
}

__global__ void __cluster_dims__(kCluster, 1, 1) __launch_bounds__(kThreads)
    sample_kernel(const float* logits, int64_t vocab64, const SampleRow* rows, u64* weights,
                  double scale, int slice, bool shared_weights, int32_t* out) {
  extern __shared__ u64 slice_weights[];
  __shared__ Shared s;
  Row r{s, cg::this_cluster(), 0, 0};
  const int tid = static_cast<int>(threadIdx.x);
  const int row = static_cast<int>(blockIdx.x) / kCluster;
  const int rank = static_cast<int>(r.cluster.block_rank());
  const SampleRow p = rows[row];
  const int vocab = static_cast<int>(vocab64);
  const float* l = logits + static_cast<int64_t>(p.row) * vocab64;
  const int lo = min(vocab, rank * slice), hi = min(vocab, lo + slice);
  u64* w = shared_weights ? slice_weights : weights + static_cast<int64_t>(row) * vocab64;
  const int w_base = shared_weights ? lo : 0;

  // The largest logit and the last candidate in order (smallest key, then largest index).
  float mx = -INFINITY;
  Pos mine{0xffffffffu, -1};
  for (int i = lo + tid; i < hi; i += kThreads) {
    const float v = l[i];
    mx = fmaxf(mx, v);
    const Pos q{order_key(v), i};
    if (later(q, mine)) mine = q;
  }
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, o));
  if (tid % 32 == 0) s.warp_f[tid / 32] = mx;
  __syncthreads();
  for (int i = 0; i < kWarps; ++i) mx = fmaxf(mx, s.warp_f[i]);
  const Pos last = row_last(r, mine);  // its exchange also carries nothing else; then the max:
  exchange(r, Pub{0, 0, 0, 0, mx, 0});
  for (int i = 0; i < kCluster; ++i) mx = fmaxf(mx, s.all[i].f);

  // min_p drops the candidates whose weight (probability relative to the top token's) is below
  // it: weight 0, and the bound moves to the last one kept, as the host's keep_at_least.
  const bool min_p = p.min_p > 0.0;
  Pos kept{0xffffffffu, -1};
  u64 local = 0;
  for (int i = lo + tid; i < hi; i += kThreads) {
    const double weight =
        exp((static_cast<double>(l[i]) - static_cast<double>(mx)) / p.temperature);
    if (min_p) {
      if (weight < p.min_p) {
        w[i - w_base] = 0;
        continue;
      }
      const Pos q{order_key(l[i]), i};
      if (later(q, kept)) kept = q;
    }
    const u64 wi = __double2ull_rn(weight * scale);
    w[i - w_base] = wi;
    local += wi;
  }
  __syncthreads();
  const Slice x{l, w, w_base, lo, hi};

  // Targets in fixed point: cum >= t holds for an integer cum exactly when cum >= ceil(t), and
  // cum > t exactly when cum > floor(t).
  Pos bound = min_p ? row_last(r, kept) : last;
  u64 mass = 0;
  bool counted = false;
  if (p.top_k > 0 && p.top_k < vocab64) {
    const Found f = select(r, x, bound, Reach::kCountAtLeast, static_cast<u64>(p.top_k));
    if (f.found) {  // not found: min_p left fewer than top_k
      bound = f.pos;
      mass = f.cum_w;
      counted = true;
    }
  }
  if (!counted) mass = row_sum(r, local);
  if (p.top_p < 1.0) {
    const u64 target = static_cast<u64>(ceil(p.top_p * static_cast<double>(mass)));
    const Found f = select(r, x, bound, Reach::kWeightAtLeast, target);
    if (f.found) {
      bound = f.pos;
      mass = f.cum_w;
    }
  }
  const u64 draw = static_cast<u64>(floor(p.u * static_cast<double>(mass)));
  const Found f = select(r, x, bound, Reach::kWeightAbove, draw);
  if (rank == 0 && tid == 0) out[row] = f.found ? f.pos.idx : bound.idx;
  r.cluster.sync();  // no block leaves while another may still read its shared memory
}

}  // namespace

cudaError_t launch_sample(const float* logits, int64_t vocab, const SampleRow* rows, int num_rows,
                          uint64_t* weights, int32_t* out, cudaStream_t stream) {
  if (vocab < 1 || vocab > (int64_t{1} << 30)) return cudaErrorInvalidValue;
  // Weights <= 1 in units of 2^-shift, with a whole row's sum below 2^63.
  int bits = 0;
  while ((int64_t{1} << bits) < vocab) ++bits;
  const double scale = std::ldexp(1.0, 62 - bits);
  if (num_rows <= 0) return cudaGetLastError();
  static const cudaError_t attribute = cudaFuncSetAttribute(
      sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(kSharedWeights * sizeof(u64)));
  if (attribute != cudaSuccess) return attribute;
  const int slice = static_cast<int>((vocab + kCluster - 1) / kCluster);
  const bool shared_weights = slice <= kSharedWeights;
  const size_t shared_bytes = shared_weights ? static_cast<size_t>(slice) * sizeof(u64) : 0;
  sample_kernel<<<num_rows * kCluster, kThreads, shared_bytes, stream>>>(
      logits, vocab, rows, reinterpret_cast<unsigned long long*>(weights), scale, slice,
      shared_weights, out);
  return cudaGetLastError();
}

}  // namespace paceline::cuda
