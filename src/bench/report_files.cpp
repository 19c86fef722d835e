#include "bench/report_files.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "base/error.h"
#include "bench/json_number.h"

namespace paceline::bench {

namespace {

nlohmann::json seconds_or_null(int64_t ns) {
  return ns < 0 ? nlohmann::json(nullptr) : nlohmann::json(static_cast<double>(ns) / 1e9);
}

nlohmann::json distribution_json(const Distribution& d) {
  return {{"count", d.count},
          {"mean", number_or_null(d.mean)},
          {"p50", number_or_null(d.p50)},
          {"p75", number_or_null(d.p75)},
          {"p90", number_or_null(d.p90)},
          {"p95", number_or_null(d.p95)},
          {"p99", number_or_null(d.p99)},
          {"std", number_or_null(d.std)},
          {"min", number_or_null(d.min)},
          {"max", number_or_null(d.max)}};
}

nlohmann::json interactivity_json(const Interactivity& i) {
  return {{"p50", number_or_null(i.p50)},
          {"p75", number_or_null(i.p75)},
          {"p90", number_or_null(i.p90)},
          {"p95", number_or_null(i.p95)},
          {"p99", number_or_null(i.p99)}};
}

// The CSV columns, in order, with the value of each.
std::vector<std::pair<std::string, nlohmann::json>> csv_columns(const Summary& s) {
  std::vector<std::pair<std::string, nlohmann::json>> cols = {
      {"valid", s.valid},
      {"requests_completed", s.requests_completed},
      {"requests_failed", s.requests_failed},
      {"requests_incomplete", s.requests_incomplete},
      {"context_overflows", s.context_overflows},
      {"duration_s", number_or_null(s.duration_s)},
      {"total_tok_s", number_or_null(s.total_tok_s)},
      {"output_tok_s", number_or_null(s.output_tok_s)},
      {"input_tok_s", number_or_null(s.input_tok_s)},
      {"total_tok_s_per_gpu", number_or_null(s.total_tok_s_per_gpu)},
      {"output_tok_s_per_gpu", number_or_null(s.output_tok_s_per_gpu)},
      {"input_tok_s_per_gpu", number_or_null(s.input_tok_s_per_gpu)},
      {"request_throughput", number_or_null(s.request_throughput)},
      {"goodput", number_or_null(s.goodput)},
      {"interactivity_p90", number_or_null(s.interactivity.p90)},
      {"e2e_norm_interactivity_p90", number_or_null(s.e2e_norm_interactivity.p90)},
      {"prefix_cache_hit", number_or_null(s.prefix_cache_hit)},
      {"trace_prefix_hit", number_or_null(s.trace_prefix_hit)},
      {"gpus", s.gpus},
  };
  for (const auto& [name, d] : {std::pair<const char*, const Distribution*>{"ttft_ms", &s.ttft_ms},
                                {"itl_ms", &s.itl_ms},
                                {"e2el_ms", &s.e2el_ms}}) {
    nlohmann::json j = distribution_json(*d);
    for (const char* stat : {"mean", "p50", "p75", "p90", "p95", "p99", "std"}) {
      cols.emplace_back(fmt::format("{}_{}", name, stat), j[stat]);
    }
  }
  return cols;
}

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

std::string cell(double v, const char* format) {
  return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : "n/a";
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("{}: cannot write", path.string());
  out << text;
  if (!out) fail("{}: write failed", path.string());
}

}  // namespace

nlohmann::json record_to_json(const RequestRecord& r, bool with_chunks,
                              std::optional<double> run_start_unix_s) {
  nlohmann::json j = {
      {"id", r.id},
      {"lane", r.lane},
      {"session", r.session},
      {"play", r.play},
      {"stream", r.stream},
      {"agent", r.agent},
      {"turn", r.turn},
      {"phase", phase_name(r.phase)},
      {"scheduled_s", seconds_or_null(r.scheduled_ns)},
      {"start_s", seconds_or_null(r.start_ns)},
      {"first_token_s", seconds_or_null(r.first_token_ns)},
      {"last_token_s", seconds_or_null(r.last_token_ns)},
      {"end_s", seconds_or_null(r.end_ns)},
      {"isl", r.isl},
      {"osl", r.osl},
      {"requested_isl", r.requested_isl},
      {"requested_osl", r.requested_osl},
      {"cached_tokens",
       r.cached_tokens < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.cached_tokens)},
      {"usage_reported", r.usage_reported},
      {"trace_reusable_tokens", r.trace_reusable_tokens},
      {"status", status_name(r.status)},
      {"http_status", r.http_status},
      {"error", r.error},
      {"context_overflow", r.context_overflow},
  };
  if (run_start_unix_s) {
    auto unix_or_null = [&](int64_t ns) {
      return ns < 0 ? nlohmann::json(nullptr)
                    : nlohmann::json(*run_start_unix_s + static_cast<double>(ns) / 1e9);
    };
    j["scheduled_unix_s"] = unix_or_null(r.scheduled_ns);
    j["start_unix_s"] = unix_or_null(r.start_ns);
    j["first_token_unix_s"] = unix_or_null(r.first_token_ns);
    j["end_unix_s"] = unix_or_null(r.end_ns);
  }
  if (r.ok()) {
    j["ttft_ms"] = static_cast<double>(r.first_token_ns - r.start_ns) / 1e6;
    j["e2el_ms"] = static_cast<double>(r.last_token_ns - r.start_ns) / 1e6;
  }
  if (with_chunks) {
    nlohmann::json chunks = nlohmann::json::array();
    for (size_t i = 0; i < r.chunk_ns.size(); ++i) {
      chunks.push_back({static_cast<double>(r.chunk_ns[i]) / 1e9, r.chunk_tokens[i]});
    }
    j["chunks"] = std::move(chunks);
  }
  return j;
}

