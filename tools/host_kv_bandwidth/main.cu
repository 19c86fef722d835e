// Host<->GPU copy bandwidth as the host KV tier uses it: pinned host memory, cudaMemcpyAsync of
// whole KV blocks (Qwen3-8B bf16, 16 tokens: 2.36 MB), one direction alone and both at once on
// two streams. Prints GB/s (1e9 bytes/s), the median of 20 repeats of 256 blocks.
//   nvcc -O2 -o host_kv_bandwidth tools/host_kv_bandwidth/main.cu && ./host_kv_bandwidth
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                              \
  do {                                                                        \
    cudaError_t e = (x);                                                      \
    if (e != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));            \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main() {
  const size_t block = 36ull * 8 * 128 * 2 * 2 * 16;  // layers x kv heads x dim x K,V x bf16 x 16
  const int blocks = 256, repeats = 20;
  const size_t bytes = block * blocks;
  void *host_a, *host_b, *dev_a, *dev_b;
  CHECK(cudaMallocHost(&host_a, bytes));
  CHECK(cudaMallocHost(&host_b, bytes));
  CHECK(cudaMalloc(&dev_a, bytes));
  CHECK(cudaMalloc(&dev_b, bytes));
  CHECK(cudaMemset(dev_a, 1, bytes));
  std::fill_n(static_cast<char*>(host_b), bytes, 2);
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  const char* names[] = {"store D2H", "load H2D", "both at once (each)"};
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<float> ms;
    for (int r = 0; r < repeats + 2; ++r) {
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaEventRecord(t0, s1));
      if (mode != 1) {
        for (int b = 0; b < blocks; ++b) {
          CHECK(cudaMemcpyAsync(static_cast<char*>(host_a) + b * block,
                                static_cast<char*>(dev_a) + b * block, block,
                                cudaMemcpyDeviceToHost, s1));
        }
      }
      if (mode != 0) {
        cudaStream_t s = mode == 2 ? s2 : s1;
        for (int b = 0; b < blocks; ++b) {
          CHECK(cudaMemcpyAsync(static_cast<char*>(dev_b) + b * block,
                                static_cast<char*>(host_b) + b * block, block,
                                cudaMemcpyHostToDevice, s));
        }
      }
      CHECK(cudaStreamSynchronize(s2));
      CHECK(cudaEventRecord(t1, s1));
      CHECK(cudaEventSynchronize(t1));
      float m = 0;
      CHECK(cudaEventElapsedTime(&m, t0, t1));
      if (r >= 2) ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    std::printf("%-22s %8.1f GB/s  (%zu blocks of %zu bytes, median of %d: %.2f ms)\n", names[mode],
                static_cast<double>(bytes) / (med * 1e-3) / 1e9, static_cast<size_t>(blocks),
                block, repeats, med);
  }
  return 0;
}
