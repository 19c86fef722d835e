#include "bench/sweep_table.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "bench/report_files.h"
#include "bench/report_page.h"
#include "bench/svg_chart.h"
#include "bench/sweep_manifest.h"

namespace paceline::bench {

namespace {

namespace fs = std::filesystem;

// "off" before "on", unknown last, so a delayer A/B reads as baseline then change.
int delayer_rank(const std::string& d) {
  if (d == "off") return 0;
  if (d == "on") return 1;
  return d.empty() ? 3 : 2;
}

std::string relative_name(const RunSummary& run, const std::string& sweep_dir) {
  std::string rel = fs::path(run.dir).lexically_relative(sweep_dir).generic_string();
  return rel.empty() || rel.starts_with("..") ? dir_display_name(run.dir) : rel;
}

}  // namespace

void sort_sweep_runs(std::vector<RunSummary>& runs) {
  std::stable_sort(runs.begin(), runs.end(), [](const RunSummary& a, const RunSummary& b) {
    if (a.concurrency != b.concurrency) return a.concurrency < b.concurrency;
    if (delayer_rank(a.delayer) != delayer_rank(b.delayer)) {
      return delayer_rank(a.delayer) < delayer_rank(b.delayer);
    }
    return a.dir < b.dir;
  });
}

std::vector<RunSummary> read_sweep_runs(const std::string& sweep_dir) {
  SweepManifest manifest = read_sweep_manifest(sweep_dir);
  std::vector<RunSummary> runs;
  for (const SweepEntry& e : manifest.runs) {
    RunSummary r = read_run_summary((fs::path(sweep_dir) / e.dir).string());
    if (r.concurrency == 0) r.concurrency = e.concurrency;
    if (r.delayer.empty()) r.delayer = e.delayer;
    runs.push_back(std::move(r));
  }
  sort_sweep_runs(runs);
  return runs;
}

std::string sweep_markdown(const std::vector<RunSummary>& runs) {
  std::vector<MarkdownRow> rows;
  for (const RunSummary& r : runs) {
    rows.push_back({&r.summary, r.concurrency, r.delayer, r.hold_rate});
  }
  return markdown_table(rows);
}

std::string sweep_table_html(const std::vector<RunSummary>& runs, const std::string& sweep_dir) {
  std::string banners;
  std::vector<std::vector<std::string>> rows;
  for (const RunSummary& r : runs) {
    const Summary& s = r.summary;
    if (!s.valid) {
      std::string reasons;
      for (const auto& why : s.invalid_reasons) reasons += (reasons.empty() ? "" : "; ") + why;
      banners +=
          html_banner("invalid", fmt::format("INVALID RUN (CONC {}): {}", r.concurrency, reasons));
    }
    std::string name = relative_name(r, sweep_dir);
    std::string link = fs::exists(fs::path(r.dir) / "report.html")
                           ? fmt::format("<a href=\"{0}/report.html\">{0}</a>", xml_escape(name))
                           : xml_escape(name);
    rows.push_back({
        fmt::format("{}{}", r.concurrency, s.valid ? "" : " <b>(invalid)</b>"),
        xml_escape(r.delayer.empty() ? "n/a" : r.delayer),
        format_number(s.total_tok_s, 1),
        format_number(s.total_tok_s_per_gpu, 1),
        format_number(s.output_tok_s, 1),
        format_number(s.ttft_ms.p50, 1),
        format_number(s.ttft_ms.p90, 1),
        format_number(s.itl_ms.p50, 2),
        format_number(s.itl_ms.p90, 2),
        format_number(s.interactivity.p90, 1),
        format_number(s.e2e_norm_interactivity.p90, 1),
        r.hold_rate ? format_percent(*r.hold_rate) : "n/a",
        link,
    });
  }
  return banners + html_table({"CONC", "delayer", "total tok/s", "per GPU", "output tok/s",
                               "TTFT p50 (ms)", "TTFT p90 (ms)", "ITL p50 (ms)", "ITL p90 (ms)",
                               "interactivity p90 (tok/s/user)",
                               "E2E-norm. interactivity p90 (tok/s/user)", "hold rate", "run"},
                              rows);
}

}  // namespace paceline::bench
