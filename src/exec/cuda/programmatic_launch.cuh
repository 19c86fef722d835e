#pragma once
// Programmatic dependent launch of a whole step (nvcc only; device_utils.cuh has the two device
// calls). A kernel launched with launch_after_previous may start before the kernel ahead of it
// in the stream ends, once every block of that one has called allow_dependent_launch() (or
// ended): it loads what does not depend on that kernel (weights, the step's positions, slots and
// block tables, uploaded before the step's first kernel), then waits in
// wait_for_prerequisites() until that kernel has ended and its writes are visible, and only then
// reads its outputs or writes anything. At least one thread of every block of such a kernel
// must call wait_for_prerequisites() (any thread that reads or writes global memory after its
// prefetch must): a grid in which no thread waited could end before the kernel ahead of it, and
// the kernel after it, which only waits for its own predecessor, would read unfinished outputs.
//
// The small-M GEMM has always been launched this way (PACELINE_PDL=0: ordinary launches). The
// kernels between the GEMMs of a decode step are launched this way when PACELINE_PDL_CHAIN
// names them (and PACELINE_PDL is not 0): a comma-separated list of norm, qk, decode, merge,
// swiglu and argmax, 1 for all of them, 0 for none; unset, the norms, QK-norm + RoPE, the decode
// merge, SwiGLU and argmax (programmatic_chain.h). On the H200 that set made no step slower
// (decode batch 1 at 1k and at 32k 5% faster); with the decode attention as well, batch 64 at
// 1k and the 32k steps were 4-9% slower (docs/performance.md, sessions 18 to 20). Either way the
// arithmetic, and so every bit, is the same.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "exec/cuda/programmatic_chain.h"

namespace paceline::cuda {

// PACELINE_PDL=0 switches programmatic launches off everywhere.
inline bool programmatic_launch() {
  static const bool on = [] {
    const char* v = std::getenv("PACELINE_PDL");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

// Whether `kernel` is launched programmatically after the kernel ahead of it.
inline bool programmatic_chain(ChainedKernel kernel) {
  static const char* value = std::getenv("PACELINE_PDL_CHAIN");
  return programmatic_launch() && chain_names(value, kernel);
}

// kernel<<<grid, block, smem, stream>>>(args...), launched programmatically after the kernel
// ahead of it when programmatic_chain(which) says so.
template <typename... Params, typename... Args>
cudaError_t launch_after_previous(ChainedKernel which, void (*kernel)(Params...), dim3 grid,
                                  dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = programmatic_chain(which) ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

}  // namespace paceline::cuda
