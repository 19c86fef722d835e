#include "bench/report_read.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/error.h"
#include "bench/json_number.h"

namespace paceline::bench {

namespace {

int64_t count(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

Distribution distribution(const nlohmann::json& j, const char* key) {
  Distribution d;
  auto it = j.find(key);
  if (it == j.end() || !it->is_object()) {
    d.mean = d.std = d.min = d.max = d.p50 = d.p75 = d.p90 = d.p95 = d.p99 = kNaN;
    return d;
  }
  const nlohmann::json& o = *it;
  d.count = static_cast<size_t>(count(o, "count"));
  d.mean = number_or_nan(o, "mean");
  d.std = number_or_nan(o, "std");
  d.min = number_or_nan(o, "min");
  d.max = number_or_nan(o, "max");
  d.p50 = number_or_nan(o, "p50");
  d.p75 = number_or_nan(o, "p75");
  d.p90 = number_or_nan(o, "p90");
  d.p95 = number_or_nan(o, "p95");
  d.p99 = number_or_nan(o, "p99");
  return d;
}

Interactivity interactivity(const nlohmann::json& j, const char* key, const char* p90_key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  auto it = j.find(key);
  const nlohmann::json& o = it != j.end() && it->is_object() ? *it : kEmpty;
  Interactivity i{number_or_nan(o, "p50"), number_or_nan(o, "p75"), number_or_nan(o, "p90"),
                  number_or_nan(o, "p95"), number_or_nan(o, "p99")};
  // The headline key is the one the issue names; the object is the fallback.
  if (double headline = number_or_nan(j, p90_key); std::isfinite(headline)) i.p90 = headline;
  return i;
}

std::vector<std::string> strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it) out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

// The first of `keys` holding a number, looked up in the summary then in its settings.
std::optional<double> first_number(const nlohmann::json& summary, const nlohmann::json& settings,
                                   std::initializer_list<const char*> keys) {
  for (const nlohmann::json* j : {&summary, &settings}) {
    for (const char* key : keys) {
      double v = json_number_at(*j, key);
      if (std::isfinite(v)) return v;
    }
  }
  return std::nullopt;
}

std::string delayer_of(const nlohmann::json& summary, const nlohmann::json& settings) {
  for (const nlohmann::json* j : {&settings, &summary}) {
    for (const char* key : {"delayer", "prefill_delayer"}) {
      auto it = j->find(key);
      if (it == j->end()) continue;
      if (it->is_boolean()) return it->get<bool>() ? "on" : "off";
      if (it->is_string()) return it->get<std::string>();
    }
  }
  return "";
}

bool truthy(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::vector<std::string> scaling_of(const nlohmann::json& settings) {
  std::vector<std::string> out;
  for (const char* key : {"isl_scale", "osl_scale"}) {
    double v = number_or_nan(settings, key);
    if (std::isfinite(v) && v != 1.0) out.push_back(fmt::format("--{} {}", key, v));
  }
  double max_isl = number_or_nan(settings, "max_isl");
  if (std::isfinite(max_isl) && max_isl > 0) {
    out.push_back(fmt::format("--max-isl {} (longer requests skipped)", max_isl));
  }
  for (std::string& line : out) {
    for (char& c : line) {
      if (c == '_') c = '-';
    }
  }
  if (out.empty() && truthy(settings, "scaled")) out.push_back("transformed trace");
  return out;
}

}  // namespace

double json_number_at(const nlohmann::json& j, const std::string& dotted_path) {
  const nlohmann::json* cur = &j;
  size_t i = 0;
  while (i <= dotted_path.size()) {
    size_t dot = dotted_path.find('.', i);
    if (dot == std::string::npos) dot = dotted_path.size();
    if (!cur->is_object()) return kNaN;
    auto it = cur->find(dotted_path.substr(i, dot - i));
    if (it == cur->end()) return kNaN;
    cur = &*it;
    i = dot + 1;
  }
  return cur->is_number() ? cur->get<double>() : kNaN;
}

Summary summary_from_json(const nlohmann::json& j) {
  Summary s;
  s.requests_completed = count(j, "requests_completed");
  s.requests_failed = count(j, "requests_failed");
  s.requests_incomplete = count(j, "requests_incomplete");
  s.context_overflows = count(j, "context_overflows");
  s.warmup_requests = count(j, "warmup_requests");
  s.requests_without_usage = count(j, "requests_without_usage");
  s.ttft_ms = distribution(j, "ttft_ms");
  s.itl_ms = distribution(j, "itl_ms");
  s.e2el_ms = distribution(j, "e2el_ms");
  s.chunk_gap_ms = distribution(j, "chunk_gap_ms");
  s.e2el_per_token_ms = distribution(j, "e2el_per_token_ms");
  s.schedule_lag_ms = distribution(j, "schedule_lag_ms");
  s.interactivity = interactivity(j, "interactivity", "interactivity_p90");
  s.e2e_norm_interactivity =
      interactivity(j, "e2e_norm_interactivity", "e2e_norm_interactivity_p90");
  s.duration_s = number_or_nan(j, "duration_s");
  s.input_tokens = count(j, "input_tokens");
  s.output_tokens = count(j, "output_tokens");
  s.total_tok_s = number_or_nan(j, "total_tok_s");
  s.output_tok_s = number_or_nan(j, "output_tok_s");
  s.input_tok_s = number_or_nan(j, "input_tok_s");
  s.total_tok_s_per_gpu = number_or_nan(j, "total_tok_s_per_gpu");
  s.output_tok_s_per_gpu = number_or_nan(j, "output_tok_s_per_gpu");
  s.input_tok_s_per_gpu = number_or_nan(j, "input_tok_s_per_gpu");
  s.request_throughput = number_or_nan(j, "request_throughput");
  s.goodput_requests = count(j, "goodput_requests");
  s.goodput = number_or_nan(j, "goodput");
  s.prefix_cache_hit = number_or_nan(j, "prefix_cache_hit");
  s.trace_prefix_hit = number_or_nan(j, "trace_prefix_hit");
  s.gpus = static_cast<int>(count(j, "gpus"));
  if (s.gpus <= 0) s.gpus = 1;
  if (auto it = j.find("slo"); it != j.end() && it->is_string())
    s.slo = parse_slo(it->get<std::string>());
  s.valid = !j.contains("valid") || !j["valid"].is_boolean() || j["valid"].get<bool>();
  s.invalid_reasons = strings(j, "invalid_reasons");
  s.warnings = strings(j, "warnings");
  return s;
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) fail("{}: not valid JSON", path);
  return j;
}

std::string dir_display_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  return name.empty() || name == "." ? dir : name;
}

RunSummary read_run_summary(const std::string& run_dir) {
  RunSummary r;
  r.dir = run_dir;
  r.json = read_json_file((std::filesystem::path(run_dir) / "summary.json").string());
  if (!r.json.is_object()) fail("{}/summary.json: expected a JSON object", run_dir);
  auto it = r.json.find("settings");
  r.settings = it != r.json.end() && it->is_object() ? *it : nlohmann::json::object();
  r.summary = summary_from_json(r.json);
  r.concurrency = static_cast<int>(count(r.settings, "concurrency"));
  r.delayer = delayer_of(r.json, r.settings);
  r.hold_rate =
      first_number(r.json, r.settings,
                   {"hold_rate", "delayer_hold_rate", "server_metrics.prefill_delayer_hold_rate"});
  auto mode = r.settings.find("mode");
  r.simulated = truthy(r.json, "simulated") || truthy(r.settings, "simulated") ||
                (mode != r.settings.end() && mode->is_string() && *mode == "sim");
  r.scaling = scaling_of(r.settings);
  return r;
}

}  // namespace paceline::bench
