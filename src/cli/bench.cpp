#include "cli/bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
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
#include "bench/synthetic_load.h"
#include "bench/trace_transform.h"
#if __has_include("bench/report_html.h")
#include "bench/report_html.h"
#define PACELINE_BENCH_HAS_REPORT_HTML 1
#endif

namespace paceline {

namespace fs = std::filesystem;

namespace {

// The traces, transformed: AgentX sessions (a folder or a .json), Mooncake records (.jsonl), or
// the random dataset's records; open-loop records spaced by --request-rate when it is given.
struct LoadedTraces {
  bool open_loop = false;
  bool synthetic = false;  // --dataset random
  std::vector<bench::AgentxSession> sessions;
  std::vector<bench::MooncakeRecord> records;
  std::vector<bench::TraceSkip> skipped;  // AgentX files left out
  bench::TransformStats stats;
};

bench::ArrivalProcess arrival_process(const BenchOptions& o) {
  bench::ArrivalProcess p;
  p.rate = o.request_rate.value_or(p.rate);
  p.burstiness = o.burstiness.value_or(p.burstiness);
  p.seed = o.seed;
  return p;
}

// The flags that only make sense for open-loop requests, checked against what was loaded.
void check_open_loop_flags(const BenchOptions& o, const LoadedTraces& t) {
  if (t.open_loop) return;
  const char* flag = o.request_rate    ? "--request-rate"
                     : o.burstiness    ? "--burstiness"
                     : o.request_count ? "--request-count"
                                       : nullptr;
  if (flag) {
    fail(
        "{}: AgentX sessions replay closed loop (each lane waits for its answers); use it with a "
        "Mooncake .jsonl or --dataset random",
        flag);
  }
}

LoadedTraces load_traces(const BenchOptions& o) {
  LoadedTraces t;
  bench::TraceTransform transform = o.replay.transform();
  if (o.burstiness && !o.request_rate) fail("--burstiness needs --request-rate");
  if (o.dataset == "random") {
    if (!o.replay.traces.empty()) fail("--dataset random makes its own requests: drop --traces");
    bench::RandomDataset d;
    d.count = o.request_count.value_or(d.count);
    d.input_len = o.random_input_len;
    d.output_len = o.random_output_len;
    d.range_ratio = o.random_range_ratio;
    d.seed = o.seed;
    t.open_loop = t.synthetic = true;
    t.records = bench::transform_records(bench::random_dataset(d), transform,
                                         bench::kMooncakeBlockSize, &t.stats);
  } else if (o.replay.traces.empty()) {
    fail(
        "--traces is required (an AgentX folder or .json, a Mooncake .jsonl), or --dataset random");
  } else if (!fs::exists(o.replay.traces)) {
    fail("--traces {}: no such file or directory", o.replay.traces);
  } else if (fs::is_regular_file(o.replay.traces) &&
             fs::path(o.replay.traces).extension() == ".jsonl") {
    t.open_loop = true;
    std::vector<bench::MooncakeRecord> records = bench::load_mooncake(o.replay.traces);
    if (o.request_count) {
      if (*o.request_count < 1)
        fail("--request-count must be at least 1, got {}", *o.request_count);
      if (static_cast<size_t>(*o.request_count) < records.size()) records.resize(*o.request_count);
    }
    t.records = bench::transform_records(std::move(records), transform, bench::kMooncakeBlockSize,
                                         &t.stats);
    if (t.records.empty()) fail("{}: no records", o.replay.traces);
  } else {
    t.sessions = bench::transform_sessions(
        bench::load_agentx(o.replay.traces, o.replay.strict, &t.skipped), transform, &t.stats);
    if (t.sessions.empty()) fail("{}: no sessions", o.replay.traces);
  }
  check_open_loop_flags(o, t);
  if (o.request_rate) bench::set_arrival_times(t.records, arrival_process(o));
  return t;
}

// Open-loop runs of a fixed number of requests (--dataset random, --request-count) go until every
// request is answered, as `vllm bench serve` does, unless --duration was given.
BenchOptions resolve_options(const BenchOptions& given, const LoadedTraces& t) {
  BenchOptions o = given;
  if (t.open_loop && (t.synthetic || o.request_count) && !o.replay.duration_given) {
    o.replay.duration = 0;
  }
  return o;
}

// Every stream holds a socket: lift the soft limit on open files to the hard one.
void raise_open_file_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// ISO 8601 in UTC with milliseconds: "2026-12-01T15:42:47.123Z".
std::string utc_iso(double unix_s) {
  auto whole = static_cast<std::time_t>(std::floor(unix_s));
  auto ms = static_cast<int>(std::floor((unix_s - static_cast<double>(whole)) * 1000.0));
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, ms);
}

double unix_now_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Header names only: values often carry credentials.
nlohmann::json header_names(const BenchOptions& o) {
  nlohmann::json names = nlohmann::json::array();
  for (const std::string& h : o.headers) names.push_back(bench::parse_header_flag(h).name);
  return names;
}

const char* trace_kind(const LoadedTraces& t) {
  return t.synthetic ? "random" : t.open_loop ? "mooncake" : "agentx";
}

nlohmann::json settings_json(const BenchOptions& o, const LoadedTraces& t, int concurrency,
                             const std::string& model, double started_unix_s) {
  bench::TraceTransform transform = o.replay.transform();
  nlohmann::json settings = {
      {"mode", "bench"},
      {"simulated", false},
      {"paceline_version", PACELINE_VERSION},
      {"started_at", utc_iso(started_unix_s)},
      {"started_at_unix_s", started_unix_s},
      {"url", bench::parse_http_url(o.url).str()},
      {"model", model},
      {"endpoint", o.endpoint},
      {"session_id_header", o.session_id_header},
      {"trace_kind", trace_kind(t)},
      {"open_loop", t.open_loop},
      {"trace_files_skipped", t.skipped.size()},
      {"request_rate", o.request_rate ? nlohmann::json(*o.request_rate) : nlohmann::json()},
      {"burstiness",
       o.request_rate ? nlohmann::json(o.burstiness.value_or(1.0)) : nlohmann::json()},
      {"request_count", t.open_loop ? nlohmann::json(t.records.size()) : nlohmann::json()},
      {"headers", header_names(o)},
      {"extra_body", o.extra_body.empty() ? nlohmann::json() : nlohmann::json::parse(o.extra_body)},
      {"concurrency", concurrency},
      {"seed", o.seed},
      {"scaled", !transform.identity()},
      {"trace_transform", bench::transform_json(transform, t.stats)},
  };
  settings.update(replay_settings_json(o.replay));
  if (t.synthetic) {
    settings["random"] = {{"input_len", o.random_input_len},
                          {"output_len", o.random_output_len},
                          {"range_ratio", o.random_range_ratio}};
  }
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
    bench::ArrivalReplayConfig config = arrival_replay_config(o.replay, o.seed);
    if (t.synthetic) config.trace_name = "random";
    return std::make_unique<bench::ArrivalReplayer>(t.records, config, transport);
  }
  return std::make_unique<bench::SessionReplayer>(
      t.sessions, session_replay_config(o.replay, concurrency, o.seed), transport);
}

}  // namespace

