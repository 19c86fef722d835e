// SwiGLU: silu(gate) * up, float32 in, bf16 out (the input of the down projection).
//
// Elementwise, so how the elements are split among threads leaves the bits alone: rows whose
// width is a multiple of 4 go four elements a thread (16-byte loads of gate and up, one 8-byte
// store), the others one.
#include <algorithm>

#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"
#include "exec/cuda/programmatic_launch.cuh"
#include "exec/cuda/swiglu.cuh"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 256;

// Where element i of a row's gate lies in the row's gate_up: [gate | up] halves (TURN 0), or
// turns of TURN gate then TURN up columns (a power of two and a multiple of 4). Its up lies
// TURN on (or width on, in halves).
template <int64_t TURN>
__device__ __forceinline__ int64_t gate_at(int64_t i) {
  return TURN == 0 ? i : (i / TURN) * 2 * TURN + i % TURN;
}

// Rows in the grid's first dimension (2^31 - 1 of them; the second holds only 65,535, fewer than
// a 128k-token prefill chunk has), the width in the second.
template <int64_t TURN>
__global__ void swiglu_kernel(const float* gate_up, int64_t width, bf16* out) {
  allow_dependent_launch();  // the down projection may fetch its weights meanwhile
  wait_for_prerequisites();  // gate_up is the kernel ahead's (programmatic_launch.cuh)
  const int64_t row = blockIdx.x;
  const float* gate = gate_up + row * 2 * width;
  const int64_t up = TURN == 0 ? width : TURN;
  for (int64_t i = blockIdx.y * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const int64_t at = gate_at<TURN>(i);
    out[row * width + i] = __float2bfloat16(silu_times(gate[at], gate[at + up]));
  }
}

// width % 4 == 0: element groups of four.
template <int64_t TURN>
__global__ void swiglu4_kernel(const float* gate_up, int64_t width, bf16* out) {
  allow_dependent_launch();
  wait_for_prerequisites();
  const int64_t row = blockIdx.x;
  const float* gate = gate_up + row * 2 * width;
  const int64_t up = TURN == 0 ? width : TURN;
  auto* o = reinterpret_cast<uint2*>(out + row * width);
  const int64_t groups = width / 4;
  for (int64_t i = blockIdx.y * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < groups;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const int64_t at = gate_at<TURN>(4 * i);
    const float4 g = *reinterpret_cast<const float4*>(gate + at);
    const float4 u = *reinterpret_cast<const float4*>(gate + at + up);
    const __nv_bfloat162 lo = __floats2bfloat162_rn(silu_times(g.x, u.x), silu_times(g.y, u.y));
    const __nv_bfloat162 hi = __floats2bfloat162_rn(silu_times(g.z, u.z), silu_times(g.w, u.w));
    uint2 packed;
    packed.x = *reinterpret_cast<const uint32_t*>(&lo);
    packed.y = *reinterpret_cast<const uint32_t*>(&hi);
    o[i] = packed;
  }
}

}  // namespace

cudaError_t launch_swiglu(const float* gate_up, int64_t width, int rows, bf16* out,
                          cudaStream_t stream, int64_t turn) {
  if ((turn != 0 && turn != kSwigluTurn) || (turn != 0 && width % turn != 0)) {
    return cudaErrorInvalidValue;
  }
  if (rows <= 0) return cudaGetLastError();
  const auto aligned = [](const void* p, size_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; };
  const bool turns = turn != 0;
  if (width % 4 == 0 && aligned(gate_up, 16) && aligned(out, 8)) {
    const int64_t groups = width / 4;
    const int blocks_y = static_cast<int>(std::min<int64_t>(65535, (groups + kThreads - 1) / kThreads));
    return launch_after_previous(ChainedKernel::kSwiglu,
                                 turns ? swiglu4_kernel<kSwigluTurn> : swiglu4_kernel<0>,
                                 dim3(rows, blocks_y), dim3(kThreads), 0, stream, gate_up, width,
                                 out);
  }
  const int blocks_y = static_cast<int>(std::min<int64_t>(65535, (width + 1023) / 1024));
  return launch_after_previous(ChainedKernel::kSwiglu,
                               turns ? swiglu_kernel<kSwigluTurn> : swiglu_kernel<0>,
                               dim3(rows, blocks_y), dim3(kThreads), 0, stream, gate_up, width, out);
}

}  // namespace paceline::cuda
