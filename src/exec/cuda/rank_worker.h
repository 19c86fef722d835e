#pragma once
// A tensor-parallel rank after the first (docs/tensor-parallel.md, "The CUDA ranks"): a thread of
// its own that owns the rank's stream on its device, its CudaModel (weight slices, KV cache),
// its step inputs and its activations, and runs each step's forward while the executor runs rank
// 0's on the engine's thread (the collectives inside the forward need every rank at once). Tasks
// go to the thread one at a time; wait() returns when the last one has run and rethrows what it
// threw.
#include <cuda_runtime.h>

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/cuda/activations.h"
#include "exec/cuda/cuda_model.h"
#include "exec/cuda/decode_graphs.h"
#include "exec/cuda/host_kv_tier.h"
#include "exec/cuda/rank_collectives.h"
#include "exec/cuda/step_inputs.h"
#include "model/config.h"
#include "model/tensor_parallel_shape.h"
#include "model/weights.h"

namespace paceline::cuda {

class RankWorker {
 public:
  // Uploads rank `rank`'s slices on `device` from the worker's thread; returns when done (or
  // throws what the upload threw). `weights` and `collectives` must outlive the worker.
  RankWorker(int device, const ModelConfig& config, const Weights& weights,
             const TensorParallelShape& tp, int rank, RankCollectives* collectives);
  ~RankWorker();
  RankWorker(const RankWorker&) = delete;
  RankWorker& operator=(const RankWorker&) = delete;

  // Setup, run on the worker's thread and waited for.
  void configure(bool small_m_gemm, PrefillPrecision precision);
  void allocate_kv_cache(KvCacheShape shape, bool fp8);
  // The rank's host KV tier (--kv-offloading-size): `blocks` host blocks of its KV heads, pinned
  // from its thread; throws what pinning threw.
  void create_host_tier(int64_t blocks);

  // Starts a step's KV copies on the rank's stream (ahead of the forward started next): the
  // rank's blocks of the same block numbers as rank 0's. `transfers` must live until wait();
  // kv_transfers_failed() then holds the loads the runtime refused.
  void start_kv_transfers(const KvTransfers& transfers);
  std::vector<BlockCopy> kv_transfers_failed() { return std::move(failed_loads_); }

  // Starts the step's forward: the rank's inputs are uploaded from `step` (which must live until
  // wait()) and its forward enqueued on its stream, with activations for `logit_rows`.
  void start_forward(const HostStep& step, const StepCounts& counts);
  // CUDA graphs of the rank's decode forward (decode_graphs.h), started on every rank at once
  // with the same arguments as rank 0's DecodeGraphs: create_graphs (waited for), then
  // start_capture (the startup sizes), start_capture_size (one more) and start_replay (which
  // uploads `step`, which must live until wait()).
  void create_graphs(const StepLimits& limits, int64_t max_blocks_per_seq);
  void start_capture(const std::vector<int32_t>& sizes);
  void start_capture_size(int32_t size);
  void start_replay(const HostStep& step, int32_t size);
  // Waits for the task started last; rethrows its exception.
  void wait();

  CudaModel& model() { return *model_; }

 private:
  void post(std::function<void()> task);
  void loop();

  int device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaModel> model_;
  StepBuffers inputs_;
  Activations acts_;
  std::unique_ptr<DecodeGraphs> graphs_;
  std::unique_ptr<HostKvTier> host_tier_;
  std::vector<BlockCopy> failed_loads_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace paceline::cuda
