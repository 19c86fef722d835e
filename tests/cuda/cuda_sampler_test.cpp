// Sampling on the GPU draws exactly the token the host's sample_token draws from the same float32
// logits, seed and position, for every combination of temperature, top-k and top-p, on flat,
// peaked and heavily tied rows of a Qwen3-sized vocabulary; and the CUDA executor's sampled
// tokens are those of sample_token on its own logits. With PACELINE_SAMPLE_BENCH=1 the kernel is
// timed at 1, 16 and 64 rows: the default cluster size, the fewest waves' choice, and 8, 4 and 2.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "exec/sampler.h"

#if PACELINE_HAVE_CUDA
#include "../cpu_forward/test_model.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/kernels.h"
#include "logit_rows.h"
#include "sample_on_gpu.h"

namespace paceline {
namespace {

using cuda::SampleRow;

constexpr int64_t kVocab = 151936;

std::vector<float> make_logit_rows() { return testing::make_logit_rows(11); }

TEST(CudaSampler, DrawsWhatTheHostSamplerDraws) {
  PACELINE_REQUIRE_GPU();
  const std::vector<float> logits = make_logit_rows();
  const int num_kinds = static_cast<int>(logits.size() / kVocab);
  std::vector<SampleRow> rows;
  std::vector<int32_t> expected;
  int64_t position = 0;
  for (int kind = 0; kind < num_kinds; ++kind) {
    for (double temperature : {0.6, 1.0, 1.7}) {
      for (int64_t top_k : {-1L, 2L, 50L, 5000L}) {
        for (double top_p : {1.0, 0.95, 0.5, 0.05}) {
          for (int draw = 0; draw < 3; ++draw, ++position) {
            SamplingParams params;
            params.temperature = temperature;
            params.top_k = top_k;
            params.top_p = top_p;
            testing::add_draw(rows, expected, logits, kVocab, kind, params,
                              1000 + static_cast<uint64_t>(kind), position);
          }
        }
      }
    }
  }
  testing::expect_host_draws_at_every_cluster_size(logits, kVocab, rows, expected);
}

TEST(CudaSampler, DrawsWhatTheHostDrawsFromCrowdedBuckets) {
  // Rows where thousands of distinct logits share one bucket of the sampler's histogram (too many
  // to sort, so they are resolved by radix passes), next to a sparse head and a far tail.
  PACELINE_REQUIRE_GPU();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> narrow(0.0f, 1e-3f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> logits;
  for (int kind = 0; kind < 2; ++kind) {
    for (int64_t i = 0; i < kVocab; ++i) {
      float v = normal(rng) - 40.0f;                 // the far tail: the last bucket
      if (i % 7 == 0) v = 5.0f + narrow(rng);        // 21,706 candidates within 1e-3
      if (kind == 1 && i % 1000 == 1) v = 8.0f + normal(rng);  // a sparse head above them
      logits.push_back(v);
    }
  }
  std::vector<SampleRow> rows;
  std::vector<int32_t> expected;
  int64_t position = 0;
  for (int kind = 0; kind < 2; ++kind) {
    for (double temperature : {0.7, 1.0}) {
      for (int64_t top_k : {-1L, 50L, 5000L}) {
        for (double top_p : {1.0, 0.95, 0.3}) {
          for (int draw = 0; draw < 2; ++draw, ++position) {
            SamplingParams params;
            params.temperature = temperature;
            params.top_k = top_k;
            params.top_p = top_p;
            testing::add_draw(rows, expected, logits, kVocab, kind, params, 77, position);
          }
        }
      }
    }
  }
  testing::expect_host_draws_at_every_cluster_size(logits, kVocab, rows, expected);
}

// The fewest waves' choice of cluster size (the default; PACELINE_SAMPLE_CLUSTER fixes a size
// instead): the fewest waves of clusters on this device, and of those the most blocks a row (the
// tokens are the same at every size: the tests above).
TEST(CudaSampler, ClusterSizeTakesTheFewestWavesThenTheMostBlocks) {
  PACELINE_REQUIRE_GPU();
  auto waves = [](int rows, int c) {
    const int room = cuda::sample_cluster_room(c);
    return room < 1 ? 1 << 30 : (rows + room - 1) / room;
  };
  std::printf("[ sample clusters ] room for clusters of 8 / 4 / 2: %d / %d / %d\n",
              cuda::sample_cluster_room(8), cuda::sample_cluster_room(4),
              cuda::sample_cluster_room(2));
  for (int rows : {1, 16, 32, 64, 128, 256}) {
    const int c = cuda::sample_cluster_fewest_waves(rows);
    ASSERT_TRUE(c == 2 || c == 4 || c == 8) << rows << " rows: " << c;
    for (int other : {8, 4, 2}) {
      EXPECT_LE(waves(rows, c), waves(rows, other))
          << rows << " rows: " << c << " against " << other;
      if (other > c) {
        EXPECT_LT(waves(rows, c), waves(rows, other))
            << rows << " rows: " << other << " was as good";
      }
    }
    std::printf("[ sample clusters ] %d rows: clusters of %d\n", rows, c);
  }
  EXPECT_EQ(cuda::sample_cluster_fewest_waves(1), 8);
}

TEST(CudaSampler, ExecutorSamplesAsTheHostSamplerOnItsLogits) {
  PACELINE_REQUIRE_GPU();
  const ModelConfig config = testing::tiny_config();
  testing::TestWeights weights(config, 5);
  CudaExecutor gpu(config, weights, testing::small_executor_options(config, 256));
  StepPlan plan;
  plan.seqs.push_back(testing::make_seq(1, {1, 2, 3, 4, 5}, 0, {0}, 1));
  plan.seqs.push_back(testing::make_seq(2, {7, 8, 9}, 0, {1}, 3));  // several logit rows
  plan.seqs.push_back(testing::make_seq(3, {11, 12}, 0, {2}, 1));
  plan.seqs[0].sampling.temperature = 0.8;
  plan.seqs[0].seed = 42;
  plan.seqs[1].sampling.temperature = 1.3;
  plan.seqs[1].sampling.top_p = 0.9;
  plan.seqs[1].seed = 43;
  plan.seqs[2].sampling.temperature = 0.0;  // greedy rows keep the GPU argmax
  const StepResult r = gpu.execute(plan);
  const std::vector<float> logits = gpu.last_logits();
  const int64_t vocab = config.vocab_size;
  ASSERT_EQ(logits.size(), static_cast<size_t>(5 * vocab));
  int row = 0;
  for (size_t s = 0; s < plan.seqs.size(); ++s) {
    const ScheduledSeq& seq = plan.seqs[s];
    ASSERT_EQ(r.seqs[s].tokens.size(), static_cast<size_t>(seq.num_logits));
    const int64_t first = seq.start_pos + static_cast<int64_t>(seq.tokens.size()) - seq.num_logits;
    for (int i = 0; i < seq.num_logits; ++i, ++row) {
      std::span<const float> l(logits.data() + row * vocab, static_cast<size_t>(vocab));
      EXPECT_EQ(r.seqs[s].tokens[i], sample_token(l, seq.sampling, seq.seed, first + i))
          << "sequence " << s << ", logit row " << i;
    }
  }
}

TEST(CudaSampler, MoreRowsThanOneLaunchTakesAreAllSampled) {
  // 300 logit rows of one sequence (a verify-like step): the executor samples them in launches
  // of at most 256 rows through one scratch buffer.
  PACELINE_REQUIRE_GPU();
  const ModelConfig config = testing::tiny_config();
  testing::TestWeights weights(config, 7);
  CudaExecutor gpu(config, weights, testing::small_executor_options(config, 512));
  std::vector<int32_t> tokens(300), blocks(19);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(1 + i % 90);  // the tiny vocabulary has 97
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<int32_t>(i);
  StepPlan plan;
  plan.seqs.push_back(testing::make_seq(1, tokens, 0, blocks, 300));
  plan.seqs[0].sampling.temperature = 1.1;
  plan.seqs[0].sampling.top_k = 40;
  plan.seqs[0].seed = 99;
  const StepResult r = gpu.execute(plan);
  const std::vector<float> logits = gpu.last_logits();
  const int64_t vocab = config.vocab_size;
  ASSERT_EQ(r.seqs.size(), 1u);
  ASSERT_EQ(r.seqs[0].tokens.size(), 300u);
  ASSERT_EQ(logits.size(), static_cast<size_t>(300 * vocab));
  int mismatches = 0;
  for (int i = 0; i < 300; ++i) {
    std::span<const float> l(logits.data() + i * vocab, static_cast<size_t>(vocab));
    if (r.seqs[0].tokens[i] != sample_token(l, plan.seqs[0].sampling, 99, i)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0) << "of 300 rows";
}


TEST(CudaSampler, Bench) {
  PACELINE_REQUIRE_GPU();
  if (std::getenv("PACELINE_SAMPLE_BENCH") == nullptr) {
    GTEST_SKIP() << "set PACELINE_SAMPLE_BENCH=1 to time the sampler";
  }
  using cuda::DeviceBuffer;
  const std::vector<float> kinds = make_logit_rows();  // flat, peaked, bf16, few values
  constexpr int kMaxRows = 64;
  struct Case {
    const char* name;
    int kind;
    int64_t top_k;
    double top_p;
  };
  for (const Case c : {Case{"flat, top-p 0.95", 0, -1, 0.95}, Case{"peaked, top-p 0.95", 1, -1, 0.95},
                       Case{"flat, top-k 50, top-p 0.95", 0, 50, 0.95}, Case{"flat, T only", 0, -1, 1.0}}) {
    std::vector<float> logits;
    for (int r = 0; r < kMaxRows; ++r) {
      logits.insert(logits.end(), kinds.begin() + c.kind * kVocab, kinds.begin() + (c.kind + 1) * kVocab);
    }
    DeviceBuffer d_logits(logits.size() * sizeof(float));
    PACELINE_CUDA_CHECK(cudaMemcpy(d_logits.as<float>(), logits.data(),
                                   logits.size() * sizeof(float), cudaMemcpyHostToDevice));
    DeviceBuffer d_rows(kMaxRows * sizeof(SampleRow)), d_out(kMaxRows * sizeof(int32_t));
    std::vector<SampleRow> rows(kMaxRows);
    for (int r = 0; r < kMaxRows; ++r) {
      rows[r].temperature = 1.0;
      rows[r].top_p = c.top_p;
      rows[r].top_k = c.top_k;
      rows[r].u = sample_uniform(7, r);
      rows[r].row = r;
    }
    PACELINE_CUDA_CHECK(cudaMemcpy(d_rows.as<SampleRow>(), rows.data(), rows.size() * sizeof(SampleRow),
                                   cudaMemcpyHostToDevice));
    cudaEvent_t a, b;
    PACELINE_CUDA_CHECK(cudaEventCreate(&a));
    PACELINE_CUDA_CHECK(cudaEventCreate(&b));
    for (int n : {1, 16, 64})
      for (int choice : {0, -1, 8, 4, 2}) {
        // 0: the launch's default, -1: the fewest waves' choice, else that size.
        const int cluster = choice < 0 ? cuda::sample_cluster_fewest_waves(n) : choice;
        std::vector<float> ms;
        for (int i = 0; i < 12; ++i) {
          PACELINE_CUDA_CHECK(cudaEventRecord(a));
          PACELINE_CUDA_CHECK(cuda::launch_sample(d_logits.as<float>(), kVocab,
                                                  d_rows.as<SampleRow>(), n, d_out.as<int32_t>(),
                                                  nullptr, cluster));
          PACELINE_CUDA_CHECK(cudaEventRecord(b));
          PACELINE_CUDA_CHECK(cudaEventSynchronize(b));
          float m = 0;
          PACELINE_CUDA_CHECK(cudaEventElapsedTime(&m, a, b));
          if (i > 1) ms.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        std::printf(
            "[ sample bench ] %s, %d rows of %lld, clusters of %d%s: %.3f ms (median of %zu)\n",
            c.name, n, static_cast<long long>(kVocab),
            cluster != 0 ? cluster : cuda::sample_cluster_size(n),
            choice == 0  ? " (default)"
            : choice < 0 ? " (fewest waves)"
                         : "",
            ms[ms.size() / 2], ms.size());
      }
    PACELINE_CUDA_CHECK(cudaEventDestroy(a));
    PACELINE_CUDA_CHECK(cudaEventDestroy(b));
  }
}

}  // namespace
}  // namespace paceline
#endif
