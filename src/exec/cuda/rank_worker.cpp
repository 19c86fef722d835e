#include "exec/cuda/rank_worker.h"

#include <algorithm>

#include "exec/cuda/cuda_check.h"

namespace paceline::cuda {

RankWorker::RankWorker(int device, const ModelConfig& config, const Weights& weights,
                       const TensorParallelShape& tp, int rank, RankCollectives* collectives)
    : device_(device), thread_([this] { loop(); }) {
  post([&, this] {
    PACELINE_CUDA_CHECK(cudaSetDevice(device_));
    PACELINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    model_ = std::make_unique<CudaModel>(config, weights, stream_, tp, rank, collectives);
  });
  wait();
}

RankWorker::~RankWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // The model's buffers and the stream belong to the worker's device; the destroying thread's
  // own device is put back afterwards.
  int previous = 0;
  const bool known = cudaGetDevice(&previous) == cudaSuccess;
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);  // no copy left reading the host tier
  host_tier_.reset();
  graphs_.reset();  // before the model its graphs replay
  model_.reset();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (known) cudaSetDevice(previous);
}

void RankWorker::configure(bool small_m_gemm, PrefillPrecision precision) {
  post([=, this] {
    model_->set_small_m_gemm(small_m_gemm);
    model_->set_prefill_precision(precision);
  });
  wait();
}

void RankWorker::allocate_kv_cache(KvCacheShape shape, bool fp8) {
  post([=, this] { model_->allocate_kv_cache(shape, fp8); });
  wait();
}

void RankWorker::create_host_tier(int64_t blocks) {
  post([=, this] {
    host_tier_ = std::make_unique<HostKvTier>(blocks, model_->kv_block_layout());
  });
  wait();
}

void RankWorker::start_kv_transfers(const KvTransfers& transfers) {
  post([&transfers, this] {
    failed_loads_ = enqueue_kv_transfers(host_tier_.get(), nullptr, transfers, stream_);
  });
}

void RankWorker::start_forward(const HostStep& step, const StepCounts& counts) {
  post([&step, counts, this] {
    acts_.reserve(model_->rank_config(), step.rows(), static_cast<int64_t>(step.decode_rows.size()),
                  std::max(1, counts.logits), model_->decode_splits().max_splits,
                  model_->tensor_parallel().world);
    inputs_.upload(step, stream_);
    model_->forward(counts, inputs_, acts_);
  });
}

void RankWorker::create_graphs(const StepLimits& limits, int64_t max_blocks_per_seq) {
  post([=, this] {
    graphs_ = std::make_unique<DecodeGraphs>(*model_, stream_, limits, max_blocks_per_seq);
  });
  wait();
}

void RankWorker::start_capture(const std::vector<int32_t>& sizes) {
  post([sizes, this] { graphs_->capture(sizes); });
}

void RankWorker::start_capture_size(int32_t size) {
  post([size, this] { graphs_->capture_size(size); });
}

void RankWorker::start_replay(const HostStep& step, int32_t size) {
  post([&step, size, this] { graphs_->replay(step, size); });
}

void RankWorker::post(std::function<void()> task) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !busy_; });
    task_ = std::move(task);
    busy_ = true;
  }
  cv_.notify_all();
}

void RankWorker::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void RankWorker::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || (busy_ && task_); });
      if (stop_ && !(busy_ && task_)) return;
      task = std::move(task_);
      task_ = nullptr;
    }
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = error;
      busy_ = false;
    }
    cv_.notify_all();
  }
}

}  // namespace paceline::cuda
