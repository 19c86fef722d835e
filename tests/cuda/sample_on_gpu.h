#pragma once
// Shared by the GPU sampling tests: launch_sample over rows of host logits, the comparison of its
// draws with the host's, and the options of a small CUDA executor for the tiny test model.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/kernels.h"
#include "exec/sampler.h"
#include "model/config.h"

namespace paceline::testing {

// The tokens launch_sample draws for `rows` of `logits` ([rows][vocab] on the host), 64 rows per
// launch, each row on a cluster of `cluster` blocks (0: the launch's own choice).
inline std::vector<int32_t> sample_on_gpu(const std::vector<float>& logits, int64_t vocab,
                                          const std::vector<cuda::SampleRow>& rows,
                                          int cluster = 0) {
  using cuda::DeviceBuffer;
  using cuda::SampleRow;
  DeviceBuffer d_logits(logits.size() * sizeof(float));
  PACELINE_CUDA_CHECK(cudaMemcpy(d_logits.as<float>(), logits.data(), logits.size() * sizeof(float),
                                 cudaMemcpyHostToDevice));
  std::vector<int32_t> tokens;
  constexpr size_t kBatch = 64;
  DeviceBuffer d_rows(kBatch * sizeof(SampleRow));
  DeviceBuffer d_out(kBatch * sizeof(int32_t));
  for (size_t first = 0; first < rows.size(); first += kBatch) {
    const size_t n = std::min(kBatch, rows.size() - first);
    PACELINE_CUDA_CHECK(cudaMemcpy(d_rows.as<SampleRow>(), rows.data() + first,
                                   n * sizeof(SampleRow), cudaMemcpyHostToDevice));
    PACELINE_CUDA_CHECK(cuda::launch_sample(d_logits.as<float>(), vocab, d_rows.as<SampleRow>(),
                                            static_cast<int>(n), d_out.as<int32_t>(), nullptr,
                                            cluster));
    std::vector<int32_t> out(n);
    PACELINE_CUDA_CHECK(
        cudaMemcpy(out.data(), d_out.as<int32_t>(), n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    tokens.insert(tokens.end(), out.begin(), out.end());
  }
  return tokens;
}

// Adds the draw of logit row `row` with `params` at `position`: its SampleRow, and the token
// sample_token draws for it.
inline void add_draw(std::vector<cuda::SampleRow>& rows, std::vector<int32_t>& expected,
                     const std::vector<float>& logits, int64_t vocab, int row,
                     const SamplingParams& params, uint64_t seed, int64_t position) {
  cuda::SampleRow r;
  r.temperature = params.temperature;
  r.top_p = params.top_p;
  r.top_k = params.top_k;
  r.min_p = params.min_p;
  r.u = sample_uniform(seed, position);
  r.row = row;
  rows.push_back(r);
  expected.push_back(sample_token(std::span<const float>(logits.data() + row * vocab,
                                                         static_cast<size_t>(vocab)),
                                  params, seed, position));
}

// Every GPU draw equals the host's; the first ten that differ are named with their parameters.
inline void expect_same_draws(const std::vector<int32_t>& got, const std::vector<int32_t>& expected,
                              const std::vector<cuda::SampleRow>& rows) {
  ASSERT_EQ(got.size(), expected.size());
  int mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i] && ++mismatches <= 10) {
      ADD_FAILURE() << "draw " << i << " (row " << rows[i].row << ", T " << rows[i].temperature
                    << ", min_p " << rows[i].min_p << ", top_k " << rows[i].top_k << ", top_p "
                    << rows[i].top_p << ", u " << rows[i].u << "): GPU " << got[i] << ", host "
                    << expected[i];
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << got.size() << " draws";
}

// The draws of `rows` on clusters of 8, 4 and 2 blocks a row (slices of a different size, the same
// sums) each equal the host's.
inline void expect_host_draws_at_every_cluster_size(const std::vector<float>& logits, int64_t vocab,
                                                    const std::vector<cuda::SampleRow>& rows,
                                                    const std::vector<int32_t>& expected) {
  for (int cluster : {8, 4, 2}) {
    SCOPED_TRACE("clusters of " + std::to_string(cluster));
    expect_same_draws(sample_on_gpu(logits, vocab, rows, cluster), expected, rows);
  }
}

// 64 KV blocks of 16 tokens and `max_num_batched_tokens`: room for a few short sequences.
inline CudaExecutorOptions small_executor_options(const ModelConfig& config,
                                                  int64_t max_num_batched_tokens) {
  CudaExecutorOptions o;
  o.kv_cache_bytes = 64 * 16 * config.kv_bytes_per_token(2);
  o.max_num_batched_tokens = max_num_batched_tokens;
  return o;
}

}  // namespace paceline::testing
