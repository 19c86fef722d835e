// Temperature / min_p / top-k / top-p sampling on the GPU with the semantics of the host's
// sample_token (src/exec/sampler.cpp): weights exp((l - max) / T) in double; candidates ordered by
// weight descending, ties by lower index; min_p keeps the weights of at least min_p; top-k keeps
// the first k; top-p the shortest head holding at least top_p of the remaining mass; the draw is
// the first candidate whose cumulative weight passes u * mass, u = sample_uniform(seed, position)
// computed by the caller.
//
// One block per sampled row. Every "first candidate whose cumulative count or weight reaches a
// target" is found without sorting, by a radix select over the logits' order keys: four passes
// of 8 bits, each a histogram (count and weight per digit) of the candidates that share the
// digits chosen so far, then a scan of the tied candidates in index order. Since the weight is
// monotone in the logit, the order of keys is the sampler's order.
//
// The weights are summed in 64-bit fixed point (each exp((l - max) / T) <= 1 rounded to a
// multiple of 2^-shift, shift chosen so that a whole row cannot overflow): integer additions are
// exact and associative, so every sum is the same whatever order the threads add in (the same
// token on every run), and shared-memory 64-bit integer atomics are native where double ones
// are compare-and-swap loops that serialize on the few busy bins of a flat row.
#include <cfloat>
#include <cmath>

#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
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

enum class Reach { kCountAtLeast, kWeightAtLeast, kWeightAbove };

__device__ __forceinline__ bool reached(Reach r, u64 target, u64 weight, u64 count) {
  switch (r) {
    case Reach::kCountAtLeast: return count >= target;
    case Reach::kWeightAtLeast: return weight >= target;
    default: return weight > target;
  }
}

struct Shared {
  u64 hist_w[256];
  unsigned hist_c[256];
  u64 scan_a[kWarps];
  u64 scan_b[kWarps];
  u64 before_w;  // cumulative weight and count of the candidates ahead of the current bin
  u64 before_c;
  int chosen;
  int tie_idx;
  int tie_last;
  u64 tie_w;
  u64 tie_c;
  u64 total;
  Pos last[kWarps];
};

struct Found {
  bool found;
  Pos pos;
  u64 cum_w;  // cumulative weight and count up to and including pos
  u64 cum_c;
};

