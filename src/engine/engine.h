#pragma once
// The engine owns the scheduler and the executor and runs the step loop on its own thread:
//   plan = scheduler.schedule(); result = executor.execute(plan); outputs = scheduler.update(...)
// Other threads only submit and cancel (messages to the loop) and receive token events through
// callbacks that the loop calls. The scheduler is never touched from outside the loop.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "engine/engine_metrics.h"
#include "engine/step_log.h"
#include "exec/executor.h"
#include "sched/prefill_delayer_env.h"
#include "sched/scheduler.h"

namespace paceline {

// What a request's stream receives: new tokens, then one event with finished = true. A request the
// scheduler refused (too long, bad parameters) gets a single finished event carrying the error.
struct TokenEvent {
  uint64_t request_id = 0;
  std::vector<int32_t> token_ids;
  bool finished = false;
  std::optional<FinishReason> finish_reason;
  std::optional<int32_t> stop_token_id;
  Usage usage;
  std::string error;  // non-empty: the request was rejected; nothing was generated
};

// Called on the engine thread; must return quickly (hand the event to another thread).
using TokenCallback = std::function<void(const TokenEvent&)>;

class Engine {
 public:
  // The executor's KV shape decides the scheduler's block count and size.
  // `delayer_sources` (where each delayer knob came from) only enriches the startup log line.
  Engine(SchedulerConfig config, std::unique_ptr<Executor> executor, const Clock& clock,
         MetricsRegistry* metrics = nullptr,
         const PrefillDelayerSources* delayer_sources = nullptr);
  ~Engine();  // stops the loop; unfinished requests get an "abort" event

  // Records every step to `log` (serve --step-log); call before start().
  void set_step_log(std::unique_ptr<StepLog> log) { step_log_ = std::move(log); }

  void start();
  void stop();

  // Queues a request; returns its id. The callback sees every event of this request.
  uint64_t submit(std::vector<int32_t> prompt, RequestParams params, TokenCallback on_event);
  // Aborts the request at the next step boundary, freeing its KV blocks.
  void cancel(uint64_t request_id);

  const SchedulerConfig& config() const { return config_; }
  // Requests submitted and not yet finished, as seen from outside the loop.
  int64_t num_unfinished() const;

 private:
  struct Submission {
    uint64_t id;
    std::vector<int32_t> prompt;
    RequestParams params;
  };
  void loop();
  void drain_inbox();
  void deliver(const RequestOutput& out);
  void log_delayer_stats();

  SchedulerConfig config_;
  std::unique_ptr<Executor> executor_;
  const Clock& clock_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<EngineMetrics> metrics_;
  std::unique_ptr<StepLog> step_log_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Submission> inbox_;
  std::vector<uint64_t> cancels_;
  std::unordered_map<uint64_t, TokenCallback> callbacks_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace paceline
