#pragma once
// The benchmark's Transport served in-process by paceline's own scheduler in virtual time. A sent
// RequestSpec becomes the token prompt the benchmark's completions path would send (so prefix
// sharing follows the trace's hash ids and the play's cache-bust marker exactly) and is added to
// the scheduler. The engine loop runs as events: each step is planned at its start, costed by the
// executor, and applied at its end, where its tokens are delivered as stream chunks stamped with
// that time; the next step starts at once, or at the next send when nothing is left to run.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/token_prompt.h"
#include "bench/virtual_driver.h"
#include "exec/executor.h"
#include "sched/scheduler.h"
#include "sim/trace_oracle.h"

namespace paceline::sim {

class SimTransport final : public bench::VirtualTransport {
 public:
  // Everything must outlive the transport. The scheduler reads the same clock the driver moves.
  SimTransport(Scheduler& scheduler, Executor& executor, const VirtualClock& clock,
               bench::TokenPromptConfig prompt = {});

  // Prompt of spec.isl synthesized tokens; max_tokens = min_tokens = spec.osl with ignore_eos, as
  // the benchmark's request body asks. A request the scheduler refuses (too long for the context
  // or the whole KV cache) is answered with HTTP 400 and the scheduler's message.
  void send(const bench::RequestSpec& spec, bench::StreamCallbacks callbacks) override;
  // Aborts the request in the scheduler, freeing its KV blocks; no callback follows.
  void cancel(uint64_t request_id) override;
  // Passed on to the next-use oracle, when there is one (--kv-policy oracle).
  void announce(const bench::RequestSpec& spec, int64_t at_ns) override;
  void set_oracle(TraceNextUseOracle* oracle) { oracle_ = oracle; }

  std::optional<int64_t> next_event_ns() const override;
  void advance_to(int64_t now_ns) override;

  // Requests sent and not yet answered or cancelled.
  int64_t in_flight() const { return static_cast<int64_t>(streams_.size()); }

 private:
  struct Stream {
    bench::StreamCallbacks callbacks;
    bool first_token_sent = false;
    bench::RequestSpec spec;  // kept for the oracle's withdraw (hash ids left out)
  };
  struct Step {
    StepPlan plan;
    StepResult result;
    int64_t end_ns = 0;
  };
  struct Refusal {
    int64_t at_ns;
    uint64_t id;
    std::string text;
  };

  void start_step(int64_t now_ns);
  void finish_step();
  void deliver(const RequestOutput& out, int64_t t_ns);
  void forget(std::map<uint64_t, Stream>::iterator it);

  Scheduler& scheduler_;
  Executor& executor_;
  const VirtualClock& clock_;
  bench::TokenPromptConfig prompt_;
  std::map<uint64_t, Stream> streams_;
  std::vector<Refusal> refusals_;   // answered at the next advance_to, in send order
  std::optional<Step> step_;        // the forward in flight
  std::optional<int64_t> wake_ns_;  // idle engine: when a send gave it work
  TraceNextUseOracle* oracle_ = nullptr;
};

}  // namespace paceline::sim
