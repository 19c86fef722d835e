#include "cli/serve.h"

#include <pthread.h>
#include <sys/resource.h>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <thread>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "engine/engine.h"
#include "engine/metrics.h"
#include "server/http_server.h"
#include "server/openai_service.h"

namespace paceline {

namespace {

// Connections beyond the requests the queue admits: room for /health and /metrics probes and
// idle keep-alive clients. More than that can only ever get a 503.
constexpr int64_t kConnectionHeadroom = 256;
// File descriptors kept for what is not a connection: the model's files, logs, the step log.
constexpr int64_t kReservedFds = 64;
// After the engine ended the requests cut at the shutdown timeout, how long their last events
// (finish_reason "abort", [DONE]) get to reach the clients before the connections close.
constexpr auto kAbortFlushGrace = std::chrono::seconds(2);
// The exit status when the shutdown timeout cut requests off (1 is an error at startup).
constexpr int kExitRequestsCut = 3;

// Raises the soft file-descriptor limit to the hard one (Debian's soft default, 1024, is below
// the default connection limit) and returns the soft limit now in force.
int64_t raise_fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? int64_t{1} << 20 : static_cast<int64_t>(limit.rlim_cur);
}

int64_t resolve_max_connections(const ServeOptions& o, int64_t max_num_seqs) {
  if (o.max_connections < 0) fail("--max-connections must be >= 0, got {}", o.max_connections);
  const int64_t fds = raise_fd_limit();
  const int64_t usable = std::max<int64_t>(1, fds - kReservedFds);
  if (o.max_connections > 0) {
    if (o.max_connections > usable) {
      spdlog::warn(
          "--max-connections {} is above the file-descriptor limit ({}): accepts will "
          "fail beyond about {} connections",
          o.max_connections, fds, usable);
    }
    return o.max_connections;
  }
  return std::min(max_num_seqs + o.max_waiting + kConnectionHeadroom, usable);
}

// The longest context the KV cache can hold: the model's default is capped to it with a
// warning; a --max-model-len that does not fit is an error, since no request of that length
// could ever run.
int64_t fit_max_model_len(int64_t max_model_len, bool explicit_len, const SchedulerConfig& c) {
  const int64_t kv_tokens = c.num_kv_blocks * c.block_size;
  if (max_model_len <= kv_tokens) {
    spdlog::info(
        "KV cache: {} blocks of {} tokens ({} tokens), {:.2f} requests of "
        "max_model_len {} at once",
        c.num_kv_blocks, c.block_size, kv_tokens,
        static_cast<double>(kv_tokens) / static_cast<double>(max_model_len), max_model_len);
    return max_model_len;
  }
  if (explicit_len) {
    fail(
        "--max-model-len {} does not fit the KV cache: its {} blocks of {} tokens hold {} "
        "tokens; lower --max-model-len or give the KV cache more memory (--kv-cache-memory)",
        max_model_len, c.num_kv_blocks, c.block_size, kv_tokens);
  }
  if (kv_tokens < 1) fail("the KV cache holds no block; give it more memory (--kv-cache-memory)");
  spdlog::warn(
      "max_model_len {} (the model's) is more than the KV cache holds ({} blocks of {} "
      "tokens): serving with max_model_len {}",
      max_model_len, c.num_kv_blocks, c.block_size, kv_tokens);
  return kv_tokens;
}

// Runs `drain` on a thread of its own while this thread, the process's first, waits for a second
// SIGTERM or SIGINT: logged, then an immediate exit. The waiting has to stay on the first thread:
// the kernel offers a process-wide signal to it before the others, and threads that started
// before the signals were blocked (OpenBLAS starts its own at load time) would otherwise take it
// and die of it, unlogged.
int drain_unless_signalled(const sigset_t& signals, const std::function<int()>& drain) {
  std::atomic<bool> done{false};
  int status = 0;
  std::thread drainer([&] {
    status = drain();
    done.store(true, std::memory_order_release);
  });
  const timespec poll{0, 20'000'000};
  while (!done.load(std::memory_order_acquire)) {
    const int sig = sigtimedwait(&signals, nullptr, &poll);
    if (sig > 0) {
      spdlog::warn("signal {} again: exiting now, without draining", sig);
      spdlog::default_logger()->flush();
      std::_Exit(128 + sig);
    }
  }
  drainer.join();
  return status;
}

std::string served_model_name(const ServeOptions& o, const LoadedModel& m) {
  return o.served_model_name.empty() ? m.config.name : o.served_model_name;
}

}  // namespace

