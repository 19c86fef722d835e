// `paceline report` and `paceline compare` as a user runs them, against the real binary.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>

#include "bench/sweep_manifest.h"
#include "fake_runs.h"

namespace paceline::bench {
namespace {

using namespace test_util;

struct Result {
  int rc = -1;
  std::string out;
};

Result run_binary(const std::string& args) {
  std::string cmd = std::string(PACELINE_BINARY) + " " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(ReportCli, RunAndSweepDirectories) {
  fs::path dir = fresh_dir("sweep");
  SweepManifest m;
  for (int conc : {4, 1}) {
    std::string name = "conc-" + std::to_string(conc);
    write_fake_run(dir / name, fake_summary(100.0 * conc, 60.0 / conc), {{"concurrency", conc}},
                   {fake_record(0, 0, 0.1, 0.01, 5)});
    m.runs.push_back({name, conc, ""});
  }
  write_sweep_manifest(dir.string(), m);

  Result run = run_binary("report " + (dir / "conc-4").string());
  EXPECT_EQ(run.rc, 0) << run.out;
  EXPECT_TRUE(fs::exists(dir / "conc-4" / "report.html"));

  Result sweep = run_binary("report " + dir.string());
  EXPECT_EQ(sweep.rc, 0) << sweep.out;
  EXPECT_NE(sweep.out.find("Pareto frontier: 2 of 2 points"), std::string::npos) << sweep.out;
  EXPECT_LT(sweep.out.find("\n| 1 |"), sweep.out.find("\n| 4 |")) << sweep.out;
  EXPECT_TRUE(fs::exists(dir / "report.html"));
  EXPECT_TRUE(fs::exists(dir / "sweep.md"));

  Result missing = run_binary("report " + (dir / "nowhere").string());
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.out.find("error: "), std::string::npos) << missing.out;
}

TEST(CompareCli, RepeatsBandAndJson) {
  fs::path dir = fresh_dir("cmp");
  auto write = [&](const std::string& name, double tok_s) {
    write_fake_run(dir / name, fake_summary(tok_s, 50), {{"concurrency", 4}});
    return (dir / name).string();
  };
  std::string a = write("a", 1000), a2 = write("a2", 1040), a3 = write("a3", 980);
  std::string b = write("b", 1100), b2 = write("b2", 1090);
  fs::path json = dir / "cmp.json";
  Result r = run_binary("compare " + a + " " + b + " --repeats " + a2 + "," + a3 + " " + b2 +
                        " --json " + json.string());
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("| total tok/s | 1000.0 | 1095.0 | **+9.5%** | ±4.0% | higher |"),
            std::string::npos)
      << r.out;
  nlohmann::json j = nlohmann::json::parse(read_text(json));
  EXPECT_EQ(j["a"]["runs"], 3);
  EXPECT_EQ(j["b"]["runs"], 2);
  EXPECT_TRUE(j["metrics"][0]["outside_band"].get<bool>());

  Result plain = run_binary("compare " + a + " " + b);
  EXPECT_EQ(plain.rc, 0) << plain.out;
  EXPECT_NE(plain.out.find("| total tok/s | 1000.0 | 1100.0 | +10.0% | n/a | higher |"),
            std::string::npos)
      << plain.out;
}

}  // namespace
// `sweep --sim --vary`: a knob axis; every concurrency runs once per value, one table of all.
TEST(SweepCli, VaryRunsEveryConcurrencyOncePerValueIntoOneTable) {
  fs::path dir = fresh_dir("vary");
  const std::string trace = PACELINE_SOURCE_DIR "/../shared/traces/agentx/trace_0002.json";
  Result r = run_binary(
      "sweep --sim --concurrency 1,2 --vary prefill-decode-interval=0,4 --traces " + trace +
      " --duration 60 --max-model-len 131072 --max-isl 112640 --out " + dir.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  for (const char* run : {"prefill-decode-interval-0/conc-1", "prefill-decode-interval-0/conc-2",
                          "prefill-decode-interval-4/conc-1", "prefill-decode-interval-4/conc-2"}) {
    EXPECT_TRUE(fs::exists(dir / run / "summary.json")) << run;
  }
  SweepManifest m = read_sweep_manifest(dir.string());
  ASSERT_EQ(m.runs.size(), 4u);
  EXPECT_EQ(m.runs[3].dir, "prefill-decode-interval-4/conc-2");
  EXPECT_NE(r.out.find("**SIMULATED**"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n| 1 | off |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n| 1 | on |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n| 2 | off |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n| 2 | on |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of 4 points"), std::string::npos) << r.out;
}

TEST(SweepCli, AMalformedAxisIsAnErrorThatNamesIt) {
  fs::path dir = fresh_dir("bad");
  const std::string trace = PACELINE_SOURCE_DIR "/../shared/traces/agentx/trace_0002.json";
  for (const char* axis :
       {"prefill-decode-interval", "=0,4", "prefill-decode-interval=0,,4", "concurrency=1,2"}) {
    Result r = run_binary("sweep --sim --concurrency 1 --vary " + std::string(axis) + " --traces " +
                          trace + " --out " + dir.string());
    EXPECT_EQ(r.rc, 1) << axis << ": " << r.out;
    EXPECT_NE(r.out.find("--vary"), std::string::npos) << axis << ": " << r.out;
    EXPECT_FALSE(fs::exists(dir / "sweep.json")) << axis;
  }
  // A value the point's own options refuse fails before any point runs.
  Result r = run_binary("sweep --sim --concurrency 1 --vary prefill-decode-interval=4,x --traces " +
                        trace + " --out " + dir.string());
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_FALSE(fs::exists(dir / "sweep.json"));
}

}  // namespace paceline::bench
