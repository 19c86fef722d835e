#pragma once
// `paceline generate`: one prompt through the engine, the answer streamed to stdout. The demo runs
// it on the tiny model.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/model_options.h"

namespace paceline {

struct GenerateOptions {
  ModelOptions model;
  std::string prompt = "Write a haiku about paged attention.";
  bool raw = false;  // no chat template: the prompt is the model's whole input
  std::optional<bool> enable_thinking;
  int64_t max_tokens = 32;
  double temperature = 0.0;
  double top_p = 1.0;
  int64_t top_k = -1;
  bool ignore_eos = false;
};

void add_generate_options(CLI::App& cmd, GenerateOptions& options);
int run_generate(const GenerateOptions& options);

}  // namespace paceline
