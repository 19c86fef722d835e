// The one paceline binary: subcommands generate, demo (and serve, bench, sim, ... as they land).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>

#include "base/error.h"
#include "base/log.h"
#include "cli/bench.h"
#include "cli/check.h"
#include "cli/compare.h"
#include "cli/generate.h"
#include "cli/profile.h"
#include "cli/report.h"
#include "cli/serve.h"
#include "cli/sim.h"
#include "cli/sweep.h"

int main(int argc, char** argv) {
  // vLLM's two-letter short flag, which CLI11 cannot declare (its short names are one letter).
  static char kTensorParallel[] = "--tensor-parallel-size";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-tp") == 0) argv[i] = kTensorParallel;
  }
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

  paceline::SweepOptions sweep;
  auto* sweep_cmd = app.add_subcommand("sweep", "one bench run per concurrency, one table");
  paceline::add_sweep_options(*sweep_cmd, sweep);

  paceline::CompareOptions compare;
  auto* compare_cmd = app.add_subcommand("compare", "relative deltas of run B against run A");
  paceline::add_compare_options(*compare_cmd, compare);

  paceline::ReportOptions report;
  auto* report_cmd = app.add_subcommand("report", "report.html for a run or a sweep directory");
  paceline::add_report_options(*report_cmd, report);

  paceline::SimOptions sim;
  auto* sim_cmd = app.add_subcommand("sim", "a bench run of the real scheduler in virtual time");
  paceline::add_sim_options(*sim_cmd, sim);

  paceline::ProfileOptions profile;
  auto* profile_cmd =
      app.add_subcommand("profile", "measure the simulator's step-time table on an executor");
  paceline::add_profile_options(*profile_cmd, profile);

  paceline::BenchOptions bench;
  auto* bench_cmd =
      app.add_subcommand("bench", "AgentX benchmark against an OpenAI-compatible server");
  paceline::add_bench_options(*bench_cmd, bench);

  paceline::CheckOptions check;
  auto* check_cmd = app.add_subcommand(
      "check", "GPU checks: batch invariance of greedy decode (and, with --timing, step timings)");
  paceline::add_check_options(*check_cmd, check);

  CLI11_PARSE(app, argc, argv);
  paceline::log_init(log_level);
  try {
    if (gen_cmd->parsed()) return paceline::run_generate(generate);
    if (serve_cmd->parsed()) return paceline::run_serve(serve);
    if (bench_cmd->parsed()) return paceline::run_bench(bench);
    if (check_cmd->parsed()) return paceline::run_check(check);
    if (sim_cmd->parsed()) return paceline::run_sim(sim);
    if (profile_cmd->parsed()) return paceline::run_profile(profile);
    if (sweep_cmd->parsed())
      return paceline::run_sweep(sweep, [&sweep](const paceline::SweepVariant& v) {
        return paceline::sweep_point_runner(sweep, v);
      });
    if (compare_cmd->parsed()) return paceline::run_compare(compare);
    if (report_cmd->parsed()) return paceline::run_report(report);
    if (demo_cmd->parsed()) {
      std::printf(
          "paceline %s demo: qwen3-tiny (dummy weights, so the words are random) on the "
          "CPU, real Qwen3 tokenizer and chat template\n",
          PACELINE_VERSION);
      return paceline::run_generate(demo);
    }
  } catch (const paceline::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    // Anything else that escapes a command (a library's exception) still fails it, with a line.
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
