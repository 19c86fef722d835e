#include "cli/serve.h"

#include <pthread.h>
#include <csignal>
#include <thread>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "engine/engine.h"
#include "engine/metrics.h"
#include "server/http_server.h"
#include "server/openai_service.h"

namespace paceline {

void add_serve_options(CLI::App& cmd, ServeOptions& o) {
  add_model_options(cmd, o.model);
  add_engine_options(cmd, o.engine);
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
  cmd.add_option("--step-log", o.step_log,
                 "write one JSON line per executed step to FILE (its work and times), for "
                 "`paceline profile --from-step-log`");
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
  // Opened first: a path that cannot be written fails before minutes of model loading.
  std::unique_ptr<StepLog> step_log;
  if (!o.step_log.empty()) step_log = std::make_unique<StepLog>(o.step_log);
  LoadedModel m = load_model(o.model);
  ResolvedEngineConfig ec =
      resolve_engine_options(o.engine, m.config.max_position_embeddings, o.model.seed);
  SteadyClock clock;
  MetricsRegistry metrics;
  Engine engine(ec.scheduler, make_executor(o.model, m, ec.scheduler), clock, &metrics,
                &ec.delayer_sources);
  if (step_log) engine.set_step_log(std::move(step_log), o.model.device, m.config.name);

  OpenAiServiceOptions so;
  so.served_model_name = o.served_model_name.empty() ? m.config.name : o.served_model_name;
  so.model_root = o.model.model;
  so.api_key = o.api_key;
  so.max_model_len = ec.scheduler.max_model_len;
  so.max_waiting = o.max_waiting;
  so.max_num_seqs = ec.scheduler.max_num_seqs;
  so.version = PACELINE_VERSION;
  so.chat_template = m.chat_template;
  OpenAiService service(so, m.config, *m.tokenizer, engine, metrics);

  HttpServerOptions ho;
  ho.host = o.host;
  ho.port = static_cast<uint16_t>(o.port);
  ho.max_body_bytes = static_cast<size_t>(parse_byte_size(o.max_body, "--max-body"));
  HttpServer server(ho);
  service.install(server);
  engine.start();
  server.start();
  spdlog::info("paceline serve: model '{}' at http://{}:{} (max_model_len {}, schedule {})",
               so.served_model_name, o.host, server.port(), so.max_model_len, o.engine.schedule);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: no new connections; draining {} in-flight requests (up to {} s)", sig,
               server.active_requests(), o.shutdown_timeout);
  server.stop_accepting();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout * 1000));
  while ((server.active_requests() > 0 || engine.num_unfinished() > 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  engine.stop();  // whatever is left is aborted
  server.stop();
  spdlog::info("paceline serve: stopped");
  return 0;
}

}  // namespace paceline
