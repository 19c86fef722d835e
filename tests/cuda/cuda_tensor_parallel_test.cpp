// Tensor-parallel ranks of the CUDA forward, run on one GPU (docs/tensor-parallel.md): two ranks,
// each a thread with its own stream, weight slices, KV cache and activations, joined by
// collectives that sum and gather through the host in rank order (NCCL refuses two ranks on one
// device; what is checked here is the forward's split, not NCCL). On the tiny Qwen3 fixtures:
// both ranks end a step with the same logits, bit for bit; those logits are Hugging Face's within
// bf16's tolerance, as the one-rank model's are; and greedy decoding gives HF's continuations,
// model by model and through a CudaExecutor of two ranks (rank 0 on the caller's thread, rank 1
// on its worker).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../cpu_forward/hf_fixture.h"
#include "../cpu_forward/test_model.h"
#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include <cuda_runtime.h>

#include "exec/cuda/activations.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/cuda_model.h"
#include "exec/cuda/same_device_collectives.h"
#include "exec/cuda/step_inputs.h"
#include "model/config.h"
#include "model/tensor_parallel_shape.h"
#include "model/weights.h"
#include "sched/cudagraph_sizes.h"

namespace paceline {
namespace {

namespace fs = std::filesystem;
using testing::BlockPool;

constexpr int64_t kBlockSize = 16;

// One rank: its stream, model, KV cache, inputs and activations.
struct RankForward {
  RankForward(const ModelConfig& config, const Weights& weights, const TensorParallelShape& tp,
              int rank, cuda::RankCollectives* collectives, int64_t num_blocks) {
    PACELINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    model = std::make_unique<cuda::CudaModel>(config, weights, stream, tp, rank, collectives);
    model->allocate_kv_cache(KvCacheShape{num_blocks, kBlockSize});
    limits.vocab_size = config.vocab_size;
    limits.num_blocks = num_blocks;
    limits.block_size = kBlockSize;
    limits.prefill_tile_rows = cuda::prefill_tile_rows(model->attention_shape());
  }
  ~RankForward() {
    model.reset();
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  // Runs the plan; returns its logit rows and keeps its greedy tokens in `tokens`.
  std::vector<float> run(const StepPlan& plan) {
    const cuda::HostStep h = cuda::host_step_from_plan(plan, limits);
    const int logits = static_cast<int>(h.logit_rows.size());
    acts.reserve(model->rank_config(), h.rows(), static_cast<int64_t>(h.decode_rows.size()),
                 std::max(1, logits), model->decode_splits().max_splits,
                 model->tensor_parallel().world);
    inputs.upload(h, stream);
    model->forward({h.rows(), logits, static_cast<int>(h.decode_rows.size()), h.num_tiles()},
                   inputs, acts);
    PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    const int64_t vocab = model->config().vocab_size;
    std::vector<float> out(static_cast<size_t>(logits * vocab));
    PACELINE_CUDA_CHECK(cudaMemcpy(out.data(), acts.logits.as<float>(), out.size() * sizeof(float),
                                   cudaMemcpyDeviceToHost));
    tokens.assign(static_cast<size_t>(logits), 0);
    PACELINE_CUDA_CHECK(cudaMemcpy(tokens.data(), acts.sampled.as<int32_t>(),
                                   tokens.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    return out;
  }

  cudaStream_t stream = nullptr;
  std::unique_ptr<cuda::CudaModel> model;
  cuda::StepLimits limits;
  cuda::StepBuffers inputs;
  cuda::Activations acts;
  std::vector<int32_t> tokens;
};

// `world` ranks of one model on device 0; each step runs every rank in a thread of its own.
class Ranks {
 public:
  Ranks(const ModelConfig& config, const Weights& weights, int world, int64_t num_blocks)
      : collectives_(world) {
    const TensorParallelShape tp = tensor_parallel_shape(config, world);
    for (int r = 0; r < world; ++r) {
      ranks_.push_back(std::make_unique<RankForward>(
          config, weights, tp, r, world > 1 ? collectives_.rank(r) : nullptr, num_blocks));
    }
  }
  // Every rank's logits for the plan.
  std::vector<std::vector<float>> run(const StepPlan& plan) {
    std::vector<std::vector<float>> out(ranks_.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      threads.emplace_back([&, r] { out[r] = ranks_[r]->run(plan); });
    }
    for (std::thread& t : threads) t.join();
    return out;
  }
  const std::vector<int32_t>& tokens() const { return ranks_[0]->tokens; }

 private:
  cuda::SameDeviceCollectives collectives_;  // eager calls: through the host
  std::vector<std::unique_ptr<RankForward>> ranks_;
};

class CudaTensorParallel : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    PACELINE_REQUIRE_GPU();
    const fs::path folder = fs::path(testing::source_dir()) / "tests/fixtures/models" / GetParam();
    ASSERT_TRUE(testing::HfFixture::exists(folder)) << "no fixture at " << folder;
    hf_ = std::make_unique<testing::HfFixture>(folder);
    num_blocks_ = hf_->num_blocks(kBlockSize);
  }

  const ModelConfig& config() const { return hf_->config; }

  std::unique_ptr<testing::HfFixture> hf_;
  int64_t num_blocks_ = 0;
};

TEST_P(CudaTensorParallel, TwoRanksOnOneGpuGiveHfsLogitsOnBothRanks) {
  BlockPool pool(num_blocks_);
  std::vector<int64_t> firsts;
  const StepPlan plan = hf_->ragged_prefill(pool, kBlockSize, firsts);
  Ranks one(config(), *hf_->weights, 1, num_blocks_);
  const std::vector<float> alone = one.run(plan)[0];
  Ranks two(config(), *hf_->weights, 2, num_blocks_);
  const std::vector<std::vector<float>> split = two.run(plan);
  ASSERT_EQ(split[0].size(), alone.size());
  EXPECT_EQ(split[0], split[1]) << "the ranks' gathered logits differ";
  const int64_t vocab = config().vocab_size;
  const double vs_one = testing::worst_relative_error(split[0], alone, vocab);
  double vs_hf = 0.0;
  int64_t row = 0;
  for (size_t i = 0; i < hf_->prompts.size(); ++i) {
    const testing::HfPrompt& p = hf_->prompts[i];
    const int64_t rows = plan.seqs[i].num_logits;
    const std::vector<float> mine = testing::logit_rows(split[0], vocab, row, rows);
    const double e = testing::worst_relative_error(hf_->pick_rows(p, mine, firsts[i]),
                                                   hf_->hf_rows(p, firsts[i]), vocab);
    EXPECT_LE(e, testing::kBf16Tolerance) << p.name;
    vs_hf = std::max(vs_hf, e);
    row += rows;
  }
  std::cout << "[ tensor parallel ] " << GetParam() << " 2 ranks, ragged prefill: relative error "
            << "vs HF " << vs_hf << ", vs 1 rank " << vs_one << "\n";
  EXPECT_LE(vs_one, testing::kBf16Tolerance);
}

TEST_P(CudaTensorParallel, TwoRanksOnOneGpuDecodeHfsGreedyContinuations) {
  Ranks two(config(), *hf_->weights, 2, num_blocks_);
  BlockPool pool(num_blocks_, 7);
  int step = 0;
  hf_->expect_greedy_continuations(pool, kBlockSize, [&](StepPlan& plan) {
    const std::vector<std::vector<float>> logits = two.run(plan);
    EXPECT_EQ(logits[0], logits[1]) << "step " << step++;
    return two.tokens();
  });
}

// Options for an executor of two ranks on device 0, joined by `collectives`, with CUDA graphs of
// `graph_sizes` (none: eager).
CudaExecutorOptions two_rank_options(const ModelConfig& config, int64_t num_blocks,
                                     std::function<cuda::RankCollectives*(int)> collectives,
                                     std::vector<int32_t> graph_sizes) {
  CudaExecutorOptions o;
  o.block_size = kBlockSize;
  const ModelConfig rank_config = rank_model_config(config, tensor_parallel_shape(config, 2));
  o.kv_cache_bytes = num_blocks * kBlockSize * rank_config.kv_bytes_per_token(2);
  o.max_num_batched_tokens = 4096;
  o.cudagraph_sizes = std::move(graph_sizes);
  o.tensor_parallel_size = 2;
  o.devices = {0, 0};
  o.rank_collectives = std::move(collectives);
  return o;
}

TEST_P(CudaTensorParallel, AnExecutorOfTwoRanksOnOneGpuDecodesHfsGreedyContinuations) {
  cuda::SameDeviceCollectives joins(2);
  CudaExecutor gpu(config(), *hf_->weights,
                   two_rank_options(config(), num_blocks_, [&](int r) { return joins.rank(r); },
                                    {}));
  EXPECT_TRUE(gpu.graph_sizes().empty());
  ASSERT_EQ(gpu.kv_cache_shape().num_blocks, num_blocks_);
  BlockPool pool(num_blocks_, 11);
  hf_->expect_greedy_continuations(pool, kBlockSize, [&](StepPlan& plan) {
    const StepResult r = gpu.execute(plan);
    EXPECT_FALSE(gpu.last_step_used_graph());
    std::vector<int32_t> tokens;
    for (const auto& seq : r.seqs) tokens.push_back(seq.tokens.at(0));
    return tokens;
  });
}

// The ranks' CUDA graphs: each rank captures its decode forward with its collectives (kernels
// that meet on the device, capturable) and every decode step replays them on both ranks. The
// continuations are HF's, and each step's logits are those of the same executor run eagerly
// over the same collectives, bit for bit.
TEST_P(CudaTensorParallel, AnExecutorOfTwoRanksReplaysTheirGraphsForEveryDecodeStep) {
  const std::vector<int32_t> sizes = default_cudagraph_capture_sizes(16);  // every prompt at once
  cuda::SameDeviceCollectives graph_joins(2), eager_joins(2);
  CudaExecutor graphs(config(), *hf_->weights,
                      two_rank_options(config(), num_blocks_,
                                       [&](int r) { return graph_joins.rank(r); }, sizes));
  CudaExecutor eager(config(), *hf_->weights,
                     two_rank_options(config(), num_blocks_,
                                      [&](int r) { return eager_joins.rank(r); }, {}));
  EXPECT_EQ(graphs.graph_sizes(), sizes);
  BlockPool pool(num_blocks_, 13);
  int steps = 0, graph_steps = 0;
  hf_->expect_greedy_continuations(pool, kBlockSize, [&](StepPlan& plan) {
    StepPlan same = plan;  // the eager executor's copy, without a graph size
    if (plan.kind == ForwardKind::kDecode) {
      plan.padded_batch_size = padded_batch_size(sizes, static_cast<int32_t>(plan.seqs.size()));
    }
    const StepResult r = graphs.execute(plan);
    ++steps;
    graph_steps += graphs.last_step_used_graph() ? 1 : 0;
    eager.execute(same);
    EXPECT_EQ(graphs.last_logits(), eager.last_logits()) << "step " << steps;
    std::vector<int32_t> tokens;
    for (const auto& seq : r.seqs) tokens.push_back(seq.tokens.at(0));
    return tokens;
  });
  EXPECT_GT(steps, 1);
  EXPECT_EQ(graph_steps, steps - 1);  // every step but the prefill
}

// Llama's tiny fixture has one KV head: it does not split over two ranks.
INSTANTIATE_TEST_SUITE_P(Fixtures, CudaTensorParallel,
                         ::testing::Values("qwen3-tiny-random", "qwen3-yarn-tiny-random"));

}  // namespace
}  // namespace paceline

#else
TEST(CudaTensorParallel, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
