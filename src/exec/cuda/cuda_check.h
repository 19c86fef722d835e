#pragma once
// Every CUDA and cuBLAS call goes through these: a failure throws paceline::Error naming the
// call, the file and line, and the library's own error string, instead of computing garbage.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "base/error.h"

namespace paceline::cuda {

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) {
    fail("CUDA error {} ({}) at {}:{} in {}", cudaGetErrorName(status),
         cudaGetErrorString(status), file, line, call);
  }
}

inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    fail("cuBLAS error {} at {}:{} in {}", cublasGetStatusString(status), file, line, call);
  }
}

}  // namespace paceline::cuda

#define PACELINE_CUDA_CHECK(call) ::paceline::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define PACELINE_CUBLAS_CHECK(call) \
  ::paceline::cuda::check_cublas((call), #call, __FILE__, __LINE__)