void write_records_jsonl(std::ostream& out, const std::vector<RequestRecord>& records,
                         bool with_chunks, std::optional<double> run_start_unix_s) {
  for (const RequestRecord& r : records) {
    out << record_to_json(r, with_chunks, run_start_unix_s).dump() << '\n';
  }
}

nlohmann::json summary_to_json(const Summary& s, const nlohmann::json& settings) {
  nlohmann::json j = {
      {"valid", s.valid},
      {"invalid_reasons", s.invalid_reasons},
      {"warnings", s.warnings},
      {"requests_completed", s.requests_completed},
      {"requests_failed", s.requests_failed},
      {"requests_incomplete", s.requests_incomplete},
      {"context_overflows", s.context_overflows},
      {"warmup_requests", s.warmup_requests},
      {"requests_without_usage", s.requests_without_usage},
      {"ttft_ms", distribution_json(s.ttft_ms)},
      {"itl_ms", distribution_json(s.itl_ms)},
      {"tpot_ms", distribution_json(s.itl_ms)},
      {"e2el_ms", distribution_json(s.e2el_ms)},
      {"chunk_gap_ms", distribution_json(s.chunk_gap_ms)},
      {"e2el_per_token_ms", distribution_json(s.e2el_per_token_ms)},
      {"schedule_lag_ms", distribution_json(s.schedule_lag_ms)},
      {"interactivity", interactivity_json(s.interactivity)},
      {"interactivity_p90", number_or_null(s.interactivity.p90)},
      {"e2e_norm_interactivity", interactivity_json(s.e2e_norm_interactivity)},
      {"e2e_norm_interactivity_p90", number_or_null(s.e2e_norm_interactivity.p90)},
      {"duration_s", number_or_null(s.duration_s)},
      {"input_tokens", s.input_tokens},
      {"output_tokens", s.output_tokens},
      {"total_tok_s", number_or_null(s.total_tok_s)},
      {"output_tok_s", number_or_null(s.output_tok_s)},
      {"input_tok_s", number_or_null(s.input_tok_s)},
      {"total_tok_s_per_gpu", number_or_null(s.total_tok_s_per_gpu)},
      {"output_tok_s_per_gpu", number_or_null(s.output_tok_s_per_gpu)},
      {"input_tok_s_per_gpu", number_or_null(s.input_tok_s_per_gpu)},
      {"request_throughput", number_or_null(s.request_throughput)},
      {"goodput", number_or_null(s.goodput)},
      {"goodput_requests", s.goodput_requests},
      {"slo", format_slo(s.slo)},
      {"prefix_cache_hit", number_or_null(s.prefix_cache_hit)},
      {"trace_prefix_hit", number_or_null(s.trace_prefix_hit)},
      {"gpus", s.gpus},
      {"trace_files_skipped", s.trace_files_skipped},
      {"settings", settings},
  };
  return j;
}

void write_summary_csv(std::ostream& out, const Summary& summary) {
  auto cols = csv_columns(summary);
  for (size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i].first;
  out << '\n';
  for (size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << csv_cell(cols[i].second);
  out << '\n';
}

std::string markdown_table(const std::vector<MarkdownRow>& rows) {
  std::string out;
  for (const MarkdownRow& row : rows) {
    if (!row.summary->valid) {
      std::string reasons;
      for (const auto& r : row.summary->invalid_reasons)
        reasons += (reasons.empty() ? "" : "; ") + r;
      out += fmt::format("> **INVALID RUN** (CONC {}): {}\n", row.concurrency, reasons);
    }
  }
  if (!out.empty()) out += '\n';
  out +=
      "| CONC | delayer | total tok/s | per GPU | output tok/s | TTFT p50 (ms) | TTFT p90 (ms) "
      "| ITL p50 (ms) | ITL p90 (ms) | interactivity p90 (tok/s/user) | hold rate |\n"
      "| ---: | :---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const MarkdownRow& row : rows) {
    const Summary& s = *row.summary;
    out +=
        fmt::format("| {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", row.concurrency,
                    s.valid ? "" : " (invalid)", row.delayer.empty() ? "n/a" : row.delayer,
                    cell(s.total_tok_s, "{:.1f}"), cell(s.total_tok_s_per_gpu, "{:.1f}"),
                    cell(s.output_tok_s, "{:.1f}"), cell(s.ttft_ms.p50, "{:.1f}"),
                    cell(s.ttft_ms.p90, "{:.1f}"), cell(s.itl_ms.p50, "{:.2f}"),
                    cell(s.itl_ms.p90, "{:.2f}"), cell(s.interactivity.p90, "{:.1f}"),
                    row.hold_rate ? cell(*row.hold_rate * 100.0, "{:.1f}%") : std::string("n/a"));
  }
  return out;
}

void write_run_files(const std::string& dir, const std::vector<RequestRecord>& records,
                     const Summary& summary, const nlohmann::json& settings,
                     std::optional<double> run_start_unix_s) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("{}: cannot create the output directory: {}", dir, ec.message());
  std::ostringstream jsonl;
  write_records_jsonl(jsonl, records, true, run_start_unix_s);
  write_file(fs::path(dir) / "records.jsonl", jsonl.str());
  write_file(fs::path(dir) / "summary.json", summary_to_json(summary, settings).dump(2) + "\n");
  std::ostringstream csv;
  write_summary_csv(csv, summary);
  write_file(fs::path(dir) / "summary.csv", csv.str());
}

}  // namespace paceline::bench
