#pragma once
// The step log (`serve --step-log FILE`, `sim --step-log FILE`): one JSON line per executed step,
// written by the engine core, with what the step computed and how long the engine spent on it.
// `paceline profile --from-step-log FILE` fits the simulator's cost model to these steps, so a
// profile can come from a real server under real load (contention, the serving path around the
// forward included) instead of from isolated forwards.
//
// After a header line ({"header": {"device": "cpu", "model": ..., "kv_blocks": ...,
// "block_size": 16, "kv_element_bytes": 4, "kv_dtype": "float32", "graph_sizes": []}}: what the
// executor reported), a line per step:
// {"step": 12, "kind": "decode", "t_us": 1234567, "execute_us": 11600.2,
// "host_us": 412.0, "padded_batch": 16, "seqs": [[tokens, start_pos, num_logits], ...]}
//   t_us       the step's start on the engine's clock
//   execute_us Executor::execute, as the engine's steady clock saw it (in the simulator: the
//              cost model's prediction)
//   kv_stores, kv_loads  only in a step that copied blocks to (stores) or from (loads) the host
//              KV tier: how many; the copies are inside execute_us
//   host_us    the rest of the step on the engine: taking new requests, schedule(), update(),
//              metrics and handing each request's tokens to its stream (not the wait for work;
//              0 on the simulator's clock)
#include <cstdint>
#include <fstream>
#include <string>

#include "exec/executor.h"
#include "sched/step_plan.h"

namespace paceline {

struct StepTiming {
  int64_t start_ns = 0;
  int64_t execute_ns = 0;
  int64_t host_ns = 0;
};

std::string step_log_line(const StepPlan& plan, const StepTiming& timing);
// The header's object: where the steps ran and what the executor reported.
std::string step_log_header(const std::string& device, const std::string& model,
                            const ExecutorCapabilities& executor);

class StepLog {
 public:
  // Throws paceline::Error naming the path when it cannot be written.
  explicit StepLog(const std::string& path);
  ~StepLog();
  // The first line: {"header": {...}} with what a profile needs besides the steps (device, model,
  // KV blocks and block size, bytes per KV element).
  void header(const std::string& json_object);
  void record(const StepPlan& plan, const StepTiming& timing);
  void flush();

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace paceline
