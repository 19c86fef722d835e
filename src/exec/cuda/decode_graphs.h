#pragma once
// CUDA graphs of the decode forward, one per captured batch size. A decode plan of n sequences
// (one token and one logit each) replays the graph of its padded_batch_size: its inputs are
// copied into that graph's StepBuffers (fixed addresses), the padding rows attend to nothing and
// write nothing, and the logits of the first n rows are the answer. All graphs share one
// Activations sized for the largest.
//
// A tensor-parallel rank has a DecodeGraphs of its own on its model and stream, and its graphs
// hold its collectives. The ranks capture together (capture or capture_size on every rank's
// thread at once, the same sizes in the same order: the eager run before each capture meets the
// other ranks) and replay the same size for a step; the executor keeps them in step.
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "exec/cuda/activations.h"
#include "exec/cuda/cuda_model.h"
#include "exec/cuda/step_inputs.h"

namespace paceline::cuda {

class DecodeGraphs {
 public:
  // max_blocks_per_seq bounds one sequence's block table (max context / block size).
  DecodeGraphs(CudaModel& model, cudaStream_t stream, const StepLimits& limits,
               int64_t max_blocks_per_seq);
  ~DecodeGraphs();
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  // Captures a graph per size (sorted ascending); returns the seconds it took.
  double capture(const std::vector<int32_t>& sizes);
  // Captures the graph of one size, at most the largest of capture()'s (fits() said so).
  void capture_size(int32_t size);
  const std::vector<int32_t>& sizes() const { return sizes_; }
  // Whether `plan` can replay a graph: decode, one token and one logit per sequence, a
  // padded_batch_size that holds it, and block tables within the captured bound. Its size may
  // still need capture_size (a padded size between the sizes captured at startup).
  bool fits(const StepPlan& plan) const;
  bool captured(int32_t size) const { return graphs_.count(size) > 0; }
  // Uploads a step made by host_step_padded(plan, limits, size) and launches the graph of
  // `size`; the results land in activations().
  void replay(const HostStep& step, int32_t size);
  Activations& activations() { return acts_; }

 private:
  struct Graph {
    StepBuffers inputs;
    cudaGraphExec_t exec = nullptr;
  };

  CudaModel& model_;
  cudaStream_t stream_;
  StepLimits limits_;
  int64_t max_blocks_per_seq_;
  Activations acts_;
  std::map<int32_t, std::unique_ptr<Graph>> graphs_;
  std::vector<int32_t> sizes_;
};

}  // namespace paceline::cuda
