// RequestWorkers: a small body is prepared while the bulk threads are busy with huge ones, and
// jobs still queued at stop() are told so instead of being dropped.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>

#include "server/request_workers.h"

namespace paceline {
namespace {

using namespace std::chrono_literals;

TEST(RequestWorkers, ASmallBodyIsNotQueuedBehindBusyBulkThreads) {
  RequestWorkers workers(/*bulk_threads=*/2, /*small_bytes=*/1024);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  auto hold = [&](bool) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });
  };
  for (int i = 0; i < 4; ++i) workers.post(size_t{30} << 20, hold);  // both bulk threads stuck
  std::promise<void> ran;
  workers.post(100, [&](bool shutting_down) {
    EXPECT_FALSE(shutting_down);
    ran.set_value();
  });
  EXPECT_EQ(ran.get_future().wait_for(2s), std::future_status::ready);
  // The small job counts as pending until it has returned, just after it set the promise.
  for (int i = 0; i < 200 && workers.pending() != 4u; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(workers.pending(), 4u);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
}

TEST(RequestWorkers, StopRunsQueuedJobsAsShuttingDown) {
  RequestWorkers workers(1, 1024);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> cancelled{0}, ran{0};
  auto job = [&](bool shutting_down) {
    if (shutting_down) {
      ++cancelled;
      return;
    }
    ++ran;
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });
  };
  // Each job running before the next is posted (a bulk thread that wakes to both takes the small
  // one first); polled, not a fixed sleep: on a loaded machine a thread can take long to start.
  auto wait_ran = [&](int n) {
    for (int i = 0; i < 1000 && ran < n; ++i) std::this_thread::sleep_for(10ms);
  };
  workers.post(size_t{1} << 20, job);  // runs on the bulk thread and waits
  wait_ran(1);
  workers.post(10, job);  // runs on the small lane and waits
  wait_ran(2);
  EXPECT_EQ(ran, 2);
  for (int i = 0; i < 3; ++i) workers.post(size_t{1} << 20, job);  // queued
  std::thread stopper([&] { workers.stop(); });
  std::this_thread::sleep_for(300ms);  // stop() has marked the queue before the jobs go on
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  stopper.join();
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(cancelled, 3);
  workers.post(10, job);  // after stop: answered at once
  EXPECT_EQ(cancelled, 4);
  EXPECT_EQ(workers.pending(), 0u);
}

}  // namespace
}  // namespace paceline
