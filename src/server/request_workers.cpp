#include "server/request_workers.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "base/log.h"

namespace paceline {

namespace {

// Bulk threads run below the engine and I/O threads: a flood of huge bodies then takes the CPU
// the engine does not need, not the CPU it does. 10 is CFS's weight ratio of about 1 to 10.
constexpr int kBulkNice = 10;

}  // namespace

RequestWorkers::RequestWorkers(int bulk_threads, size_t small_bytes) : small_bytes_(small_bytes) {
  threads_.emplace_back([this] { run(/*small_lane_only=*/true); });
  for (int i = 0; i < std::max(1, bulk_threads); ++i) {
    threads_.emplace_back([this] { run(/*small_lane_only=*/false); });
  }
}

RequestWorkers::~RequestWorkers() {
  stop();
}

void RequestWorkers::post(size_t bytes, Job job) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      ++pending_;
      (bytes <= small_bytes_ ? small_ : bulk_).push_back(std::move(job));
      cv_.notify_all();
      return;
    }
  }
  job(/*shutting_down=*/true);
}

void RequestWorkers::stop() {
  std::deque<Job> left;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    left.swap(small_);
    for (Job& job : bulk_) left.push_back(std::move(job));
    bulk_.clear();
  }
  cv_.notify_all();
  for (Job& job : left) {
    try {
      job(/*shutting_down=*/true);
    } catch (const std::exception& e) {
      spdlog::error("request worker: {}", e.what());
    }
  }
  for (auto& thread : threads_) thread.join();
  threads_.clear();
  std::lock_guard lock(mu_);
  pending_ -= std::min(pending_, left.size());
}

size_t RequestWorkers::pending() const {
  std::lock_guard lock(mu_);
  return pending_;
}

void RequestWorkers::run(bool small_lane_only) {
  // Linux applies a nice value per thread; raising it needs no privilege, and a failure only
  // leaves the thread at the normal priority.
  if (!small_lane_only) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kBulkNice);
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || !small_.empty() || (!small_lane_only && !bulk_.empty());
      });
      if (stopping_) return;
      // A bulk thread takes small jobs first: they are cheap and someone waits on them.
      std::deque<Job>& lane = !small_.empty() ? small_ : bulk_;
      job = std::move(lane.front());
      lane.pop_front();
    }
    try {
      job(/*shutting_down=*/false);
    } catch (const std::exception& e) {
      spdlog::error("request worker: {}", e.what());
    }
    std::lock_guard lock(mu_);
    --pending_;
  }
}

}  // namespace paceline
