#pragma once
// `paceline serve`: the OpenAI-compatible server.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/engine_options.h"
#include "cli/model_options.h"
#include "cli/paced_null.h"

namespace paceline {

struct ServeOptions {
  ModelOptions model;
  EngineOptions engine;
  PaceOptions pace;  // --pace-profile: the null executor at a simulator profile's speed
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string served_model_name;  // default: the model config's name
  std::string api_key;            // also $PACELINE_API_KEY
  int64_t max_waiting = 4096;
  double shutdown_timeout = 30.0;  // seconds to drain in-flight requests on SIGTERM
  std::string max_body = "32M";
  // 0: max-num-seqs + max-waiting + kConnectionHeadroom, within the file-descriptor limit.
  int64_t max_connections = 0;
  std::string step_log;  // a JSON line per executed step (engine/step_log.h)
  std::string metrics_prefix = "paceline";  // /metrics names are NAME:...; "vllm" for vLLM's
};

void add_serve_options(CLI::App& cmd, ServeOptions& options);
int run_serve(const ServeOptions& options);

}  // namespace paceline