void add_serve_options(CLI::App& cmd, ServeOptions& o) {
  add_model_options(cmd, o.model);
  add_engine_options(cmd, o.engine);
  add_pace_options(cmd, o.pace);
  cmd.add_option("--host", o.host, "address to listen on")->capture_default_str();
  cmd.add_option("--port", o.port, "port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd.add_option("--served-model-name", o.served_model_name,
                 "model name clients send (default: the config's name)");
  cmd.add_option("--api-key", o.api_key, "require 'Authorization: Bearer KEY'")
      ->envname("PACELINE_API_KEY");
  cmd.add_option("--max-waiting", o.max_waiting,
                 "requests queued beyond max-num-seqs before new ones get 503")
      ->capture_default_str();
  cmd.add_option("--shutdown-timeout", o.shutdown_timeout,
                 "seconds SIGTERM waits for in-flight requests")
      ->capture_default_str();
  cmd.add_option("--max-body", o.max_body, "largest request body (413 above)")
      ->capture_default_str();
  cmd.add_option("--max-connections", o.max_connections,
                 "open connections beyond this get 503 and are closed (0: max-num-seqs + "
                 "max-waiting + 256, within the file-descriptor limit)")
      ->capture_default_str();
  cmd.add_option("--step-log", o.step_log,
                 "write one JSON line per executed step to FILE (its work and times), for "
                 "`paceline profile --from-step-log`");
  cmd.add_option("--metrics-prefix", o.metrics_prefix,
                 "/metrics names are NAME:..., each series labelled model_name; 'vllm' gives "
                 "vLLM's names, so its Grafana dashboards work unchanged ('' for no prefix)")
      ->capture_default_str();
}

int run_serve(const ServeOptions& o) {
  // Block the stop signals in every thread; this one waits for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  if (o.max_waiting < 0) fail("--max-waiting must be >= 0, got {}", o.max_waiting);
  if (!(o.shutdown_timeout >= 0)) fail("--shutdown-timeout must be >= 0");
  const std::string metrics_prefix = metrics_prefix_for(o.metrics_prefix);
  // Opened first: a path that cannot be written fails before minutes of model loading.
  std::unique_ptr<StepLog> step_log;
  if (!o.step_log.empty()) step_log = std::make_unique<StepLog>(o.step_log);
  LoadedModel m = load_model(o.model);
  EngineOptions engine_options = o.engine;
  if (!engine_options.max_step_ms && o.model.device == "cpu") {
    engine_options.max_step_ms = kCpuMaxStepMs;
  }
  ResolvedEngineConfig ec =
      resolve_engine_options(engine_options, m.config.max_position_embeddings, o.model.seed);
  SteadyClock clock;
  MetricsRegistry metrics;
  metrics.set_prefix(metrics_prefix);
  metrics.set_constant_labels({{"model_name", served_model_name(o, m)}});
  // The CPU forward leaves a core each to the I/O thread, the small-body lane and the bulk request
  // threads (model_options.h says why).
  ModelOptions executor_options = o.model;
  executor_options.reserved_threads =
      HttpServerOptions{}.io_threads + 1 + OpenAiServiceOptions{}.request_threads;
  std::unique_ptr<Executor> executor =
      o.pace.profile.empty() ? make_executor(executor_options, m, ec.scheduler)
                             : make_paced_null_executor(o.model, m, o.pace, clock);
  Engine engine(ec.scheduler, std::move(executor), clock, &metrics, &ec.delayer_sources);
  if (step_log) engine.set_step_log(std::move(step_log), o.model.device, m.config.name);

  const int64_t max_model_len = fit_max_model_len(
      ec.scheduler.max_model_len, o.engine.max_model_len.has_value(), engine.config());

  OpenAiServiceOptions so;
  so.served_model_name = served_model_name(o, m);
  so.model_root = o.model.model;
  so.api_key = o.api_key;
  so.max_model_len = max_model_len;
  so.max_waiting = o.max_waiting;
  so.max_num_seqs = ec.scheduler.max_num_seqs;
  so.version = PACELINE_VERSION;
  so.chat_template = m.chat_template;
  OpenAiService service(so, m.config, *m.tokenizer, engine, metrics);

  HttpServerOptions ho;
  ho.host = o.host;
  ho.port = static_cast<uint16_t>(o.port);
  ho.max_body_bytes = static_cast<size_t>(parse_byte_size(o.max_body, "--max-body"));
  ho.max_connections = static_cast<size_t>(resolve_max_connections(o, ec.scheduler.max_num_seqs));
  HttpServer server(ho);
  service.install(server);
  engine.start();
  server.start();
  spdlog::info(
      "paceline serve: model '{}' at http://{}:{} (max_model_len {}, schedule {}, "
      "max_connections {}, max_step_ms {})",
      so.served_model_name, o.host, server.port(), so.max_model_len, o.engine.schedule,
      ho.max_connections, ec.scheduler.max_step_ms);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: no new connections; draining {} in-flight requests (up to {} s)", sig,
               server.active_requests(), o.shutdown_timeout);
  return drain_unless_signalled(stop_signals, [&] {
    server.stop_accepting();
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout * 1000));
    while ((server.active_requests() > 0 || engine.num_unfinished() > 0) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    service.stop_workers();  // requests not yet prepared get 503
    const int64_t cut =
        std::max<int64_t>(engine.num_unfinished(), static_cast<int64_t>(server.active_requests()));
    // Whatever is left ends as an abort, after at most the step in flight: streams get
    // finish_reason "abort" and [DONE], which get a moment to reach their clients.
    engine.stop();
    const auto flush_deadline = std::chrono::steady_clock::now() + kAbortFlushGrace;
    while (server.active_requests() > 0 && std::chrono::steady_clock::now() < flush_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    server.stop();
    if (cut > 0) {
      spdlog::warn("paceline serve: stopped; the shutdown timeout cut {} request{} short", cut,
                   cut == 1 ? "" : "s");
      return kExitRequestsCut;
    }
    spdlog::info("paceline serve: stopped");
    return 0;
  });
}

}  // namespace paceline
