// Temperature / min_p / top-k / top-p sampling on the GPU with the semantics of the host's
// sample_token (src/exec/sampler.cpp): weights exp((l - max) / T) in double; candidates ordered by
// weight descending, ties by lower index; min_p keeps the weights of at least min_p; top-k keeps
// the first k; top-p the shortest head holding at least top_p of the remaining mass; the draw is
// the first candidate whose cumulative weight passes u * mass, u = sample_uniform(seed, position)
// computed by the caller.
//
// One cluster of C blocks per sampled row (Hopper thread-block clusters; C = 8, 4 or 2, chosen
// per launch so that the rows' clusters fit the device in the fewest waves, or fixed by
// PACELINE_SAMPLE_CLUSTER; the draws do not depend on C, see below): each block owns a contiguous
// slice of the row, and the blocks agree on every decision through distributed shared memory. Every
// "first candidate whose cumulative count or weight reaches a target" is found without sorting
// the row: one pass builds a histogram of count and weight over kBuckets buckets
// of equal width in (max - l) / T (monotone in the logit, so bucket order is the sampler's order,
// and on a flat row the candidates spread over many buckets), summed over the cluster once per
// row; its prefix sums give the bucket where a target is crossed, and the candidates of that one
// bucket (a few hundred on a flat row) are gathered from the cluster and sorted into the
// sampler's order, which gives the candidate. A bucket too full to sort (heavy ties) falls back to
// a radix select over the logits' order keys within it: four passes of 8 bits, each a histogram
// summed over the cluster, then a scan of the tied candidates in index order.
//
// The weights are summed in 64-bit fixed point (each exp((l - max) / T) <= 1 rounded to a
// multiple of 2^-shift, shift chosen so that a whole row cannot overflow): integer additions are
// exact and associative, so every sum is the same whatever order the threads add in or however
// the row is cut into slices (the same token on every run and at every cluster size), and
// shared-memory 64-bit integer atomics are native where double ones are compare-and-swap loops
// that serialize on the few busy bins of a flat row.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>

#include <cooperative_groups.h>

#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxCluster = 8;     // blocks per row at most (the portable cluster size)
constexpr int kMinCluster = 2;     // and at least
constexpr int kClusterSizes[] = {8, 4, 2};  // the sizes the kernel is built for, largest first
constexpr bool is_cluster_size(int c) { return c == 8 || c == 4 || c == 2; }
constexpr int kBuckets = 2048;     // buckets of (max - l) / T, in the sampler's order
constexpr float kRange = 32.0f;    // they span at most this much; beyond, the last bucket (weights
                                   // below e^-32, under the fixed point's resolution)
constexpr int kBinsPerThread = kBuckets / kThreads;
template <int C>
constexpr int kSegment = kBuckets / C;  // the buckets each block sums over a cluster of C
constexpr int kListEntries = 1024;  // a bucket with more candidates is resolved by radix passes
constexpr unsigned kFull = 0xffffffffu;
using u64 = unsigned long long;

static_assert(kBuckets % kThreads == 0 && kListEntries <= 2 * kThreads);

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
  float g;
};

// A candidate of one bucket: its order key, index and weight.
struct Entry {
  uint32_t key;
  int32_t idx;
  u64 w;
};

struct Shared {
  u64 hist_w[kBuckets];  // this block's histogram of weight and count by bucket; its first 512
  unsigned hist_c[kBuckets];  // bins serve again as the radix passes' two alternating histograms
  u64 seg_w[kSegment<kMinCluster>];  // this block's segment of the buckets, summed over the cluster
  unsigned seg_c[kSegment<kMinCluster>];
  u64 cum_w[kBuckets + 1];    // the cluster's weight and count of the buckets before each one
  unsigned cum_c[kBuckets + 1];
  Entry local[kListEntries];  // this block's candidates of one bucket
  Entry list[kListEntries];   // the bucket's candidates over the cluster, in the sampler's order
  u64 list_cw[kListEntries];  // the weight of the list's entries before each one
  Pub pub[2];                 // two, alternating: one may still be read while the next is written
  Pub all[kMaxCluster];       // the last exchange: every block's Pub, in rank order
  u64 scan_a[kWarps];
  u64 scan_b[kWarps];
  u64 total_a;
  u64 total_b;
  float warp_f[kWarps];
  float warp_g[kWarps];
  Pos warp_pos[kWarps];
  int local_n;
  int list_n;
  int list_bucket;  // the bucket `list` holds, -1: none
  int chosen;
  u64 chosen_w;
  u64 chosen_c;
  int claim_idx;
  u64 claim_w;
  u64 claim_c;
  int tie_last;
};

