#pragma once
// The benchmark's Transport served in-process by paceline's own engine core in virtual time: the
// core's event adapter. A sent RequestSpec becomes the token prompt the benchmark's completions
// path would send (so prefix sharing follows the trace's hash ids and the play's cache-bust marker
// exactly) and is added to the core. Each step is begun at its start (the plan and the cost
// model's duration) and ended that much later, where its tokens are delivered as stream chunks
// stamped with that time; the next step begins at once, or at the next send when nothing is left
// to run.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/token_prompt.h"
#include "bench/virtual_driver.h"
#include "engine/engine_core.h"
#include "sim/trace_oracle.h"

namespace paceline::sim {

class SimTransport final : public bench::VirtualTransport {
 public:
  // Both must outlive the transport; the core reads the same clock the driver moves.
  SimTransport(EngineCore& core, const VirtualClock& clock, bench::TokenPromptConfig prompt = {});

  // Prompt of spec.isl synthesized tokens; max_tokens = min_tokens = spec.osl with ignore_eos, as
  // the benchmark's request body asks. A request the scheduler refuses (too long for the context
  // or the whole KV cache) is answered with HTTP 400 and the scheduler's message.
  void send(const bench::RequestSpec& spec, bench::StreamCallbacks callbacks) override;
  // Aborts the request in the core, freeing its KV blocks now (a row of the step in flight is
  // dropped at its end); no callback follows.
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
  struct Refusal {
    int64_t at_ns;
    uint64_t id;
    std::string text;
  };

  void begin_step(int64_t now_ns);
  void end_step();
  void deliver(const RequestOutput& out, int64_t t_ns);
  void forget(std::map<uint64_t, Stream>::iterator it);

  EngineCore& core_;
  const VirtualClock& clock_;
  bench::TokenPromptConfig prompt_;
  std::map<uint64_t, Stream> streams_;
  std::vector<Refusal> refusals_;       // answered at the next advance_to, in send order
  std::optional<int64_t> step_end_ns_;  // the core's step in flight ends then
  std::optional<int64_t> wake_ns_;  // idle engine: when a send gave it work
  TraceNextUseOracle* oracle_ = nullptr;
};

}  // namespace paceline::sim
