#pragma once
// The serving engine: a thread and an inbox around the EngineCore (engine_core.h), on the steady
// clock. The thread loops: take the inbox, begin_step (the forward runs), take the inbox again
// (a cancel that came during the forward drops its row, as in the simulator), end_step, hand each
// output to its request's callback. Other threads only submit and cancel (messages to the loop)
// and receive token events through the callbacks. The core is never touched from outside it.
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
#include "engine/engine_core.h"
#include "sched/prefill_delayer_env.h"

namespace paceline {

// What a request's stream receives: new tokens, then one event with finished = true. A request the
// scheduler refused (too long, bad parameters) gets a single finished event carrying the error.
struct TokenEvent {
  uint64_t request_id = 0;
  std::vector<int32_t> token_ids;
  std::vector<RowLogprobs> logprobs;  // one per token when the request asked for logprobs
  std::vector<RowLogprobs> prompt_logprobs;  // prompt tokens 1.., with the first token
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
  // The executor's report decides the scheduler's block count and size (EngineCore).
  // `delayer_sources` (where each delayer knob came from) only enriches the startup log line.
  Engine(SchedulerConfig config, std::unique_ptr<Executor> executor, const Clock& clock,
         MetricsRegistry* metrics = nullptr,
         const PrefillDelayerSources* delayer_sources = nullptr);
  ~Engine();  // stops the loop; unfinished requests get an "abort" event

  // Records every step to `log` (serve --step-log) after its header; call before start().
  void set_step_log(std::unique_ptr<StepLog> log, const std::string& device,
                    const std::string& model) {
    core_.set_step_log(std::move(log), device, model);
  }

  void start();
  void stop();

  // Queues a request; returns its id. The callback sees every event of this request.
  uint64_t submit(std::vector<int32_t> prompt, RequestParams params, TokenCallback on_event);
  // Aborts the request as soon as the loop is outside the forward, freeing its KV blocks; a row
  // of the forward then running is dropped.
  void cancel(uint64_t request_id);
  // Forgets every cached KV block no request holds, on the loop's thread between two steps;
  // `done` then gets the number of blocks dropped (on the engine thread: return quickly). A reset
  // asked for after stop() is never done, and `done` is destroyed uncalled.
  void reset_prefix_cache(std::function<void(int64_t dropped)> done);

  // The scheduler's config as the executor sized it (KV blocks, block size, graph sizes).
  const SchedulerConfig& config() const { return core_.config(); }
  const ExecutorCapabilities& capabilities() const { return core_.capabilities(); }
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
  void reset_prefix_caches();
  void deliver(const RequestOutput& out);
  void finish(uint64_t id, TokenEvent ev);
  void abort_all();

  const Clock& clock_;
  EngineCore core_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Submission> inbox_;
  std::vector<uint64_t> cancels_;
  std::vector<std::function<void(int64_t)>> resets_;
  std::unordered_map<uint64_t, TokenCallback> callbacks_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace paceline
