#pragma once
// The threads that prepare requests off the I/O thread: JSON parse, validation, the chat
// template and tokenization, then the submit to the engine. One I/O thread serves every
// connection, so a request that takes a second to tokenize must not run there (it froze /health
// for 27 s). Two lanes, so that a few huge bodies cannot hold up a small one: bodies up to
// `small_bytes` go to a lane with a thread of its own (the bulk threads help it when they are
// idle); larger ones queue for the bulk threads, which run at a lower priority (nice 10) than the
// engine and I/O threads.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace paceline {

class RequestWorkers {
 public:
  // `shutting_down` is true when the pool stops before the job ran: the job is to answer
  // (503) without doing its work.
  using Job = std::function<void(bool shutting_down)>;

  RequestWorkers(int bulk_threads, size_t small_bytes);
  ~RequestWorkers();  // stop()
  RequestWorkers(const RequestWorkers&) = delete;
  RequestWorkers& operator=(const RequestWorkers&) = delete;

  // Queues a job for a body of `bytes`; after stop() it runs at once as shutting down.
  void post(size_t bytes, Job job);
  // Jobs not started run as shutting down (on this thread); running ones finish; joins.
  void stop();
  // Jobs posted and not finished: they are requests the engine has not seen yet.
  size_t pending() const;
  int num_threads() const { return static_cast<int>(threads_.size()); }

 private:
  void run(bool small_lane_only);

  const size_t small_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> small_;
  std::deque<Job> bulk_;
  size_t pending_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace paceline
