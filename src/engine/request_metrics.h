#pragma once
// vLLM's request-level series under vLLM's names: time to first token, the gaps between a
// request's token-bearing steps (inter-token latency), end-to-end latency and its phases (queued,
// prefill, decode, inference), and the token counts per request. Every time is the engine core's
// clock at the step boundary where the event becomes visible (the end of the step that produced
// the token, or the cancel), never a front end's: on the steady clock in `serve`, on the virtual
// clock in the simulator, so both report the same quantities the same way.
//
//   queued     arrival -> first scheduled        prefill    first scheduled -> first token
//   decode     first token -> last token         inference  first scheduled -> last token
//   e2e        arrival -> finished               TTFT       arrival -> first token
#include <cstdint>
#include <unordered_map>

#include "engine/metrics.h"
#include "sched/request.h"

namespace paceline {

class RequestMetrics {
 public:
  // Registers every series (at zero); the token-count histograms' bounds go up to max_model_len.
  RequestMetrics(MetricsRegistry& registry, int64_t max_model_len);
  // A request the scheduler accepted.
  void on_added(uint64_t id, int64_t max_tokens);
  // One output the core hands out, at `now_ns` on the core's clock.
  void on_output(const RequestOutput& out, int64_t now_ns);
  // Requests added and not finished yet.
  size_t num_live() const { return live_.size(); }

 private:
  struct Live {
    int64_t max_tokens = 0;
    int64_t first_token_ns = -1;
    int64_t last_token_ns = -1;
  };
  void on_finished(const RequestOutput& out, const Live& live, int64_t now_ns);

  std::unordered_map<uint64_t, Live> live_;
  Histogram *ttft_, *itl_, *tpot_, *request_tpot_;
  Histogram *e2e_, *queue_, *prefill_, *decode_, *inference_;
  Histogram *prompt_tokens_, *generation_tokens_, *max_tokens_;
};

}  // namespace paceline
