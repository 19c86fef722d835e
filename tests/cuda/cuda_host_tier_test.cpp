// The CUDA executor's host KV tier: a prompt's blocks stored to pinned host memory, their GPU
// blocks overwritten by another prompt in the same step, then loaded back into other GPU blocks,
// must decode exactly as if the KV had never moved (the copies are byte copies of bf16 KV and
// the kernels are batch invariant), eagerly and through a CUDA graph, and over two
// tensor-parallel ranks on one GPU (each rank copies its KV heads' part of every block; their
// collectives: exec/cuda/same_device_collectives.h), eagerly and through the ranks' graphs.
// A decode over the overwritten blocks, without the load, must differ: the comparison can see a
// missing copy.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "../cpu_forward/test_model.h"
#include "base/error.h"
#include "cuda_test_util.h"
#include "exec/kv_load_faults.h"
#include "model/config.h"
#include "model/tensor_parallel_shape.h"
#include "model/weights.h"

#if PACELINE_HAVE_CUDA
#include "exec/cuda/same_device_collectives.h"

namespace paceline {
namespace {

namespace fs = std::filesystem;
using testing::make_seq;

constexpr int64_t kBlockSize = 16;
constexpr int64_t kGpuBlocks = 16;
constexpr int64_t kHostBlocks = 8;

std::vector<int32_t> tokens(int64_t n, int32_t first, int32_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = (first + 37 * static_cast<int32_t>(i)) % vocab;
  return t;
}

// Collectives for an executor of `ranks` ranks on one device; the function owns them.
std::function<cuda::RankCollectives*(int)> device_rank_collectives(int ranks) {
  auto all = std::make_shared<cuda::SameDeviceCollectives>(ranks);
  return [all](int r) { return all->rank(r); };
}

// How the executors of a test run: through CUDA graphs or eagerly, over one rank or two.
struct Mode {
  bool graphs;
  int ranks;
};

class CudaHostTier : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    PACELINE_REQUIRE_GPU();
    const fs::path folder =
        fs::path(testing::source_dir()) / "tests/fixtures/models/qwen3-tiny-random";
    config_ = model_config_load(folder.string());
    weights_ = load_safetensors_weights(folder.string(), config_);
  }

  bool graphs() const { return GetParam().graphs; }

  CudaExecutorOptions options(bool host_tier) const {
    const int ranks = GetParam().ranks;
    const ModelConfig rank_config =
        rank_model_config(config_, tensor_parallel_shape(config_, ranks));
    CudaExecutorOptions o;
    o.block_size = kBlockSize;
    o.kv_cache_bytes = kGpuBlocks * kBlockSize * rank_config.kv_bytes_per_token(2);
    o.max_num_batched_tokens = 1024;
    if (graphs()) o.cudagraph_sizes = {1, 2, 4};
    // The size summed over the ranks (vLLM's --kv-offloading-size): the whole model's blocks.
    if (host_tier) o.host_kv_bytes = kHostBlocks * kBlockSize * config_.kv_bytes_per_token(2);
    if (ranks > 1) {
      o.tensor_parallel_size = ranks;
      o.devices.assign(static_cast<size_t>(ranks), 0);
      o.rank_collectives = device_rank_collectives(ranks);
    }
    return o;
  }

  // A one-sequence decode plan of `token` at `position` over `table`.
  StepPlan decode(int32_t token, int64_t position, const std::vector<int32_t>& table) const {
    StepPlan p;
    p.kind = ForwardKind::kDecode;
    p.seqs.push_back(make_seq(1, {token}, position, table, 1));
    p.seqs.back().sampling.temperature = 0.0;
    p.padded_batch_size = graphs() ? 1 : 0;
    return p;
  }

  ModelConfig config_;
  std::unique_ptr<Weights> weights_;
};