__device__ __forceinline__ u64 warp_sum(u64 v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// Adds (w, 1) to bin `digit` (-1: nothing) for every lane; one atomic per warp when all active
// lanes share a bin (the common case in the first passes over a flat distribution).
__device__ __forceinline__ void hist_add(Shared& s, int digit, u64 w) {
  const unsigned active = __ballot_sync(kFull, digit >= 0);
  if (active == 0) return;
  const int leader = __ffs(static_cast<int>(active)) - 1;
  const int d0 = __shfl_sync(kFull, digit, leader);
  if (__ballot_sync(kFull, digit == d0) == active) {
    const u64 sum = warp_sum(digit >= 0 ? w : 0ull);
    if (static_cast<int>(threadIdx.x % 32) == leader) {
      atomicAdd(&s.hist_w[d0], sum);
      atomicAdd(&s.hist_c[d0], static_cast<unsigned>(__popc(active)));
    }
  } else if (digit >= 0) {
    atomicAdd(&s.hist_w[digit], w);
    atomicAdd(&s.hist_c[digit], 1u);
  }
}

// Exclusive prefix sums of (a, b) over the block's threads in thread order.
__device__ void exclusive_scan2(Shared& s, u64 a, u64 b, u64* ea, u64* eb) {
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  u64 ia = a, ib = b;
  for (int o = 1; o < 32; o <<= 1) {
    const u64 ta = __shfl_up_sync(kFull, ia, o), tb = __shfl_up_sync(kFull, ib, o);
    if (lane >= o) {
      ia += ta;
      ib += tb;
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
      const u64 ta = __shfl_up_sync(kFull, ya, o), tb = __shfl_up_sync(kFull, yb, o);
      if (lane >= o) {
        ya += ta;
        yb += tb;
      }
    }
    s.scan_a[lane] = ya - xa;
    s.scan_b[lane] = yb - xb;
  }
  __syncthreads();
  *ea = s.scan_a[warp] + ia - a;
  *eb = s.scan_b[warp] + ib - b;
  __syncthreads();
}

__device__ u64 block_sum(Shared& s, u64 v) {
  u64 e = 0, unused = 0;
  v = warp_sum(v);
  // One value per warp, then a scan gives the total as the last warp's exclusive sum + its own.
  const int lane = static_cast<int>(threadIdx.x % 32);
  exclusive_scan2(s, lane == 0 ? v : 0ull, 0ull, &e, &unused);
  if (threadIdx.x == kThreads - 32) s.total = e + v;
  __syncthreads();
  const u64 t = s.total;
  __syncthreads();
  return t;
}

// The first candidate at or before `bound`, in the sampler's order, whose cumulative count or
// weight reaches `target`; found = false when none does (rounding at the very end).
__device__ Found select(Shared& s, const float* logits, const u64* w, int vocab, Pos bound,
                        Reach reach, u64 target) {
  if (threadIdx.x == 0) {
    s.before_w = 0;
    s.before_c = 0;
  }
  uint32_t prefix = 0;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    for (int i = static_cast<int>(threadIdx.x); i < 256; i += kThreads) {
      s.hist_w[i] = 0;
      s.hist_c[i] = 0;
    }
    __syncthreads();
    for (int base = 0; base < vocab; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      int digit = -1;
      u64 wi = 0;
      if (i < vocab) {
        const uint32_t k = order_key(logits[i]);
        if (at_or_before(k, i, bound) && (pass == 0 || (k >> (shift + 8)) == prefix)) {
          digit = static_cast<int>((k >> shift) & 0xffu);
          wi = w[i];
        }
      }
      hist_add(s, digit, wi);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      u64 bw = s.before_w, bc = s.before_c;
      s.chosen = -1;
      for (int d = 255; d >= 0; --d) {
        if (s.hist_c[d] == 0) continue;
        const u64 cw = bw + s.hist_w[d], cc = bc + s.hist_c[d];
        if (reached(reach, target, cw, cc)) {
          s.chosen = d;
          break;
        }
        bw = cw;
        bc = cc;
      }
      s.before_w = bw;
      s.before_c = bc;
    }
    __syncthreads();
    const int chosen = s.chosen;
    if (chosen < 0) return {false, bound, 0, 0};
    prefix = (prefix << 8) | static_cast<uint32_t>(chosen);
  }

  // The candidates with exactly this key, in index order: contiguous index ranges per thread.
  const int chunk = (vocab + kThreads - 1) / kThreads;
  const int lo = static_cast<int>(threadIdx.x) * chunk;
  const int hi = min(vocab, lo + chunk);
  u64 lw = 0, lc = 0;
  int last = -1;
  for (int i = lo; i < hi; ++i) {
    if (order_key(logits[i]) == prefix && at_or_before(prefix, i, bound)) {
      lw += w[i];
      lc += 1;
      last = i;
    }
  }
  if (threadIdx.x == 0) {
    s.tie_idx = INT32_MAX;
    s.tie_last = -1;
  }
  u64 ew = 0, ec = 0;
  exclusive_scan2(s, lw, lc, &ew, &ec);  // its barriers also publish tie_idx / tie_last
  const u64 bw = s.before_w + ew, bc = s.before_c + ec;
  if (last >= 0) atomicMax(&s.tie_last, last);
  if (lc > 0 && !reached(reach, target, bw, bc)) {
    u64 cw = bw, cc = bc;
    for (int i = lo; i < hi; ++i) {
      if (order_key(logits[i]) == prefix && at_or_before(prefix, i, bound)) {
        cw += w[i];
        cc += 1;
        if (reached(reach, target, cw, cc)) {
          atomicMin(&s.tie_idx, i);
          break;
        }
      }
    }
  }
  __syncthreads();
  // The sums are exact, so some thread claims; the last tied candidate is only a safeguard.
  const int idx = s.tie_idx != INT32_MAX ? s.tie_idx : s.tie_last;
  if (idx >= lo && idx < hi) {
    u64 cw = bw, cc = bc;
    for (int i = lo; i <= idx; ++i) {
      if (order_key(logits[i]) == prefix && at_or_before(prefix, i, bound)) {
        cw += w[i];
        cc += 1;
      }
    }
    s.tie_w = cw;
    s.tie_c = cc;
  }
  __syncthreads();
  const Found f{true, Pos{prefix, idx}, s.tie_w, s.tie_c};
  __syncthreads();
  return f;
}

