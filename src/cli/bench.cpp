#include "cli/bench.h"

#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "bench/arrival_replayer.h"
#include "bench/http_transport.h"
#include "bench/metrics_scrape.h"
#include "bench/progress.h"
#include "bench/realtime_driver.h"
#include "bench/report_files.h"
#include "bench/session_replayer.h"
#include "bench/trace_transform.h"
#if __has_include("bench/report_html.h")
#include "bench/report_html.h"
#define PACELINE_BENCH_HAS_REPORT_HTML 1
#endif

namespace paceline {

namespace fs = std::filesystem;

namespace {

// The traces, transformed: AgentX sessions (a folder or a .json) or Mooncake records (.jsonl).
struct LoadedTraces {
  bool open_loop = false;
  std::vector<bench::AgentxSession> sessions;
  std::vector<bench::MooncakeRecord> records;
  bench::TransformStats stats;
};

LoadedTraces load_traces(const BenchOptions& o) {
  LoadedTraces t;
  if (!fs::exists(o.replay.traces)) fail("--traces {}: no such file or directory", o.replay.traces);
  bench::TraceTransform transform = o.replay.transform();
  if (fs::is_regular_file(o.replay.traces) && fs::path(o.replay.traces).extension() == ".jsonl") {
    t.open_loop = true;
    t.records = bench::transform_records(bench::load_mooncake(o.replay.traces), transform,
                                         bench::kMooncakeBlockSize, &t.stats);
    if (t.records.empty()) fail("{}: no records", o.replay.traces);
  } else {
    t.sessions =
        bench::transform_sessions(bench::load_agentx(o.replay.traces), transform, &t.stats);
    if (t.sessions.empty()) fail("{}: no sessions", o.replay.traces);
  }
  return t;
}

// Every stream holds a socket: lift the soft limit on open files to the hard one.
void raise_open_file_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json settings_json(const BenchOptions& o, const LoadedTraces& t, int concurrency,
                             const std::string& model) {
  bench::TraceTransform transform = o.replay.transform();
  nlohmann::json settings = {
      {"mode", "bench"},
      {"simulated", false},
      {"paceline_version", PACELINE_VERSION},
      {"started_at", utc_now()},
      {"url", bench::parse_http_url(o.url).str()},
      {"model", model},
      {"endpoint", o.endpoint},
      {"session_id_header", o.session_id_header},
      {"trace_kind", t.open_loop ? "mooncake" : "agentx"},
      {"open_loop", t.open_loop},
      {"concurrency", concurrency},
      {"seed", o.seed},
      {"scaled", !transform.identity()},
      {"trace_transform", bench::transform_json(transform, t.stats)},
  };
  settings.update(replay_settings_json(o.replay));
  return settings;
}

// The table's delayer column: as given, else "on" when the server reports delayer decisions,
// "off" for a paceline server that reports none, unknown for other servers.
std::string delayer_label(const BenchOptions& o, const std::optional<double>& hold_rate,
                          const bench::MetricsScraper* scraper) {
  if (!o.delayer.empty()) return o.delayer;
  if (hold_rate) return "on";
  if (scraper && scraper->server_family() == "paceline") return "off";
  return "";
}

std::unique_ptr<bench::Replay> make_replay(const BenchOptions& o, const LoadedTraces& t,
                                           int concurrency, bench::Transport& transport) {
  if (t.open_loop) {
    return std::make_unique<bench::ArrivalReplayer>(
        t.records, arrival_replay_config(o.replay, o.seed), transport);
  }
  return std::make_unique<bench::SessionReplayer>(
      t.sessions, session_replay_config(o.replay, concurrency, o.seed), transport);
}

}  // namespace

void add_bench_options(CLI::App& cmd, BenchOptions& o, bool with_run_dir) {
  cmd.add_option("--url", o.url, "the server, e.g. http://127.0.0.1:8000")->capture_default_str();
  add_replay_options(cmd, o.replay);
  if (with_run_dir) {
    cmd.add_option("--concurrency", o.concurrency, "lanes (closed loop)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    cmd.add_option("--out", o.out, "output directory")->capture_default_str();
  }
  cmd.add_option("--seed", o.seed, "sampler, start window, markers and prompts")
      ->capture_default_str();
  cmd.add_option("--endpoint", o.endpoint, "chat (text prompts) or completions (token ids)")
      ->check(CLI::IsMember({"chat", "completions"}))
      ->capture_default_str();
  cmd.add_option("--model", o.model, "model name to send (default: first of GET /v1/models)");
  cmd.add_option("--api-key", o.api_key, "sent as 'Authorization: Bearer KEY'")
      ->envname("PACELINE_API_KEY");
  cmd.add_flag("--session-id-header", o.session_id_header,
               "send X-Session-ID: the agent session of each request, for a router's affinity "
               "(nginx: hash $http_x_session_id consistent)");
  cmd.add_option("--delayer", o.delayer, "the table's delayer column (default: from /metrics)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd.add_flag("!--no-metrics", o.scrape_metrics, "do not scrape the server's /metrics");
  cmd.add_option("--chat-overhead-tokens", o.chat_overhead_tokens,
                 "prompt tokens the marker and chat template add (-1: estimate)")
      ->capture_default_str();
}

BenchResult run_bench_point(const BenchOptions& o, int concurrency, const std::string& run_dir) {
  bench::HttpTransportOptions http;
  http.url = bench::parse_http_url(o.url);
  http.endpoint = bench::parse_endpoint(o.endpoint);
  http.api_key = o.api_key;
  http.session_id_header = o.session_id_header;
  http.text.seed = o.seed;
  http.text.overhead_tokens =
      o.chat_overhead_tokens >= 0 ? o.chat_overhead_tokens : bench::kDefaultChatOverheadTokens;
  http.tokens.seed = o.seed;
  const bench::SummaryOptions summary = summary_options(o.replay);

  const LoadedTraces traces = load_traces(o);
  const bench::TraceTransform transform = o.replay.transform();
  if (!transform.identity()) {
    spdlog::warn(
        "bench: transformed trace ({}): {} of {} requests kept; not comparable with "
        "full-trace runs",
        bench::describe_transform(transform), traces.stats.requests_kept, traces.stats.requests_in);
  }
  http.model = o.model.empty()
                   ? bench::first_model_id(bench::http_get(http.url, "/v1/models", o.api_key,
                                                           std::chrono::seconds(10)),
                                           http.url)
                   : o.model;
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) fail("{}: cannot create the output directory: {}", run_dir, ec.message());
  raise_open_file_limit();

  boost::asio::io_context io(1);
  SteadyClock clock;
  bench::HttpTransport transport(io, http, clock);
  std::unique_ptr<bench::Replay> replay = make_replay(o, traces, concurrency, transport);
  auto* sessions = dynamic_cast<bench::SessionReplayer*>(replay.get());
  bench::RealtimeDriver driver(io, *replay, clock);
  transport.set_after_finish([&driver] { driver.poke(); });

  std::unique_ptr<bench::MetricsScraper> scraper;
  if (o.scrape_metrics) {
    scraper = std::make_unique<bench::MetricsScraper>(
        io, http.url, o.api_key, clock, (fs::path(run_dir) / "metrics.jsonl").string());
  }
  bench::ProgressLine progress;
  int64_t last_chunks = 0, last_tick_ns = 0;
  if (progress.enabled()) {
    driver.set_ticker(std::chrono::seconds(1), [&](int64_t now) {
      bench::ProgressSnapshot s;
      int64_t begin = driver.started_ns();
      if (sessions) {
        s.profiling = sessions->profiling_start_ns().has_value();
        if (s.profiling) begin = *sessions->profiling_start_ns();
      } else {
        s.profiling = true;
      }
      s.elapsed_s = static_cast<double>(now - begin) / 1e9;
      s.duration_s = o.replay.duration;
      s.counts = bench::count_progress(replay->log());
      int64_t chunks = transport.content_chunks();
      if (last_tick_ns > 0 && now > last_tick_ns) {
        s.tok_s = static_cast<double>(chunks - last_chunks) * 1e9 /
                  static_cast<double>(now - last_tick_ns);
      }
      last_chunks = chunks;
      last_tick_ns = now;
      progress.update(s);
    });
  }
  driver.set_on_finished([&] {
    if (scraper) scraper->stop();
    transport.close_all();
  });
  if (scraper) {
    boost::asio::post(io, [&] { scraper->start_at(driver.started_ns()); });
  }
  spdlog::info("bench: {} {} at concurrency {} against {} (model '{}', {} endpoint) -> {}",
               traces.open_loop ? traces.records.size() : traces.sessions.size(),
               traces.open_loop ? "Mooncake records" : "AgentX sessions", concurrency,
               http.url.str(), http.model, o.endpoint, run_dir);
  driver.run();
  progress.end();

  BenchResult result;
  result.cancelled = driver.interrupted();
  if (sessions) result.abort_reason = sessions->abort_reason();
  const auto& records = replay->log().records();
  result.summary = bench::summarize(records, summary);
  bench::Summary& s = result.summary;
  if (result.abort_reason) {
    s.valid = false;
    s.invalid_reasons.insert(s.invalid_reasons.begin(), *result.abort_reason);
  }
  if (result.cancelled) s.warnings.push_back("the run was cancelled (Ctrl-C) before its end");
  if (!transform.identity()) {
    s.warnings.push_back(fmt::format("transformed trace ({}): not comparable with full-trace runs",
                                     bench::describe_transform(transform)));
  }
  std::optional<int64_t> profiling_start =
      sessions ? sessions->profiling_start_ns() : std::optional<int64_t>(driver.started_ns());
  if (scraper && profiling_start) result.hold_rate = scraper->hold_rate(*profiling_start);
  result.delayer = delayer_label(o, result.hold_rate, scraper.get());

  nlohmann::json settings = settings_json(o, traces, concurrency, http.model);
  settings["cancelled"] = result.cancelled;
  settings["abort_reason"] =
      result.abort_reason ? nlohmann::json(*result.abort_reason) : nlohmann::json(nullptr);
  settings["delayer"] = result.delayer;
  settings["hold_rate"] = result.hold_rate ? nlohmann::json(*result.hold_rate) : nlohmann::json();
  settings["client"] = {
      {"schedule_lag_p50_ms", std::isfinite(s.schedule_lag_ms.p50)
                                  ? nlohmann::json(s.schedule_lag_ms.p50)
                                  : nlohmann::json()},
      {"schedule_lag_p99_ms", std::isfinite(s.schedule_lag_ms.p99)
                                  ? nlohmann::json(s.schedule_lag_ms.p99)
                                  : nlohmann::json()},
      {"connections_opened", transport.connections_opened()},
      {"metrics_scrapes", scraper ? scraper->scrapes() : 0},
      {"idle_skipped_s", sessions ? static_cast<double>(sessions->idle_skipped_ns()) / 1e9 : 0.0},
  };
  bench::write_run_files(run_dir, records, s, settings);
#ifdef PACELINE_BENCH_HAS_REPORT_HTML
  try {
    bench::write_report_html(run_dir);
  } catch (const Error& e) {
    spdlog::warn("bench: report.html not written: {}", e.what());
  }
#endif
  return result;
}

int run_bench(const BenchOptions& o) {
  BenchResult r = run_bench_point(o, o.concurrency, o.out);
  const bench::Summary& s = r.summary;
  const bench::TraceTransform transform = o.replay.transform();
  if (!transform.identity()) {
    std::printf(
        "> **TRANSFORMED TRACE** (%s): lengths differ from the recording; not comparable "
        "with full-trace runs\n\n",
        bench::describe_transform(transform).c_str());
  }
  if (r.cancelled) std::printf("> **CANCELLED**: the run was stopped before its end\n\n");
  bench::MarkdownRow row{&s, o.concurrency, r.delayer, r.hold_rate};
  std::printf("%s", bench::markdown_table({row}).c_str());
  auto ms = [](double v) { return std::isfinite(v) ? fmt::format("{:.2f} ms", v) : "n/a"; };
  std::printf("\n%s\n", fmt::format("{} ok, {} failed, {} incomplete, {} warmup; client schedule "
                                    "lag p50 {}, p99 {}; files in {}",
                                    s.requests_completed, s.requests_failed, s.requests_incomplete,
                                    s.warmup_requests, ms(s.schedule_lag_ms.p50),
                                    ms(s.schedule_lag_ms.p99), o.out)
                            .c_str());
  for (const std::string& w : s.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::fflush(stdout);
  if (r.abort_reason) {
    std::fprintf(stderr, "error: %s\n", r.abort_reason->c_str());
    return 1;
  }
  return r.cancelled ? 130 : 0;
}

}  // namespace paceline
