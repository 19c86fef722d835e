#include "sim/step_log_profile.h"

#include <algorithm>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace paceline::sim {

namespace {

struct Header {
  std::string device, model;
  int64_t kv_blocks = 0, block_size = 0, kv_element_bytes = 0;
  int tensor_parallel_size = 1;  // absent in logs written before it was recorded: 1
};

Header parse_header(const nlohmann::json& h, const std::string& where) {
  Header out;
  try {
    out.device = h.at("device").get<std::string>();
    out.model = h.at("model").get<std::string>();
    out.kv_blocks = h.at("kv_blocks").get<int64_t>();
    out.block_size = h.at("block_size").get<int64_t>();
    out.kv_element_bytes = h.at("kv_element_bytes").get<int64_t>();
    out.tensor_parallel_size = h.value("tensor_parallel_size", 1);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: header: {}", where, e.what());
  }
  if (out.kv_blocks < 1 || out.block_size < 1 || out.kv_element_bytes < 1) {
    fail("{}: header: kv_blocks, block_size and kv_element_bytes must be positive", where);
  }
  return out;
}

// A step line as the StepPlan it describes (token values do not matter to the cost model), and
// the number of blocks of its longer copy direction (0 without copies).
ProfilePoint parse_step(const nlohmann::json& j, bool graph_padding, const std::string& where,
                        int64_t& copied_blocks) {
  StepPlan plan;
  double execute_us = 0, host_us = 0, t_us = 0;
  int64_t stores = 0, loads = 0;
  try {
    const std::string kind = j.at("kind").get<std::string>();
    const std::optional<ForwardKind> k = forward_kind_from_name(kind);
    if (!k) fail("{}: unknown kind '{}'", where, kind);
    plan.kind = *k;
    t_us = j.at("t_us").get<double>();
    execute_us = j.at("execute_us").get<double>();
    host_us = j.at("host_us").get<double>();
    plan.padded_batch_size = j.at("padded_batch").get<int32_t>();
    stores = j.value("kv_stores", int64_t{0});
    loads = j.value("kv_loads", int64_t{0});
    for (const auto& s : j.at("seqs")) {
      ScheduledSeq seq;
      const int64_t tokens = s.at(0).get<int64_t>();
      seq.start_pos = s.at(1).get<int64_t>();
      seq.num_logits = s.at(2).get<int32_t>();
      if (tokens < 1 || seq.start_pos < 0 || seq.num_logits < 0) {
        fail("{}: a sequence needs tokens >= 1, start_pos >= 0, num_logits >= 0", where);
      }
      seq.tokens.resize(static_cast<size_t>(tokens));
      plan.seqs.push_back(std::move(seq));
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: {}", where, e.what());
  }
  if (plan.seqs.empty()) fail("{}: a step without sequences", where);
  if (!(execute_us > 0) || !(host_us >= 0)) {
    fail("{}: execute_us must be positive and host_us non-negative", where);
  }
  if (!(t_us >= 0)) fail("{}: t_us must be non-negative", where);
  if (stores < 0 || loads < 0) fail("{}: kv_stores and kv_loads must be non-negative", where);
  copied_blocks = std::max(stores, loads);
  const StepWork w = step_work(plan);
  ProfilePoint p = work_point(w, execute_us + host_us);
  p.padding_rows = graph_padding ? w.padding_rows : 0;
  p.t_us = t_us;
  return p;
}

}  // namespace

ProfileTable profile_from_step_logs(const std::vector<std::string>& paths,
                                    const ModelConfig& model, double host_kv_bytes_per_s) {
  if (paths.empty()) fail("--from-step-log: no file given");
  if (!(host_kv_bytes_per_s > 0)) fail("--host-kv-bandwidth must be positive");
  int64_t copy_steps = 0, dropped_steps = 0;
  ProfileTable table;
  std::optional<Header> first;
  // The logs laid end to end on one clock: each starts where the one before ended.
  double log_end_us = 0;
  for (const std::string& path : paths) {
    std::optional<double> shift;  // added to this log's clock
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open", path);
    std::string line;
    int64_t number = 0;
    std::optional<Header> header;
    while (std::getline(in, line)) {
      ++number;
      if (line.empty()) continue;
      const std::string where = fmt::format("{}:{}", path, number);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& e) {
        fail("{}: not JSON: {}", where, e.what());
      }
      if (!j.is_object()) fail("{}: not a JSON object", where);
      if (j.contains("header")) {
        if (header) fail("{}: a second header", where);
        header = parse_header(j["header"], where);
        if (header->model != model.name) {
          fail("{}: logged with model '{}', but the profile is for '{}' (pass --model {})", where,
               header->model, model.name, header->model);
        }
        if (first && (first->device != header->device || first->kv_blocks != header->kv_blocks ||
                      first->block_size != header->block_size ||
                      first->tensor_parallel_size != header->tensor_parallel_size)) {
          fail("{}: another device, KV cache or tensor-parallel size than {} (every log must come from "
               "one setup)",
               where, paths.front());
        }
        if (!first) first = header;
        continue;
      }
      if (!header) fail("{}: a step before the header line", where);
      int64_t copied_blocks = 0;
      ProfilePoint point = parse_step(j, header->device == "cuda", where, copied_blocks);
      if (copied_blocks > 0) {
        ++copy_steps;
        const double block_bytes = static_cast<double>(
            header->block_size * model.kv_bytes_per_token(header->kv_element_bytes));
        const double copy_us =
            static_cast<double>(copied_blocks) * block_bytes / host_kv_bytes_per_s * 1e6;
        if (point.time_us - copy_us <= 0) {
          ++dropped_steps;
          continue;
        }
        point.time_us -= copy_us;
      }
      if (!shift) shift = log_end_us - point.t_us;
      point.t_us += *shift;
      if (!table.points.empty() && point.t_us < table.points.back().t_us) {
        fail("{}: t_us goes back in time", where);
      }
      log_end_us = std::max(log_end_us, point.t_us + point.time_us);
      table.points.push_back(point);
    }
    if (!header) fail("{}: no header line (not a `paceline serve --step-log` file?)", path);
  }
  table.device = first->device;
  table.model = model.name;
  table.executor = fmt::format("{} server (step log)", first->device);
  table.block_size = first->block_size;
  table.tensor_parallel_size = first->tensor_parallel_size;
  table.kv_element_bytes = first->kv_element_bytes;
  table.kv_cache_bytes =
      first->kv_blocks * first->block_size * model.kv_bytes_per_token(first->kv_element_bytes);
  table.graph_padding = first->device == "cuda";
  table.repeats = 1;
  table.points_per_knot = 8;
  table.time_ordered = true;  // the steps in the order each log has them, the logs one after another
  table.notes = {fmt::format(
      "fitted by paceline profile --from-step-log to {} steps a server executed: each point is "
      "one engine iteration (Executor::execute plus the loop's scheduling, update and delivery)",
      table.points.size())};
  if (copy_steps > 0) {
    table.notes.push_back(fmt::format(
        "{} steps copied host-tier KV blocks: their copies ({:.0f} GB/s, --host-kv-bandwidth) were "
        "taken out of their time; {} steps left with no time were dropped",
        copy_steps, host_kv_bytes_per_s / 1e9, dropped_steps));
  }
  for (const std::string& p : paths) table.notes.push_back("step log: " + p);
  return table;
}

}  // namespace paceline::sim