// The cluster of C blocks a row runs on, and the parity of its alternating buffers (the same in
// every block: every block makes the same exchanges in the same order).
template <int C>
struct Row {
  Shared& s;
  cg::cluster_group cluster;
  int exchanges;
  int hists;
};

// Every block shows `mine` (thread 0's), and afterwards s.all holds all of them, in rank order.
// A buffer is written again two exchanges later, by when every reader has passed a cluster
// barrier after reading it.
template <int C>
__device__ void exchange(Row<C>& r, const Pub& mine) {
  Shared& s = r.s;
  const int k = r.exchanges++ & 1;
  if (threadIdx.x == 0) s.pub[k] = mine;
  r.cluster.sync();
  if (threadIdx.x < C) s.all[threadIdx.x] = *r.cluster.map_shared_rank(&s.pub[k], threadIdx.x);
  __syncthreads();
}

__device__ __forceinline__ u64 warp_sum(u64 v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// Adds (w, 1) to bin `digit` (-1: nothing) for every lane: one atomic per warp for the lanes in
// bin `common` (the last bucket, where a peaked row's tail falls; -1: none), one per warp when all the other
// active lanes share a bin, else one per lane.
__device__ __forceinline__ void hist_add(u64* hist_w, unsigned* hist_c, int digit, u64 w,
                                         int common) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const bool is_common = common >= 0 && digit == common;
  const unsigned in_common = __ballot_sync(kFull, is_common);
  if (in_common != 0) {
    const u64 sum = warp_sum(is_common ? w : 0ull);
    if (lane == __ffs(static_cast<int>(in_common)) - 1) {
      atomicAdd(&hist_w[common], sum);
      atomicAdd(&hist_c[common], static_cast<unsigned>(__popc(in_common)));
    }
  }
  const unsigned active = __ballot_sync(kFull, digit >= 0 && digit != common);
  if (active == 0) return;
  const int leader = __ffs(static_cast<int>(active)) - 1;
  const int d0 = __shfl_sync(kFull, digit, leader);
  if (__ballot_sync(kFull, digit == d0) == active) {
    const u64 sum = warp_sum(digit == d0 ? w : 0ull);
    if (lane == leader) {
      atomicAdd(&hist_w[d0], sum);
      atomicAdd(&hist_c[d0], static_cast<unsigned>(__popc(active)));
    }
  } else if (digit >= 0 && digit != common) {
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
    const u64 xa = lane < kWarps ? s.scan_a[lane] : 0ull, xb = lane < kWarps ? s.scan_b[lane] : 0ull;
    u64 ya = xa, yb = xb;
    for (int o = 1; o < 32; o <<= 1) {
      const u64 za = __shfl_up_sync(kFull, ya, o), zb = __shfl_up_sync(kFull, yb, o);
      if (lane >= o) {
        ya += za;
        yb += zb;
      }
    }
    if (lane < kWarps) {
      s.scan_a[lane] = ya - xa;
      s.scan_b[lane] = yb - xb;
    }
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

// The last of the positions the threads pass, in the sampler's order, over the whole row.
template <int C>
__device__ Pos row_last(Row<C>& r, Pos mine) {
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
  exchange(r, Pub{0, 0, block.key, block.idx, 0.0f, 0.0f});
  Pos last{0xffffffffu, -1};
  for (int i = 0; i < C; ++i) {
    const Pos q{s.all[i].key, s.all[i].idx};
    if (later(q, last)) last = q;
  }
  return last;
}

// The row as this block sees it: its slice l[lo, hi) of the logits, and how a logit becomes a
// weight and a bucket.
struct Slice {
  const float* l;
  int lo;
  int hi;
  float mx;
  double temperature;
  double scale;
  double min_p;  // 0: off
  float to_bucket;  // buckets per unit of (max - l)

  __device__ __forceinline__ int bucket(float v) const {
    const float d = __fmul_rn(__fsub_rn(mx, v), to_bucket);  // monotone in v, never contracted
    return d < static_cast<float>(kBuckets - 1) ? static_cast<int>(d) : kBuckets - 1;
  }
  __device__ __forceinline__ double weight(float v) const {
    return exp((static_cast<double>(v) - static_cast<double>(mx)) / temperature);
  }
  // The fixed-point weight; false for a candidate min_p drops.
  __device__ __forceinline__ bool kept_weight(float v, u64* w) const {
    const double x = weight(v);
    if (min_p > 0.0 && x < min_p) return false;
    *w = __double2ull_rn(x * scale);
    return true;
  }
};

// A bound: every candidate at or before `pos` in the sampler's order counts, and the candidates
// up to and including it weigh cum_w and number cum_c; `bucket` is pos's bucket.
struct Bound {
  Pos pos;
  int bucket;
  u64 cum_w;
  u64 cum_c;
};

struct Found {
  bool found;
  Bound at;
};

// The exclusive prefix of the cluster's bucket histogram, in every block: each block first sums
// its segment of the buckets over the cluster, then every block reads the segments.
template <int C>
__device__ void merge_buckets(Row<C>& r) {
  Shared& s = r.s;
  const int tid = static_cast<int>(threadIdx.x);
  r.cluster.sync();
  for (int t = tid; t < kSegment<C>; t += kThreads) {
    const int b = static_cast<int>(r.cluster.block_rank()) * kSegment<C> + t;
    u64 w = 0;
    unsigned c = 0;
    for (int q = 0; q < C; ++q) {
      w += *r.cluster.map_shared_rank(&s.hist_w[b], q);
      c += *r.cluster.map_shared_rank(&s.hist_c[b], q);
    }
    s.seg_w[t] = w;
    s.seg_c[t] = c;
  }
  r.cluster.sync();
  // Thread t holds kBinsPerThread consecutive buckets, all in one segment (kBinsPerThread
  // divides every segment).
  const int first = tid * kBinsPerThread;
  const int owner = first / kSegment<C>, at = first % kSegment<C>;
  const u64* seg_w = r.cluster.map_shared_rank(s.seg_w, owner);
  const unsigned* seg_c = r.cluster.map_shared_rank(s.seg_c, owner);
  u64 w[kBinsPerThread];
  unsigned c[kBinsPerThread];
  u64 tw = 0, tc = 0;
  for (int j = 0; j < kBinsPerThread; ++j) {
    w[j] = seg_w[at + j];
    c[j] = seg_c[at + j];
    tw += w[j];
    tc += c[j];
  }
  u64 ew, ec, total_w, total_c;
  exclusive_scan2(s, tw, tc, &ew, &ec, &total_w, &total_c);
  for (int j = 0; j < kBinsPerThread; ++j) {
    s.cum_w[first + j] = ew;
    s.cum_c[first + j] = static_cast<unsigned>(ec);
    ew += w[j];
    ec += c[j];
  }
  if (tid == 0) {
    s.cum_w[kBuckets] = total_w;
    s.cum_c[kBuckets] = static_cast<unsigned>(total_c);
  }
  __syncthreads();
}

// The bucket holding the first candidate at or before `bound` whose cumulative count or weight
// reaches `target` (-1: none does), with the candidates before that bucket in before_w/before_c.
__device__ int crossing_bucket(Shared& s, const Bound& bound, Reach reach, u64 target,
                               u64* before_w, u64* before_c) {
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) s.chosen = -1;
  __syncthreads();
  for (int j = 0; j < kBinsPerThread; ++j) {
    const int b = tid * kBinsPerThread + j;
    if (b > bound.bucket) break;
    const u64 xw = s.cum_w[b], xc = s.cum_c[b];
    const u64 iw = b < bound.bucket ? s.cum_w[b + 1] : bound.cum_w;
    const u64 ic = b < bound.bucket ? s.cum_c[b + 1] : bound.cum_c;
    if (ic > xc && reached(reach, target, iw, ic) && !reached(reach, target, xw, xc)) s.chosen = b;
  }
  __syncthreads();
  const int b = s.chosen;
  if (b >= 0) {
    *before_w = s.cum_w[b];
    *before_c = s.cum_c[b];
  }
  __syncthreads();
  return b;
}

__device__ __forceinline__ bool entry_before(const Entry& a, const Entry& b) {
  return a.key > b.key || (a.key == b.key && a.idx < b.idx);
}

// Gathers the candidates of bucket b (those min_p keeps) from the whole row into s.list, in the
// sampler's order, with the weight before each; false (and nothing held) when there are more
// than kListEntries.
template <int C>
__device__ bool build_list(Row<C>& r, const Slice& x, int b) {
  Shared& s = r.s;
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) s.local_n = 0;
  __syncthreads();
  for (int i = x.lo + tid; i < x.hi; i += kThreads) {
    const float v = x.l[i];
    if (x.bucket(v) != b) continue;
    u64 w;
    if (!x.kept_weight(v, &w)) continue;
    const int slot = atomicAdd(&s.local_n, 1);
    if (slot < kListEntries) s.local[slot] = Entry{order_key(v), i, w};
  }
  __syncthreads();
  exchange(r, Pub{static_cast<u64>(s.local_n), 0, 0, 0, 0.0f, 0.0f});
  u64 total = 0;
  for (int q = 0; q < C; ++q) total += s.all[q].a;
  if (total > static_cast<u64>(kListEntries)) {
    if (tid == 0) s.list_bucket = -1;
    __syncthreads();
    return false;
  }
  const int n = static_cast<int>(total);
  int padded = 1;
  while (padded < n) padded <<= 1;
  for (int j = tid; j < padded; j += kThreads) {
    if (j >= n) {
      s.list[j] = Entry{0u, INT32_MAX, 0ull};  // after every candidate
      continue;
    }
    int q = 0, offset = j;
    while (offset >= static_cast<int>(s.all[q].a)) offset -= static_cast<int>(s.all[q++].a);
    s.list[j] = r.cluster.map_shared_rank(s.local, q)[offset];
  }
  r.cluster.sync();  // every block has read the others' candidates before any builds its next
  // Bitonic sort into the sampler's order.
  for (int k = 2; k <= padded; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = tid; i < padded; i += kThreads) {
        const int p = i ^ j;
        if (p > i) {
          const bool ascending = (i & k) == 0;
          const Entry a = s.list[i], c = s.list[p];
          if (entry_before(c, a) == ascending) {
            s.list[i] = c;
            s.list[p] = a;
          }
        }
      }
      __syncthreads();
    }
  }
  // The weight before each entry: two consecutive entries per thread.
  const int j0 = 2 * tid;
  const u64 w0 = j0 < n ? s.list[j0].w : 0ull, w1 = j0 + 1 < n ? s.list[j0 + 1].w : 0ull;
  u64 e, unused_e, unused_t, unused_u;
  exclusive_scan2(s, w0 + w1, 0ull, &e, &unused_e, &unused_t, &unused_u);
  if (j0 < n) s.list_cw[j0] = e;
  if (j0 + 1 < n) s.list_cw[j0 + 1] = e + w0;
  if (tid == 0) {
    s.list_n = n;
    s.list_bucket = b;
  }
  __syncthreads();
  return true;
}

