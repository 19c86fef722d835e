#include "exec/cuda/decode_graphs.h"

#include <chrono>

#include "base/error.h"
#include "exec/cuda/cuda_check.h"

namespace paceline::cuda {

DecodeGraphs::DecodeGraphs(CudaModel& model, cudaStream_t stream, const StepLimits& limits,
                           int64_t max_blocks_per_seq)
    : model_(model), stream_(stream), limits_(limits), max_blocks_per_seq_(max_blocks_per_seq) {}

DecodeGraphs::~DecodeGraphs() {
  for (auto& [size, g] : graphs_) {
    if (g->exec != nullptr) cudaGraphExecDestroy(g->exec);
  }
}

double DecodeGraphs::capture(const std::vector<int32_t>& sizes) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!sizes.empty()) {
    acts_.reserve(model_.rank_config(), sizes.back(), sizes.back(), sizes.back(),
                  model_.decode_splits().max_splits, model_.tensor_parallel().world);
  }
  for (int32_t size : sizes) capture_size(size);
  sizes_ = sizes;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void DecodeGraphs::capture_size(int32_t size) {
  auto g = std::make_unique<Graph>();
  g->inputs.init(size, size * max_blocks_per_seq_);
  // All rows padding: the capture records addresses, not values. One eager run first, so that
  // cuBLAS has chosen and loaded its kernels for these shapes before the capture.
  StepPlan empty;
  HostStep padding = host_step_padded(empty, limits_, size);
  g->inputs.upload_fixed(padding, stream_);
  const StepCounts counts{size, size, size, 0};
  model_.forward(counts, g->inputs, acts_);
  PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream_));

  cudaGraph_t graph = nullptr;
  PACELINE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  try {
    model_.forward(counts, g->inputs, acts_);
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  PACELINE_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  const cudaError_t inst = cudaGraphInstantiate(&g->exec, graph, 0);
  cudaGraphDestroy(graph);
  PACELINE_CUDA_CHECK(inst);
  graphs_[size] = std::move(g);
}

bool DecodeGraphs::fits(const StepPlan& plan) const {
  if (plan.kind != ForwardKind::kDecode || plan.padded_batch_size <= 0 || sizes_.empty()) {
    return false;
  }
  if (static_cast<int64_t>(plan.seqs.size()) > plan.padded_batch_size) return false;
  if (plan.padded_batch_size > sizes_.back()) return false;
  for (const ScheduledSeq& s : plan.seqs) {
    if (s.tokens.size() != 1 || s.num_logits != 1) return false;
    if ((s.start_pos + 1 + limits_.block_size - 1) / limits_.block_size > max_blocks_per_seq_) {
      return false;
    }
  }
  return true;
}

void DecodeGraphs::replay(const HostStep& step, int32_t size) {
  Graph& g = *graphs_.at(size);
  g.inputs.upload_fixed(step, stream_);
  PACELINE_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
}

}  // namespace paceline::cuda