TEST_P(CudaHostTier, StoredOverwrittenAndLoadedBlocksDecodeAsIfNeverMoved) {
  const int32_t vocab = static_cast<int32_t>(config_.vocab_size);
  const std::vector<int32_t> prompt = tokens(45, 3, vocab);  // 3 blocks, the last one partial
  const std::vector<int32_t> other = tokens(48, 11, vocab);
  const std::vector<int32_t> first_table = {0, 1, 2};
  const std::vector<int32_t> moved_table = {7, 9, 4};

  // Reference: prefill, then decode in place.
  CudaExecutor ref(config_, *weights_, options(false));
  EXPECT_EQ(ref.capabilities().num_host_kv_blocks, 0);
  StepPlan prefill;
  prefill.seqs.push_back(make_seq(1, prompt, 0, first_table, 1));
  prefill.seqs.back().sampling.temperature = 0.0;
  const int32_t next = ref.execute(prefill).seqs.at(0).tokens.at(0);
  ref.execute(decode(next, 45, first_table));
  const std::vector<float> expected = ref.last_logits();
  EXPECT_EQ(ref.last_step_used_graph(), graphs());

  CudaExecutor gpu(config_, *weights_, options(true));
  ASSERT_EQ(gpu.capabilities().num_host_kv_blocks, kHostBlocks);
  ASSERT_EQ(gpu.execute(prefill).seqs.at(0).tokens.at(0), next);
  // One step stores the prompt's blocks and prefills another prompt into the same GPU blocks:
  // the stores must read them before the forward writes.
  StepPlan overwrite;
  overwrite.seqs.push_back(make_seq(2, other, 0, first_table, 1));
  overwrite.kv_transfers.stores = {{0, 5}, {1, 2}, {2, 6}};
  gpu.execute(overwrite);

  // Decoding over the overwritten blocks sees the other prompt's KV: not the expected logits.
  gpu.execute(decode(next, 45, first_table));
  const std::vector<float> stale = gpu.last_logits();
  ASSERT_EQ(stale.size(), expected.size());
  EXPECT_NE(stale, expected) << "the overwrite did not change the KV: the test cannot see a copy";

  // Loaded back into other GPU blocks, in the same step that decodes over them.
  StepPlan reload = decode(next, 45, moved_table);
  reload.kv_transfers.loads = {{7, 5}, {9, 2}, {4, 6}};
  gpu.execute(reload);
  EXPECT_EQ(gpu.last_step_used_graph(), graphs());
  EXPECT_EQ(gpu.last_logits(), expected);
}

// The failpoint makes the runtime refuse every third load (kv_load_faults.h): the step reports
// it and runs no forward; the loads that were enqueued land, the context stays usable, and a
// step that loads the missing block then decodes exactly as the reference did.
TEST_P(CudaHostTier, ALoadTheRuntimeRefusesIsReportedAndNoForwardRuns) {
  const int32_t vocab = static_cast<int32_t>(config_.vocab_size);
  const std::vector<int32_t> prompt = tokens(45, 3, vocab);
  const std::vector<int32_t> first_table = {0, 1, 2};
  const std::vector<int32_t> moved_table = {7, 9, 4};
  StepPlan prefill;
  prefill.seqs.push_back(make_seq(1, prompt, 0, first_table, 1));
  prefill.seqs.back().sampling.temperature = 0.0;

  CudaExecutor ref(config_, *weights_, options(false));
  const int32_t next = ref.execute(prefill).seqs.at(0).tokens.at(0);
  ref.execute(decode(next, 45, first_table));
  const std::vector<float> expected = ref.last_logits();

  setenv(kKvLoadFailpointEnv, "3", 1);
  CudaExecutor gpu(config_, *weights_, options(true));
  unsetenv(kKvLoadFailpointEnv);
  ASSERT_EQ(gpu.execute(prefill).seqs.at(0).tokens.at(0), next);
  StepPlan overwrite;
  overwrite.seqs.push_back(make_seq(2, tokens(48, 11, vocab), 0, first_table, 1));
  overwrite.kv_transfers.stores = {{0, 5}, {1, 2}, {2, 6}};
  gpu.execute(overwrite);

  StepPlan reload = decode(next, 45, moved_table);
  reload.kv_transfers.loads = {{7, 5}, {9, 2}, {4, 6}};
  const StepResult failed = gpu.execute(reload);
  EXPECT_EQ(failed.failed_loads, (std::vector<BlockCopy>{{4, 6}}));
  ASSERT_EQ(failed.seqs.size(), 1u);
  EXPECT_TRUE(failed.seqs[0].tokens.empty());
  EXPECT_TRUE(gpu.last_logits().empty());  // no forward ran

  StepPlan retry = decode(next, 45, moved_table);
  retry.kv_transfers.loads = {{4, 6}};  // the 4th load: it lands
  const StepResult ok = gpu.execute(retry);
  EXPECT_TRUE(ok.failed_loads.empty());
  EXPECT_EQ(gpu.last_step_used_graph(), graphs());
  EXPECT_EQ(gpu.last_logits(), expected);
}

TEST_P(CudaHostTier, CopiesOutsideThePoolsAreRefused) {
  CudaExecutor gpu(config_, *weights_, options(true));
  StepPlan p = decode(1, 0, {0});
  p.kv_transfers.stores = {{0, static_cast<int32_t>(kHostBlocks)}};
  EXPECT_THROW(gpu.execute(p), Error);
  CudaExecutor no_tier(config_, *weights_, options(false));
  StepPlan q = decode(1, 0, {0});
  q.kv_transfers.loads = {{0, 0}};
  EXPECT_THROW(no_tier.execute(q), Error);
}

INSTANTIATE_TEST_SUITE_P(EagerGraphsAndRanks, CudaHostTier,
                         ::testing::Values(Mode{false, 1}, Mode{true, 1}, Mode{false, 2},
                                           Mode{true, 2}),
                         [](const ::testing::TestParamInfo<Mode>& i) {
                           const std::string how = i.param.graphs ? "Graphs" : "Eager";
                           return i.param.ranks > 1 ? "TwoRanks" + how : how;
                         });

}  // namespace
}  // namespace paceline
#else
TEST(CudaHostTier, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
