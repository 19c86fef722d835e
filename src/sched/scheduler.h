#pragma once
// The scheduler: decides what each forward computes. It admits requests in arrival order, grows
// their KV block tables, chunks long prefills, preempts by recompute when KV blocks run out, asks
// the PrefillDelayer once per pass, and turns the sampled tokens back into request outputs.
// Deterministic and free of I/O: time comes only from the injected Clock.
//
// The step loop: plan = schedule(); result = executor.execute(plan); outputs = update(plan,
// result).
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "kv/kv_manager.h"
#include "sched/prefill_delayer.h"
#include "sched/request.h"
#include "sched/scheduler_config.h"
#include "sched/spec_acceptance.h"
#include "sched/step_cost.h"
#include "sched/step_plan.h"

namespace paceline {

// A snapshot of what the engine exports as metrics.
struct SchedulerStats {
  int64_t num_running = 0;
  int64_t num_waiting = 0;  // preempted requests included
  int64_t num_kv_blocks = 0;
  int64_t num_free_kv_blocks = 0;
  double kv_usage = 0.0;
  int64_t prefix_cache_queries = 0;  // tokens
  int64_t prefix_cache_hits = 0;     // tokens, either tier
  int64_t prefix_cache_host_hits = 0;  // tokens loaded back from the host tier
  int64_t kv_stored_blocks = 0;        // GPU blocks copied to the host tier
  int64_t kv_loaded_blocks = 0;        // host blocks copied back
  int64_t kv_load_failures = 0;        // host blocks whose load failed (recomputed instead)
  int64_t num_host_kv_blocks = 0;      // the host tier's size (0: none)
  int64_t num_host_kv_cached = 0;      // of those, holding a cached block
  int64_t prompt_tokens = 0;         // prompt tokens of requests at their first admission
  int64_t prefill_tokens = 0;        // tokens computed by prefill rows (recomputation included)
  int64_t generation_tokens = 0;     // output tokens committed
  int64_t preemptions = 0;
  int64_t finished_stop = 0, finished_length = 0, finished_abort = 0;
  int64_t prefill_steps = 0, decode_steps = 0, mixed_steps = 0;
  std::optional<PrefillDelayerCounters> delayer;  // when the delayer is active
};

class Scheduler {
 public:
  // Validates the config (paceline::Error). The clock must outlive the scheduler.
  Scheduler(const SchedulerConfig& config, const Clock& clock);
  ~Scheduler();

  // Queues a request. Throws paceline::Error for an empty prompt, a duplicate id, max_tokens < 1,
  // min_tokens > max_tokens, a prompt plus max_tokens beyond max_model_len ("maximum context
  // length"), or a request that could not fit the whole KV cache.
  void add_request(uint64_t id, std::vector<int32_t> prompt, RequestParams params = {});
  // Ends a request in any state, freeing its KV blocks: the "abort" output, or nothing when the id
  // is unknown or already finished. A row already planned for it is ignored by update().
  std::optional<RequestOutput> cancel(uint64_t id);

  // Plans the next forward; an empty plan when there is nothing to run.
  StepPlan schedule();
  // Applies an executed plan: advances computed tokens, commits sampled tokens, applies stop
  // conditions and frees finished requests. One output per request that got tokens or finished.
  // A result with failed loads (the executor ran no forward) advances nothing: the host tier
  // forgets those blocks, each request that was to read one recomputes from the first block it
  // lacks, and the next plans run every row again.
  std::vector<RequestOutput> update(const StepPlan& plan, const StepResult& result);

  bool has_unfinished() const { return !requests_.empty(); }
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  const Request* find(uint64_t id) const;
  SchedulerStats stats() const;

  const SchedulerConfig& config() const { return config_; }
  const KvManager& kv() const { return kv_; }
  // KvManager::reset_prefix_cache; the blocks of running and waiting requests are untouched.
  int64_t reset_prefix_cache() { return kv_.reset_prefix_cache(); }
  // The next-use oracle of --kv-policy oracle (the simulator's); must outlive the scheduler.
  void set_next_use_oracle(NextUseOracle* oracle) { kv_.set_oracle(oracle); }
  // What --max-step-ms predicts step times with; must outlive the scheduler. Without one (or
  // with max_step_ms 0, or chunked prefill off) prefills are bounded by tokens alone.
  void set_step_cost(const StepCostModel* cost) { step_cost_ = cost; }
  // Null unless the delayer is active; the engine logs its describe() and stats lines.
  PrefillDelayer* delayer() { return delayer_.get(); }
  const std::vector<int32_t>& cudagraph_capture_sizes() const { return cudagraph_sizes_; }

 private:
  // One row of the pass being built; materialized into a ScheduledSeq at the end.
  struct Row {
    Request* request;
    int64_t num_tokens;
    bool prefill;
  };
  struct Pass {
    std::vector<Row> rows;
    int64_t budget = 0;
    bool preempted = false;
    bool has_prefill() const;
    bool has_decode() const;
  };

  // schedule_pass.cpp: the pieces both compositions are built from.
  Pass build_pass();
  void continue_allocations();
  bool complete_one_allocation();
  void schedule_decodes(Pass& pass);
  void schedule_partial_prefills(Pass& pass);
  void admit_waiting(Pass& pass);
  enum class Admit { kAdmitted, kNoBudget, kNoKv };
  Admit try_admit(Request& request, const PrefixHit& hit, Pass& pass);
  void admit_by_prefix(Pass& pass);
  // short-first: admits the waiting requests with a short prefill left, in queue order, each
  // that fits; true when it admitted any (the pass is then theirs alone).
  bool admit_short_prefills(Pass& pass);
  bool reserve(Request& request, int64_t num_tokens, Pass& pass);
  void preempt(Request& victim, Pass& pass);
  int64_t prefill_chunk(int64_t remaining, int64_t budget) const;
  // step_time_bound.cpp: --max-step-ms.
  int64_t time_bounded_chunk(const Request& request, int64_t start, int64_t n,
                             const Pass& pass) const;
  StepWork pass_work(const Pass& pass) const;
  int64_t decode_tokens(const Request& request) const;
  StepPlan make_plan(const Pass& pass);
  // prefill_probe.cpp: what the delayer is told before each pass.
  PrefillDelayerInputs delayer_inputs();
  bool allow_prefill();

  // scheduler.cpp
  void commit(Request& request, const SeqResult& result, int64_t num_tokens, bool decode,
              RequestOutput& out);
  void release(Request& request);
  void recover_failed_loads(std::span<const BlockCopy> failed);
  uint64_t sampling_seed(const Request& request) const;

  SchedulerConfig config_;
  const Clock& clock_;
  KvManager kv_;
  std::vector<int32_t> cudagraph_sizes_;
  std::unique_ptr<SpecAcceptance> spec_;
  std::unique_ptr<PrefillDelayer> delayer_;
  const StepCostModel* step_cost_ = nullptr;

  std::unordered_map<uint64_t, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;   // arrival order; preempted requests go back to the front
  std::vector<Request*> running_;  // admission order: the newest at the back
  uint64_t next_step_id_ = 0;
  std::optional<uint64_t> in_flight_step_;
  int short_passes_in_a_row_ = 0;  // short-first: passes that ran short prefills alone
  SchedulerStats totals_;
};

}  // namespace paceline
