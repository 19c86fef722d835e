// Logprobs on the GPU for the rows that ask: one block per row reduces the row's max and
// log-sum-exp, then finds the top entries one pass each (k <= 20 passes over a row that stays in
// L2), each pass the best entry ranked after the previous one. The ordering (value descending,
// lower id first) and the arithmetic (exp in double) are those of src/exec/logprobs.cpp.
#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

// (v, i) ranks before (w, j): larger value, or equal value and lower id. NaN ranks last.
__device__ __forceinline__ bool before(float v, int i, float w, int j) {
  if (v != v) return false;
  if (w != w) return true;
  return v > w || (v == w && i < j);
}

// The best (value, id) of the block; every thread gets it.
__device__ void block_best(float& v, int& i, float* sv, int* si) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (before(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0) {
    sv[warp] = v;
    si[warp] = i;
  }
  __syncthreads();
  v = sv[0];
  i = si[0];
  for (int w = 1; w < kWarps; ++w) {
    if (before(sv[w], si[w], v, i)) {
      v = sv[w];
      i = si[w];
    }
  }
}

__global__ void logprobs_kernel(const float* logits, int64_t vocab, const LogprobRow* rows,
                                const int32_t* greedy, const int32_t* sampled_tokens,
                                LogprobResult* out) {
  const LogprobRow r = rows[blockIdx.x];
  const float* row = logits + static_cast<int64_t>(r.row) * vocab;
  __shared__ float sv[kWarps];
  __shared__ int si[kWarps];
  __shared__ double ssum[kWarps];

  float best_v = NAN;
  int best_i = static_cast<int>(vocab);
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    if (before(row[i], static_cast<int>(i), best_v, best_i)) {
      best_v = row[i];
      best_i = static_cast<int>(i);
    }
  }
  block_best(best_v, best_i, sv, si);
  const double max = best_v;

  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) sum += exp(static_cast<double>(row[i]) - max);
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x % 32 == 0) ssum[threadIdx.x / 32] = sum;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kWarps; ++w) total += ssum[w];
  const double lse = max + log(total);

  LogprobResult& o = out[blockIdx.x];
  if (threadIdx.x == 0) {
    const int32_t chosen = r.sampled < 0 ? greedy[r.row] : sampled_tokens[r.sampled];
    o.token = chosen;
    o.logprob = static_cast<float>(static_cast<double>(row[chosen]) - lse);
  }
  // Pass k: the best entry ranked after pass k-1's.
  float prev_v = INFINITY;
  int prev_i = -1;
  const int k = min(r.num_top, kMaxGpuTopLogprobs);
  for (int pass = 0; pass < k; ++pass) {
    float v = NAN;
    int i = static_cast<int>(vocab);
    for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
      const float x = row[j];
      const int id = static_cast<int>(j);
      if (before(prev_v, prev_i, x, id) && before(x, id, v, i)) {
        v = x;
        i = id;
      }
    }
    block_best(v, i, sv, si);
    if (i >= vocab) break;  // fewer tokens than asked for (or the rest NaN)
    if (threadIdx.x == 0) {
      o.top_tokens[pass] = i;
      o.top_logprobs[pass] = static_cast<float>(static_cast<double>(v) - lse);
    }
    prev_v = v;
    prev_i = i;
  }
}

}  // namespace

cudaError_t launch_logprobs(const float* logits, int64_t vocab, const LogprobRow* rows,
                            int num_rows, const int32_t* greedy, const int32_t* sampled_tokens,
                            LogprobResult* out, cudaStream_t stream) {
  if (num_rows > 0) {
    logprobs_kernel<<<num_rows, kThreads, 0, stream>>>(logits, vocab, rows, greedy,
                                                       sampled_tokens, out);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
