// The one paceline binary: subcommands serve, bench, sim, sweep, compare, profile, demo.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "base/error.h"
#include "base/log.h"

int main(int argc, char** argv) {
  CLI::App app{"paceline: LLM serving engine, AgentX benchmark and simulator"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", PACELINE_VERSION);
  auto* demo = app.add_subcommand("demo", "run the main job on the tiny model on the CPU");
  CLI11_PARSE(app, argc, argv);
  paceline::log_init();
  try {
    if (demo->parsed()) {
      std::printf("paceline %s\n", PACELINE_VERSION);
      return 0;
    }
    std::printf("%s", app.help().c_str());
  } catch (const paceline::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