void add_bench_options(CLI::App& cmd, BenchOptions& o, bool with_run_dir) {
  cmd.add_option("--url", o.url, "the server, e.g. http://127.0.0.1:8000")->capture_default_str();
  add_replay_options(cmd, o.replay, /*traces_required=*/false);
  cmd.add_option("--dataset", o.dataset,
                 "trace (--traces) or random (random-length prompts, as vllm bench serve)")
      ->check(CLI::IsMember({"trace", "random"}))
      ->capture_default_str();
  cmd.add_option("--random-input-len", o.random_input_len, "random: mean prompt tokens")
      ->capture_default_str();
  cmd.add_option("--random-output-len", o.random_output_len, "random: mean output tokens")
      ->capture_default_str();
  cmd.add_option("--random-range-ratio", o.random_range_ratio,
                 "random: lengths uniform in [L*(1-r), L*(1+r)]")
      ->capture_default_str();
  cmd.add_option("--request-rate", o.request_rate,
                 "open loop: requests per second with gamma gaps (inf: all at once)");
  cmd.add_option("--burstiness", o.burstiness,
                 "gamma shape of the gaps (1: Poisson; < 1 burstier, > 1 more regular)");
  cmd.add_option("--request-count", o.request_count,
                 "open loop: requests to send (random default 1000; a .jsonl: its first N)");
  cmd.add_option("-H,--header", o.headers, "'Name: value' sent with every request (repeatable)");
  cmd.add_option("--extra-body", o.extra_body, "JSON object merged into every request body");
  cmd.add_option("--progress-interval", o.progress_interval,
                 "seconds between progress lines when stderr is not a terminal (<= 0: none)")
      ->capture_default_str();
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

BenchResult run_bench_point(const BenchOptions& given, int concurrency,
                            const std::string& run_dir) {
  const LoadedTraces traces = load_traces(given);
  const BenchOptions o = resolve_options(given, traces);
  bench::HttpTransportOptions http;
  http.url = bench::parse_http_url(o.url);
  http.endpoint = bench::parse_endpoint(o.endpoint);
  http.api_key = o.api_key;
  http.session_id_header = o.session_id_header;
  http.text.seed = o.seed;
  http.text.overhead_tokens =
      o.chat_overhead_tokens >= 0 ? o.chat_overhead_tokens : bench::kDefaultChatOverheadTokens;
  http.tokens.seed = o.seed;
  for (const std::string& h : o.headers) http.headers.push_back(bench::parse_header_flag(h));
  if (!o.extra_body.empty()) http.extra_body = bench::ExtraBody(o.extra_body);
  const bench::SummaryOptions summary = summary_options(o.replay);

  const bench::TraceTransform transform = o.replay.transform();
  if (!transform.identity()) {
    spdlog::warn(
        "bench: transformed trace ({}): {} of {} requests kept; not comparable with "
        "full-trace runs",
        bench::describe_transform(transform), traces.stats.requests_kept, traces.stats.requests_in);
  }
  http.model = o.model.empty()
                   ? bench::first_model_id(bench::http_get(http.url, "/v1/models", o.api_key,
                                                           std::chrono::seconds(10), http.headers),
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
    scraper->set_headers(http.headers);
  }
  bench::ProgressLine progress(stderr, o.progress_interval);
  int64_t last_chunks = 0, last_tick_ns = 0;
  if (progress.enabled()) {
    const auto interval = std::chrono::milliseconds(
        std::max<int64_t>(1, std::llround(progress.interval_s() * 1000.0)));
    driver.set_ticker(interval, [&](int64_t now) {
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
               traces.synthetic   ? "random requests"
               : traces.open_loop ? "Mooncake records"
                                  : "AgentX sessions",
               concurrency, http.url.str(), http.model, o.endpoint, run_dir);
  // The wall-clock time of the driver's start: the run's start in settings and records.
  const double unix_before_s = unix_now_s();
  const int64_t steady_before_ns = clock.now_ns();
  driver.run();
  const double started_unix_s =
      unix_before_s + static_cast<double>(driver.started_ns() - steady_before_ns) / 1e9;
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
  bench::note_skipped_traces(s, traces.skipped);
  if (result.cancelled) s.warnings.push_back("the run was cancelled (Ctrl-C) before its end");
  if (!transform.identity()) {
    s.warnings.push_back(fmt::format("transformed trace ({}): not comparable with full-trace runs",
                                     bench::describe_transform(transform)));
  }
  std::optional<int64_t> profiling_start =
      sessions ? sessions->profiling_start_ns() : std::optional<int64_t>(driver.started_ns());
  if (scraper && profiling_start) result.hold_rate = scraper->hold_rate(*profiling_start);
  result.delayer = delayer_label(o, result.hold_rate, scraper.get());

  nlohmann::json settings = settings_json(o, traces, concurrency, http.model, started_unix_s);
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
  bench::write_run_files(run_dir, records, s, settings, started_unix_s);
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
  if (r.cancelled) return 130;
  if (!s.valid) {
    // The files are written (they say why), but a script must not take the numbers as a result.
    std::string reasons;
    for (const std::string& reason : s.invalid_reasons)
      reasons += (reasons.empty() ? "" : "; ") + reason;
    std::fprintf(stderr, "error: the run is invalid: %s\n", reasons.c_str());
    return 1;
  }
  return 0;
}

}  // namespace paceline
