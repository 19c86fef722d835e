#include "engine/step_log.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/log.h"

namespace paceline {

std::string step_log_line(const StepPlan& plan, const StepTiming& t) {
  std::string line = fmt::format(
      "{{\"step\": {}, \"kind\": \"{}\", \"t_us\": {}, \"execute_us\": {:.1f}, \"host_us\": {:.1f}, "
      "\"padded_batch\": {}, ",
      plan.step_id, forward_kind_name(plan.kind), t.start_ns / 1000,
      static_cast<double>(t.execute_ns) / 1e3, static_cast<double>(t.host_ns) / 1e3,
      plan.padded_batch_size);
  // A step that copied blocks to or from the host tier says how many: the copies are part of its
  // execute time, and a profile fitted to the log must not charge them as compute.
  if (!plan.kv_transfers.empty()) {
    fmt::format_to(std::back_inserter(line), "\"kv_stores\": {}, \"kv_loads\": {}, ",
                   plan.kv_transfers.stores.size(), plan.kv_transfers.loads.size());
  }
  line += "\"seqs\": [";
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSeq& s = plan.seqs[i];
    fmt::format_to(std::back_inserter(line), "{}[{}, {}, {}]", i == 0 ? "" : ", ", s.tokens.size(),
                   s.start_pos, s.num_logits);
  }
  line += "]}\n";
  return line;
}

std::string step_log_header(const std::string& device, const std::string& model,
                            const ExecutorCapabilities& x) {
  const nlohmann::json header = {{"device", device},
                                 {"model", model},
                                 {"kv_blocks", x.kv.num_blocks},
                                 {"block_size", x.kv.block_size},
                                 {"kv_element_bytes", x.kv_element_bytes},
                                 {"kv_dtype", x.kv_dtype},
                                 {"tensor_parallel_size", x.tensor_parallel_size},
                                 {"graph_sizes", x.graph_sizes}};
  return header.dump();
}

StepLog::StepLog(const std::string& path) : path_(path), out_(path, std::ios::binary) {
  if (!out_) fail("--step-log {}: cannot open for writing", path);
}

StepLog::~StepLog() { flush(); }

void StepLog::header(const std::string& json_object) {
  out_ << "{\"header\": " << json_object << "}\n";
}

void StepLog::record(const StepPlan& plan, const StepTiming& timing) {
  out_ << step_log_line(plan, timing);
}

void StepLog::flush() {
  out_.flush();
  if (!out_) spdlog::error("--step-log {}: write failed", path_);
}

}  // namespace paceline
