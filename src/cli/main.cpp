// The one paceline binary: subcommands generate, demo (and serve, bench, sim, ... as they land).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "base/error.h"
#include "base/log.h"
#include "cli/generate.h"
#include "cli/serve.h"

int main(int argc, char** argv) {
  CLI::App app{"paceline: LLM serving engine, AgentX benchmark and simulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", PACELINE_VERSION);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");

  paceline::GenerateOptions generate;
  auto* gen_cmd = app.add_subcommand("generate", "generate an answer to one prompt");
  paceline::add_generate_options(*gen_cmd, generate);

  paceline::GenerateOptions demo;
  demo.max_tokens = 48;
  auto* demo_cmd = app.add_subcommand(
      "demo", "the main job on the embedded default: the tiny model on the CPU answers a prompt");
  paceline::add_generate_options(*demo_cmd, demo);

  paceline::ServeOptions serve;
  auto* serve_cmd = app.add_subcommand("serve", "OpenAI-compatible server");
  paceline::add_serve_options(*serve_cmd, serve);

  CLI11_PARSE(app, argc, argv);
  paceline::log_init(log_level);
  try {
    if (gen_cmd->parsed()) return paceline::run_generate(generate);
    if (serve_cmd->parsed()) return paceline::run_serve(serve);
    if (demo_cmd->parsed()) {
      std::printf("paceline %s demo: qwen3-tiny (dummy weights, so the words are random) on the "
                  "CPU, real Qwen3 tokenizer and chat template\n",
                  PACELINE_VERSION);
      return paceline::run_generate(demo);
    }
  } catch (const paceline::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
