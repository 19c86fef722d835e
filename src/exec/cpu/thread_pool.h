#pragma once
// A fixed set of worker threads for the CPU forward's data-parallel loops (attention over
// tokens and heads). The calling thread works too, so a pool of n threads starts n - 1 workers.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace paceline {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over disjoint ranges that cover [0, n), handed out in small chunks so
  // that uneven items (a causal row near the end of a long prompt) balance out. Returns when all
  // ranges are done; rethrows the first exception a range threw.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop();
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  uint64_t generation_ = 0;
  int busy_workers_ = 0;
  bool stopping_ = false;

  // The job in flight; written under mutex_ before generation_ advances.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_size_ = 0;
  int64_t grain_ = 1;
  int64_t next_ = 0;  // guarded by mutex_
  std::exception_ptr error_;
};

}  // namespace paceline