// Radix passes over the slice's candidates of bucket b at or before `limit` (the fallback for a
// bucket too full to sort): four passes of 8 bits over the order keys, each a histogram summed
// over the cluster, then a scan of the tied candidates in index order.
template <int C>
__device__ Found radix_select(Row<C>& r, const Slice& x, int b, Pos limit, u64 before_w,
                              u64 before_c, Reach reach, u64 target) {
  Shared& s = r.s;
  const int tid = static_cast<int>(threadIdx.x);
  uint32_t prefix = 0;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    const int h = r.hists++ & 1;
    u64* hist_w = s.hist_w + 256 * h;
    unsigned* hist_c = s.hist_c + 256 * h;
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
        const float v = x.l[i];
        const uint32_t k = order_key(v);
        if (at_or_before(k, i, limit) && (pass == 0 || (k >> (shift + 8)) == prefix) &&
            x.bucket(v) == b && x.kept_weight(v, &wi)) {
          digit = static_cast<int>((k >> shift) & 0xffu);
        }
      }
      hist_add(hist_w, hist_c, digit, wi, -1);
    }
    r.cluster.sync();
    // Thread t holds digit 255 - t summed over the cluster, so thread order is the sampler's.
    u64 bw = 0, bc = 0;
    if (tid < 256) {
      for (int q = 0; q < C; ++q) {
        bw += *r.cluster.map_shared_rank(&hist_w[255 - tid], q);
        bc += *r.cluster.map_shared_rank(&hist_c[255 - tid], q);
      }
    }
    u64 ew, ec, unused_w, unused_c;
    exclusive_scan2(s, bw, bc, &ew, &ec, &unused_w, &unused_c);
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
    if (chosen < 0) return {false, {}};
    before_w = s.chosen_w;
    before_c = s.chosen_c;
    prefix = (prefix << 8) | static_cast<uint32_t>(chosen);
  }

  // The candidates with exactly this key, in index order: contiguous index ranges per thread,
  // the block's ranges in thread order, the blocks' slices in rank order.
  auto tied = [&](int i, u64* w) {
    const float v = x.l[i];
    return order_key(v) == prefix && at_or_before(prefix, i, limit) && x.bucket(v) == b &&
           x.kept_weight(v, w);
  };
  const int chunk = (x.hi - x.lo + kThreads - 1) / kThreads;
  const int lo = min(x.hi, x.lo + tid * chunk);
  const int hi = min(x.hi, lo + chunk);
  u64 lw = 0, lc = 0;
  int last = -1;
  for (int i = lo; i < hi; ++i) {
    u64 w;
    if (tied(i, &w)) {
      lw += w;
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
  exchange(r, Pub{block_w, block_c, 0, s.tie_last, 0.0f, 0.0f});
  const unsigned rank = r.cluster.block_rank();
  u64 ahead_w = before_w, ahead_c = before_c, tied_w = 0, tied_c = 0;
  int tie_last = -1;
  for (int q = 0; q < C; ++q) {
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
      u64 w;
      if (tied(i, &w)) {
        cw += w;
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
  exchange(r, Pub{s.claim_w, s.claim_c, 0, s.claim_idx, 0.0f, 0.0f});
  for (int q = 0; q < C; ++q) {
    if (s.all[q].idx != INT32_MAX) {
      return {true, Bound{Pos{prefix, s.all[q].idx}, b, s.all[q].a, s.all[q].b}};
    }
  }
  // Only a safeguard: the last tied candidate, with everything tied counted.
  return {true, Bound{Pos{prefix, tie_last}, b, before_w + tied_w, before_c + tied_c}};
}

// The first candidate at or before `bound`, in the sampler's order, whose cumulative count or
// weight reaches `target`; found = false when none does (rounding at the very end). The bucket
// histogram finds its bucket; the bucket's candidates, gathered and sorted, find it.
template <int C>
__device__ Found select(Row<C>& r, const Slice& x, const Bound& bound, Reach reach, u64 target) {
  Shared& s = r.s;
  const int tid = static_cast<int>(threadIdx.x);
  u64 before_w = 0, before_c = 0;
  const int b = crossing_bucket(s, bound, reach, target, &before_w, &before_c);
  if (b < 0) return {false, {}};
  // Only in the bound's own bucket does the bound cut the candidates.
  const Pos limit = b == bound.bucket ? bound.pos : Pos{0u, INT32_MAX};
  if (s.list_bucket != b && !build_list(r, x, b)) {
    return radix_select(r, x, b, limit, before_w, before_c, reach, target);
  }
  if (tid == 0) s.claim_idx = -1;
  __syncthreads();
  for (int j = tid; j < s.list_n; j += kThreads) {
    const Entry e = s.list[j];
    if (!at_or_before(e.key, e.idx, limit)) continue;
    const u64 xw = before_w + s.list_cw[j], xc = before_c + static_cast<u64>(j);
    if (reached(reach, target, xw + e.w, xc + 1) && !reached(reach, target, xw, xc)) {
      s.claim_idx = j;
    }
  }
  __syncthreads();
  const int j = s.claim_idx;
  __syncthreads();
  if (j < 0) return {false, {}};
  const Entry e = s.list[j];
  return {true, Bound{Pos{e.key, e.idx}, b, before_w + s.list_cw[j] + e.w,
                      before_c + static_cast<u64>(j) + 1}};
}

template <int C>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(kThreads, 2)
    sample_kernel(const float* logits, int64_t vocab64, const SampleRow* rows, double scale,
                  int slice, int32_t* out) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  Shared& s = *reinterpret_cast<Shared*>(shared_bytes);
  Row<C> r{s, cg::this_cluster(), 0, 0};
  const int tid = static_cast<int>(threadIdx.x);
  const int row = static_cast<int>(blockIdx.x) / C;
  const int rank = static_cast<int>(r.cluster.block_rank());
  const SampleRow p = rows[row];
  const int vocab = static_cast<int>(vocab64);
  const float* l = logits + static_cast<int64_t>(p.row) * vocab64;
  const int lo = min(vocab, rank * slice), hi = min(vocab, lo + slice);
  if (tid == 0) s.list_bucket = -1;

  // The largest and smallest logits and the last candidate in order (smallest key, then largest
  // index).
  float mx = -INFINITY, mn = INFINITY;
  Pos mine{0xffffffffu, -1};
  for (int i = lo + tid; i < hi; i += kThreads) {
    const float v = l[i];
    mx = fmaxf(mx, v);
    mn = fminf(mn, v);
    const Pos q{order_key(v), i};
    if (later(q, mine)) mine = q;
  }
  for (int o = 16; o > 0; o >>= 1) {
    mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, o));
    mn = fminf(mn, __shfl_xor_sync(kFull, mn, o));
  }
  if (tid % 32 == 0) {
    s.warp_f[tid / 32] = mx;
    s.warp_g[tid / 32] = mn;
  }
  __syncthreads();
  for (int i = 0; i < kWarps; ++i) {
    mx = fmaxf(mx, s.warp_f[i]);
    mn = fminf(mn, s.warp_g[i]);
  }
  const Pos last = row_last(r, mine);
  exchange(r, Pub{0, 0, 0, 0, mx, mn});
  for (int i = 0; i < C; ++i) {
    mx = fmaxf(mx, s.all[i].f);
    mn = fminf(mn, s.all[i].g);
  }

  // Buckets of equal width over (max - l) / T, up to kRange: the same in every block.
  const float spread = __fmul_rn(__fsub_rn(mx, mn), static_cast<float>(1.0 / p.temperature));
  const float range = fminf(kRange, spread);
  const float to_bucket =
      range > 0.0f ? static_cast<float>(kBuckets) / range * static_cast<float>(1.0 / p.temperature)
                   : 0.0f;
  const Slice x{l, lo, hi, mx, p.temperature, scale, p.min_p, isfinite(to_bucket) ? to_bucket : 0.0f};

  // The histogram of weight and count by bucket. min_p drops the candidates whose weight
  // (probability relative to the top token's) is below it, and the bound moves to the last one
  // kept, as the host's keep_at_least.
  for (int i = tid; i < kBuckets; i += kThreads) {
    s.hist_w[i] = 0;
    s.hist_c[i] = 0;
  }
  __syncthreads();
  Pos kept{0xffffffffu, -1};
  for (int base = lo; base < hi; base += kThreads) {
    const int i = base + tid;
    int digit = -1;
    u64 w = 0;
    if (i < hi) {
      const float v = l[i];
      if (x.kept_weight(v, &w)) {
        digit = x.bucket(v);
        const Pos q{order_key(v), i};
        if (later(q, kept)) kept = q;
      }
    }
    hist_add(s.hist_w, s.hist_c, digit, w, kBuckets - 1);
  }
  __syncthreads();
  merge_buckets(r);
  const Pos first_bound = p.min_p > 0.0 ? row_last(r, kept) : last;
  Bound bound{first_bound, x.bucket(l[first_bound.idx]), s.cum_w[kBuckets], s.cum_c[kBuckets]};

  // Targets in fixed point: cum >= t holds for an integer cum exactly when cum >= ceil(t), and
  // cum > t exactly when cum > floor(t).
  u64 mass = bound.cum_w;
  if (p.top_k > 0 && p.top_k < vocab64) {
    const Found f = select(r, x, bound, Reach::kCountAtLeast, static_cast<u64>(p.top_k));
    if (f.found) {  // not found: min_p left fewer than top_k
      bound = f.at;
      mass = f.at.cum_w;
    }
  }
  if (p.top_p < 1.0) {
    const u64 target = static_cast<u64>(ceil(p.top_p * static_cast<double>(mass)));
    const Found f = select(r, x, bound, Reach::kWeightAtLeast, target);
    if (f.found) {
      bound = f.at;
      mass = f.at.cum_w;
    }
  }
  const u64 draw = static_cast<u64>(floor(p.u * static_cast<double>(mass)));
  const Found f = select(r, x, bound, Reach::kWeightAbove, draw);
  if (rank == 0 && tid == 0) out[row] = f.found ? f.at.pos.idx : bound.pos.idx;
  r.cluster.sync();  // no block leaves while another may still read its shared memory
}

}  // namespace

