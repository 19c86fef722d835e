#include "bench/report_html.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/report_page.h"
#include "bench/report_read.h"
#include "bench/report_records.h"
#include "bench/svg_chart.h"

namespace paceline::bench {

namespace {

namespace fs = std::filesystem;

std::string setting_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "n/a";
  return v.dump();
}

std::string banners(const RunSummary& run) {
  const Summary& s = run.summary;
  std::string out;
  if (!s.valid) {
    std::string reasons;
    for (const auto& r : s.invalid_reasons) reasons += (reasons.empty() ? "" : "; ") + r;
    out += html_banner("invalid", fmt::format("INVALID RUN (CONC {}): {}", run.concurrency,
                                              reasons.empty() ? "see summary.json" : reasons));
  }
  if (run.simulated) {
    out += html_banner("note",
                       "Simulated run: these numbers come from paceline's simulator, "
                       "not from a server.");
  }
  if (!run.scaling.empty()) {
    std::string how;
    for (const auto& line : run.scaling) how += (how.empty() ? "" : ", ") + line;
    out += html_banner("warning",
                       "Scaled trace (" + how + "): not comparable with a run of the full trace.");
  }
  for (const auto& w : s.warnings) out += html_banner("warning", "Warning: " + w);
  return out;
}

std::string settings_table(const RunSummary& run) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& [key, value] : run.settings.items()) {
    rows.push_back({xml_escape(key), xml_escape(setting_text(value))});
  }
  // What the report concluded from the settings, in case they say it under other names.
  if (!run.settings.contains("simulated"))
    rows.push_back({"simulated", run.simulated ? "yes" : "no"});
  rows.push_back({"scaled trace", run.scaling.empty() ? "no" : "<b>yes</b>"});
  return "<h2>Settings</h2>\n" + html_table({"setting", "value"}, rows);
}

std::string results_table(const RunSummary& run) {
  const Summary& s = run.summary;
  auto n = [](double v, int d) { return format_number(v, d); };
  std::vector<std::vector<std::string>> rows = {
      {"valid", s.valid ? "yes" : "<b>no</b>"},
      {"requests completed / failed / incomplete",
       fmt::format("{} / {} / {}", s.requests_completed, s.requests_failed, s.requests_incomplete)},
      {"duration (s)", n(s.duration_s, 1)},
      {"total tok/s", n(s.total_tok_s, 1)},
      {"output tok/s", n(s.output_tok_s, 1)},
      {"input tok/s", n(s.input_tok_s, 1)},
      {fmt::format("total tok/s per GPU ({} GPU)", s.gpus), n(s.total_tok_s_per_gpu, 1)},
      {"output tok/s per GPU", n(s.output_tok_s_per_gpu, 1)},
      {"request throughput (req/s)", n(s.request_throughput, 3)},
      {"goodput (req/s)", n(s.goodput, 3)},
      {"interactivity p90 (tok/s/user)", n(s.interactivity.p90, 1)},
      {"E2E-normalized interactivity p90 (tok/s/user)", n(s.e2e_norm_interactivity.p90, 1)},
      {"prefix cache hit", format_percent(s.prefix_cache_hit)},
      {"trace prefix hit (infinite cache)", format_percent(s.trace_prefix_hit)},
  };
  if (run.hold_rate) rows.push_back({"delayer hold rate", format_percent(*run.hold_rate)});
  return "<h2>Results</h2>\n" + html_table({"metric", "value"}, rows);
}

std::string latency_table(const Summary& s) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, d] : {std::pair<const char*, const Distribution*>{"TTFT", &s.ttft_ms},
                                {"ITL (TPOT)", &s.itl_ms},
                                {"E2EL", &s.e2el_ms},
                                {"E2EL per token", &s.e2el_per_token_ms},
                                {"chunk gap", &s.chunk_gap_ms},
                                {"schedule lag", &s.schedule_lag_ms}}) {
    rows.push_back({name, std::to_string(d->count), format_number(d->mean, 2),
                    format_number(d->p50, 2), format_number(d->p90, 2), format_number(d->p99, 2),
                    format_number(d->std, 2)});
  }
  return "<h2>Latencies (ms)</h2>\n" +
         html_table({"metric", "count", "mean", "p50", "p90", "p99", "std"}, rows);
}

Chart cdf_chart(const std::string& title, const std::string& x_label,
                const std::vector<double>& values, const char* color) {
  Chart c;
  c.title = fmt::format("{} distribution (CDF, {} requests)", title, values.size());
  c.x.label = x_label;
  c.y.label = "fraction of requests at or below";
  ChartSeries s;
  s.style = SeriesStyle::kStep;
  s.color = color;
  for (const auto& [v, f] : cdf_points(values)) s.points.push_back({v, f, ""});
  c.series.push_back(std::move(s));
  return c;
}

std::string charts(const std::string& run_dir) {
  fs::path records = fs::path(run_dir) / "records.jsonl";
  RecordSeries rs;
  std::string note;
  if (fs::exists(records)) {
    rs = read_record_series(records.string());
  } else {
    note = html_banner("note", "records.jsonl not found: no per-request charts.");
  }
  Chart tput;
  tput.title = fmt::format("Output throughput over time ({:g} s buckets)", rs.bucket_s);
  tput.x.label = "time since profiling started (s)";
  tput.y.label = "output tok/s";
  ChartSeries s;
  s.style = SeriesStyle::kLinePoints;
  s.color = "#1f77b4";
  for (const ThroughputBucket& b : rs.output_throughput) {
    s.points.push_back({b.start_s + b.width_s / 2, b.output_tok_s,
                        fmt::format("{:g}-{:g} s", b.start_s, b.start_s + b.width_s)});
  }
  tput.series.push_back(std::move(s));
  return "<h2>Charts</h2>\n" + note + "<div class=\"charts\">\n" + render_svg(tput) +
         render_svg(cdf_chart("TTFT", "TTFT (ms)", rs.ttft_ms, "#d62728")) +
         render_svg(cdf_chart("ITL", "ITL per request (ms)", rs.itl_ms, "#2ca02c")) + "</div>\n";
}

}  // namespace

std::string run_report_html(const std::string& run_dir) {
  RunSummary run = read_run_summary(run_dir);
  std::string title = "paceline bench: " + dir_display_name(run_dir);
  if (run.concurrency > 0) title += fmt::format(" (CONC {})", run.concurrency);
  if (run.simulated) title += " [simulated]";
  std::string body = banners(run) + results_table(run) + latency_table(run.summary) +
                     charts(run_dir) + settings_table(run);
  return html_page(title, body);
}

void write_report_html(const std::string& run_dir) {
  std::string html = run_report_html(run_dir);
  fs::path path = fs::path(run_dir) / "report.html";
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("{}: cannot write", path.string());
  out << html;
  if (!out) fail("{}: write failed", path.string());
}

}  // namespace paceline::bench