// The last of the threads' positions in the sampler's order (smallest key, then largest index;
// idx -1 for a thread without one), the same for every thread.
__device__ Pos block_last(Shared& s, Pos mine) {
  for (int o = 16; o > 0; o >>= 1) {
    const uint32_t ok = __shfl_xor_sync(kFull, mine.key, o);
    const int oi = __shfl_xor_sync(kFull, mine.idx, o);
    if (oi >= 0 && (mine.idx < 0 || ok < mine.key || (ok == mine.key && oi > mine.idx))) {
      mine = Pos{ok, oi};
    }
  }
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  if (lane == 0) s.last[warp] = mine;
  __syncthreads();
  Pos last = s.last[0];
  for (int i = 1; i < kWarps; ++i) {
    const Pos q = s.last[i];
    if (q.idx >= 0 &&
        (last.idx < 0 || q.key < last.key || (q.key == last.key && q.idx > last.idx))) {
      last = q;
    }
  }
  __syncthreads();
  return last;
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* logits, int64_t vocab64, const SampleRow* rows, u64* weights,
                  double scale, int32_t* out) {
  __shared__ Shared s;
  const SampleRow p = rows[blockIdx.x];
  const int vocab = static_cast<int>(vocab64);
  const float* l = logits + static_cast<int64_t>(p.row) * vocab64;
  u64* w = weights + static_cast<int64_t>(blockIdx.x) * vocab64;

  // The largest logit and the last candidate in order (smallest key, then largest index).
  float mx = -INFINITY;
  uint32_t last_k = 0xffffffffu;
  int last_i = -1;
  for (int i = static_cast<int>(threadIdx.x); i < vocab; i += kThreads) {
    const float v = l[i];
    mx = fmaxf(mx, v);
    const uint32_t k = order_key(v);
    if (k < last_k || (k == last_k && i > last_i)) {
      last_k = k;
      last_i = i;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, o));
    const uint32_t ok = __shfl_xor_sync(kFull, last_k, o);
    const int oi = __shfl_xor_sync(kFull, last_i, o);
    if (ok < last_k || (ok == last_k && oi > last_i)) {
      last_k = ok;
      last_i = oi;
    }
  }
  __shared__ float warp_max[kWarps];
  __shared__ uint32_t warp_key[kWarps];
  __shared__ int warp_idx[kWarps];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  if (lane == 0) {
    warp_max[warp] = mx;
    warp_key[warp] = last_k;
    warp_idx[warp] = last_i;
  }
  __syncthreads();
  mx = warp_max[0];
  last_k = warp_key[0];
  last_i = warp_idx[0];
  for (int i = 1; i < kWarps; ++i) {
    mx = fmaxf(mx, warp_max[i]);
    if (warp_key[i] < last_k || (warp_key[i] == last_k && warp_idx[i] > last_i)) {
      last_k = warp_key[i];
      last_i = warp_idx[i];
    }
  }

  // min_p drops the candidates whose weight (probability relative to the top token's) is below
  // it: weight 0, and the bound moves to the last one kept, as the host's keep_at_least.
  const bool min_p = p.min_p > 0.0;
  uint32_t kept_k = 0xffffffffu;
  int kept_i = -1;
  u64 local = 0;
  for (int i = static_cast<int>(threadIdx.x); i < vocab; i += kThreads) {
    const double weight = exp((static_cast<double>(l[i]) - static_cast<double>(mx)) / p.temperature);
    if (min_p) {
      if (weight < p.min_p) {
        w[i] = 0;
        continue;
      }
      const uint32_t k = order_key(l[i]);
      if (k < kept_k || (k == kept_k && i > kept_i)) {
        kept_k = k;
        kept_i = i;
      }
    }
    w[i] = __double2ull_rn(weight * scale);
    local += w[i];
  }
  __syncthreads();

  // Targets in fixed point: cum >= t holds for an integer cum exactly when cum >= ceil(t), and
  // cum > t exactly when cum > floor(t).
  Pos bound{last_k, last_i};
  if (min_p) bound = block_last(s, Pos{kept_k, kept_i});
  u64 mass = 0;
  bool counted = false;
  if (p.top_k > 0 && p.top_k < vocab64) {
    const Found f = select(s, l, w, vocab, bound, Reach::kCountAtLeast,
                           static_cast<u64>(p.top_k));
    if (f.found) {  // not found: min_p left fewer than top_k
      bound = f.pos;
      mass = f.cum_w;
      counted = true;
    }
  }
  if (!counted) mass = block_sum(s, local);
  if (p.top_p < 1.0) {
    const u64 target = static_cast<u64>(ceil(p.top_p * static_cast<double>(mass)));
    const Found f = select(s, l, w, vocab, bound, Reach::kWeightAtLeast, target);
    if (f.found) {
      bound = f.pos;
      mass = f.cum_w;
    }
  }
  const u64 draw = static_cast<u64>(floor(p.u * static_cast<double>(mass)));
  const Found f = select(s, l, w, vocab, bound, Reach::kWeightAbove, draw);
  if (threadIdx.x == 0) out[blockIdx.x] = f.found ? f.pos.idx : bound.idx;
}

}  // namespace

cudaError_t launch_sample(const float* logits, int64_t vocab, const SampleRow* rows, int num_rows,
                          uint64_t* weights, int32_t* out, cudaStream_t stream) {
  if (vocab < 1 || vocab > (int64_t{1} << 30)) return cudaErrorInvalidValue;
  // Weights <= 1 in units of 2^-shift, with a whole row's sum below 2^63.
  int bits = 0;
  while ((int64_t{1} << bits) < vocab) ++bits;
  const double scale = std::ldexp(1.0, 62 - bits);
  if (num_rows > 0) {
    sample_kernel<<<num_rows, kThreads, 0, stream>>>(
        logits, vocab, rows, reinterpret_cast<unsigned long long*>(weights), scale, out);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
