#include "exec/cuda/device_buffer.h"

#include "exec/cuda/cuda_check.h"

namespace paceline::cuda {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) PACELINE_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);  // no throw from a destructor; errors surface elsewhere
}

bool DeviceBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return false;
  DeviceBuffer fresh(bytes);
  swap(fresh);
  return true;
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_ != nullptr) cudaFreeHost(ptr_);
}

void PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return;
  if (ptr_ != nullptr) PACELINE_CUDA_CHECK(cudaFreeHost(ptr_));
  ptr_ = nullptr;
  PACELINE_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
  bytes_ = bytes;
}

}  // namespace paceline::cuda