namespace {

template <int C>
cudaError_t configure() {
  static const cudaError_t status =
      cudaFuncSetAttribute(sample_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(sizeof(Shared)));
  return status;
}

// The clusters of C blocks the device holds at once (queried once; 0 when it cannot say).
template <int C>
int cluster_room() {
  static const int room = [] {
    if (configure<C>() != cudaSuccess) return 0;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(C, 1, 1);
    config.blockDim = dim3(kThreads, 1, 1);
    config.dynamicSmemBytes = sizeof(Shared);
    int n = 0;  // the kernel's own __cluster_dims__ gives the cluster
    if (cudaOccupancyMaxActiveClusters(&n, sample_kernel<C>, &config) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return room;
}

// PACELINE_SAMPLE_CLUSTER=2, 4 or 8 fixes the cluster size; unset, auto or anything else: 0
// (the fewest waves' choice).
int cluster_from_environment() {
  static const int c = [] {
    const char* v = std::getenv("PACELINE_SAMPLE_CLUSTER");
    if (v == nullptr) return 0;
    const int n = std::atoi(v);
    return is_cluster_size(n) ? n : 0;
  }();
  return c;
}

template <int C>
cudaError_t launch(const float* logits, int64_t vocab, const SampleRow* rows, int num_rows,
                   double scale, int32_t* out, cudaStream_t stream) {
  const cudaError_t attribute = configure<C>();
  if (attribute != cudaSuccess) return attribute;
  const int slice = static_cast<int>((vocab + C - 1) / C);
  sample_kernel<C><<<num_rows * C, kThreads, sizeof(Shared), stream>>>(logits, vocab, rows, scale,
                                                                        slice, out);
  return cudaGetLastError();
}

}  // namespace

int sample_cluster_room(int cluster) {
  switch (cluster) {
    case 2: return cluster_room<2>();
    case 4: return cluster_room<4>();
    case 8: return cluster_room<8>();
    default: return 0;
  }
}

int sample_cluster_fewest_waves(int num_rows) {
  // The fewest waves of clusters, then the most blocks a row.
  int best = kMaxCluster;
  int64_t best_waves = -1;
  for (const int c : kClusterSizes) {
    const int room = sample_cluster_room(c);
    if (room < 1) continue;
    const int64_t waves = (std::max(num_rows, 1) + room - 1) / room;
    if (best_waves < 0 || waves < best_waves) {
      best = c;
      best_waves = waves;
    }
  }
  return best;
}

int sample_cluster_size(int num_rows) {
  const int c = cluster_from_environment();
  return c > 0 ? c : sample_cluster_fewest_waves(num_rows);
}

cudaError_t launch_sample(const float* logits, int64_t vocab, const SampleRow* rows, int num_rows,
                          int32_t* out, cudaStream_t stream, int cluster) {
  if (vocab < 1 || vocab > (int64_t{1} << 30)) return cudaErrorInvalidValue;
  if (cluster != 0 && !is_cluster_size(cluster)) return cudaErrorInvalidValue;
  // Weights <= 1 in units of 2^-shift, with a whole row's sum below 2^63.
  int bits = 0;
  while ((int64_t{1} << bits) < vocab) ++bits;
  const double scale = std::ldexp(1.0, 62 - bits);
  if (num_rows <= 0) return cudaGetLastError();
  switch (cluster != 0 ? cluster : sample_cluster_size(num_rows)) {
    case 2: return launch<2>(logits, vocab, rows, num_rows, scale, out, stream);
    case 4: return launch<4>(logits, vocab, rows, num_rows, scale, out, stream);
    default: return launch<8>(logits, vocab, rows, num_rows, scale, out, stream);
  }
}

}  // namespace paceline::cuda
