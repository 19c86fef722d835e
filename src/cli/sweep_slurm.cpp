#include "cli/sweep_slurm.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench/report_html.h"
#include "bench/sweep_manifest.h"
#include "cli/report.h"

namespace paceline {

namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("{}: cannot write", path.string());
  out << text;
  if (!out) fail("{}: write failed", path.string());
}

// The JSON in `path`; `missing` is the whole message when the file cannot be read.
nlohmann::json read_json_file(const fs::path& path, const std::string& missing) {
  std::ifstream in(path);
  if (!in) fail("{}", missing);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not JSON: {}", path.string(), e.what());
  }
}

template <typename T>
T recipe_field(const nlohmann::json& j, const char* key, const std::string& where, T fallback) {
  if (!j.contains(key)) return fallback;
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    fail("{}: \"{}\" has the wrong type: {}", where, key, e.what());
  }
}

// A directory name of one path component or more, without '..' or a leading '/'.
void check_point_name(const std::string& name, const std::string& where) {
  if (name.empty() || name.starts_with("/") || name.find("..") != std::string::npos ||
      name.find('\n') != std::string::npos) {
    fail("{}: point name '{}' must be a relative directory name", where, name);
  }
}

// The variants a recipe's points make (one unnamed variant without points).
std::vector<SweepVariant> recipe_variants(const SweepRecipe& r) {
  if (r.points.empty()) return {{"", {}}};
  std::vector<SweepVariant> out;
  for (const SweepRecipePoint& p : r.points) out.push_back({p.name, p.args});
  return out;
}

std::map<std::string, std::string> recipe_env_of(const SweepRecipe& r, const std::string& name) {
  std::map<std::string, std::string> env = r.env;
  for (const SweepRecipePoint& p : r.points) {
    if (p.name == name) {
      for (const auto& [k, v] : p.env) env[k] = v;
    }
  }
  return env;
}

// `later` on top of `earlier`: an option given in both keeps only its later value, so a point's
// override replaces the base's instead of reaching the command twice (which it refuses). An
// option is a "--flag" token with the tokens after it that do not start with "--".
std::vector<std::string> override_args(const std::vector<std::string>& earlier,
                                       const std::vector<std::string>& later) {
  using Group = std::vector<std::string>;
  auto groups = [](const std::vector<std::string>& args) {
    std::vector<Group> out;
    for (const std::string& a : args) {
      if (a.starts_with("--") || out.empty()) {
        out.push_back({a});
      } else {
        out.back().push_back(a);
      }
    }
    return out;
  };
  auto flag = [](const Group& g) { return g.front().substr(0, g.front().find('=')); };
  std::vector<Group> merged = groups(earlier);
  for (const Group& g : groups(later)) {
    std::erase_if(merged, [&](const Group& m) { return flag(m) == flag(g); });
    merged.push_back(g);
  }
  std::vector<std::string> out;
  for (const Group& g : merged) out.insert(out.end(), g.begin(), g.end());
  return out;
}

std::string this_binary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) fail("sweep --slurm: cannot find the paceline binary (/proc/self/exe): {}", ec.message());
  return self.string();
}

std::optional<std::string> find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

// Runs `sbatch --parsable SCRIPT`; its output (stdout and stderr) and exit status.
std::pair<int, std::string> run_sbatch(const std::string& sbatch, const std::string& script) {
  const std::string command =
      bench::shell_quote(sbatch) + " --parsable " + bench::shell_quote(script) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) fail("sweep --slurm: cannot run {}", sbatch);
  std::string output;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0;) output.append(buf, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, output};
}

void print_points(const bench::SlurmJob& job) {
  for (size_t i = 0; i < job.points.size(); ++i) {
    const bench::SlurmPoint& p = job.points[i];
    std::printf("# point %zu: %s\n", i, p.name.c_str());
    for (const auto& [k, v] : p.env) std::printf("#   env %s=%s\n", k.c_str(), v.c_str());
    std::string argv = job.paceline;
    for (const std::string& a : p.argv) argv += " " + bench::shell_quote(a);
    std::printf("#   argv %s\n", argv.c_str());
  }
}

}  // namespace

SweepRecipe load_sweep_recipe(const std::string& path) {
  const nlohmann::json j =
      read_json_file(path, fmt::format("--recipe {}: cannot read the file", path));
  if (!j.is_object()) fail("--recipe {}: expected an object with \"base\" and \"points\"", path);
  static const std::vector<std::string> known = {"sim",    "concurrency", "base",  "env",
                                                 "server", "sbatch",      "points"};
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail("--recipe {}: unknown field \"{}\" (known: sim, concurrency, base, env, server, "
           "sbatch, points)",
           path, key);
    }
  }
  SweepRecipe r;
  const std::string where = "--recipe " + path;
  if (j.contains("sim")) r.sim = recipe_field<bool>(j, "sim", where, false);
  r.concurrency = recipe_field<std::vector<int>>(j, "concurrency", where, {});
  for (int c : r.concurrency) {
    if (c < 1) fail("{}: concurrency {} is not positive", where, c);
  }
  r.base = recipe_field<std::vector<std::string>>(j, "base", where, {});
  r.env = recipe_field<std::map<std::string, std::string>>(j, "env", where, {});
  if (j.contains("server")) r.server = recipe_field<std::vector<std::string>>(j, "server", where, {});
  r.sbatch = recipe_field<std::vector<std::string>>(j, "sbatch", where, {});
  if (j.contains("points")) {
    if (!j["points"].is_array()) fail("{}: \"points\" must be an array", where);
    for (size_t i = 0; i < j["points"].size(); ++i) {
      const nlohmann::json& p = j["points"][i];
      const std::string pw = fmt::format("{}: points[{}]", where, i);
      if (!p.is_object() || !p.contains("name")) fail("{}: needs a \"name\"", pw);
      SweepRecipePoint point;
      point.name = recipe_field<std::string>(p, "name", pw, "");
      check_point_name(point.name, pw);
      point.args = recipe_field<std::vector<std::string>>(p, "args", pw, {});
      point.env = recipe_field<std::map<std::string, std::string>>(p, "env", pw, {});
      for (const SweepRecipePoint& other : r.points) {
        if (other.name == point.name) fail("{}: the name '{}' is used twice", pw, point.name);
      }
      r.points.push_back(std::move(point));
    }
  }
  return r;
}

bench::SlurmJob plan_slurm_job(const SweepOptions& o, const SweepRecipe& recipe,
                               const std::string& paceline) {
  SweepOptions opts = o;
  if (recipe.sim) opts.sim = opts.sim || *recipe.sim;
  std::vector<int> concurrencies = o.concurrencies.empty() ? recipe.concurrency : o.concurrencies;
  if (concurrencies.empty()) fail("sweep --slurm: no --concurrency (nor \"concurrency\" in a recipe)");
  if (opts.sim && recipe.server) {
    fail("sweep --slurm: a recipe's \"server\" is for bench points; simulated points need none");
  }
  bench::SlurmJob job;
  job.paceline = paceline;
  job.sweep_dir = fs::absolute(o.out).lexically_normal().string();
  job.server = recipe.server;
  job.sbatch = recipe.sbatch;
  job.sbatch.insert(job.sbatch.end(), o.sbatch.begin(), o.sbatch.end());
  const std::vector<SweepVariant> cli_variants = sweep_variants(o);
  for (const SweepVariant& rv : recipe_variants(recipe)) {
    for (const SweepVariant& cv : cli_variants) {
      SweepVariant v;
      v.dir = rv.dir.empty() ? cv.dir : (cv.dir.empty() ? rv.dir : rv.dir + "/" + cv.dir);
      // Base, then the command line's pass-through, then the point's, then --vary's: each
      // later one overrides.
      SweepOptions parse = opts;
      parse.point_args = override_args(
          override_args(override_args(recipe.base, o.point_args), rv.args), cv.args);
      // Parsed as the point's own command would parse it: a bad flag fails before submitting.
      try {
        sweep_point_runner(parse, SweepVariant{v.dir, {}});
      } catch (const Error& e) {
        fail("sweep --slurm: point {}: {}", v.dir.empty() ? "(base)" : v.dir, e.what());
      }
      for (int c : concurrencies) {
        bench::SlurmPoint p;
        p.name = v.dir.empty() ? sweep_point_dir(c) : v.dir + "/" + sweep_point_dir(c);
        p.concurrency = c;
        std::vector<std::string> own = {"--concurrency", std::to_string(c), "--out",
                                        (fs::path(job.sweep_dir) / p.name).string()};
        if (!opts.sim && job.server) {
          const int port = job.server_port + static_cast<int>(job.points.size());
          own.push_back("--url");
          own.push_back("http://127.0.0.1:" + std::to_string(port));
        }
        p.argv = {opts.sim ? "sim" : "bench"};
        const std::vector<std::string> args = override_args(parse.point_args, own);
        p.argv.insert(p.argv.end(), args.begin(), args.end());
        p.env = recipe_env_of(recipe, rv.dir);
        job.points.push_back(std::move(p));
      }
    }
  }
  return job;
}

int run_sweep_slurm(const SweepOptions& o) {
  const SweepRecipe recipe = o.recipe.empty() ? SweepRecipe{} : load_sweep_recipe(o.recipe);
  bench::SlurmJob job = plan_slurm_job(o, recipe, this_binary());
  const std::string script = bench::slurm_script(job);
  if (o.dry_run) {
    std::printf("%s", script.c_str());
    print_points(job);
    return 0;
  }
  const std::optional<std::string> sbatch = find_on_path("sbatch");
  if (!sbatch) {
    fail("sweep --slurm: sbatch is not on the PATH (run it where Slurm's client is installed; "
         "--dry-run prints the job without submitting it)");
  }
  std::error_code ec;
  fs::create_directories(fs::path(job.sweep_dir) / "slurm", ec);
  if (ec) fail("sweep --slurm: cannot create {}: {}", job.sweep_dir, ec.message());
  const fs::path script_path = fs::path(job.sweep_dir) / "sweep.sbatch";
  const fs::path manifest_path = fs::path(job.sweep_dir) / "slurm.json";
  write_text(script_path, script);
  write_text(manifest_path, bench::slurm_job_json(job).dump(2) + "\n");
  const auto [status, output] = run_sbatch(*sbatch, script_path.string());
  const std::string id = bench::parse_sbatch_job_id(output);
  if (status != 0 || id.empty()) {
    fail("sweep --slurm: sbatch rejected {} ({} points, first {}) with exit status {}: {}",
         script_path.string(), job.points.size(), job.points.front().name, status, output);
  }
  job.job_id = id;
  write_text(manifest_path, bench::slurm_job_json(job).dump(2) + "\n");
  std::fprintf(stderr,
               "sweep: submitted job %s: %zu points as array tasks 0-%zu; when they are done: "
               "paceline sweep --collect %s\n",
               id.c_str(), job.points.size(), job.points.size() - 1, job.sweep_dir.c_str());
  return 0;
}

int run_sweep_collect(const std::string& dir) {
  const fs::path manifest_path = fs::path(dir) / "slurm.json";
  const nlohmann::json j = read_json_file(
      manifest_path,
      fmt::format("sweep --collect {}: no slurm.json (not a `paceline sweep --slurm` directory)",
                  dir));
  bench::SlurmJob job = bench::slurm_job_from_json(j, manifest_path.string());
  // The directory as given now, not where the job was planned (it may have been moved).
  job.sweep_dir = dir;
  bench::SweepManifest manifest;
  std::vector<int> concurrencies;
  bool simulated = false;
  int not_done = 0;
  for (const bench::SlurmPointStatus& st : bench::slurm_point_status(job)) {
    const bench::SlurmPoint& p = *st.point;
    if (!p.argv.empty() && p.argv.front() == "sim") simulated = true;
    if (st.state != bench::SlurmPointState::kDone) {
      ++not_done;
      std::fprintf(stderr, "sweep --collect: point %s: %s: %s\n", p.name.c_str(),
                   st.state == bench::SlurmPointState::kFailed ? "failed" : "missing",
                   st.detail.c_str());
    }
    if (!st.has_summary) continue;
    const fs::path run_dir = fs::path(dir) / p.name;
    if (!fs::exists(run_dir / "report.html")) {
      try {
        bench::write_report_html(run_dir.string());
      } catch (const Error& e) {
        std::fprintf(stderr, "sweep --collect: point %s: report.html not written: %s\n",
                     p.name.c_str(), e.what());
      }
    }
    manifest.runs.push_back({p.name, p.concurrency, ""});
    if (std::find(concurrencies.begin(), concurrencies.end(), p.concurrency) ==
        concurrencies.end()) {
      concurrencies.push_back(p.concurrency);
    }
  }
  if (manifest.runs.empty()) {
    fail("sweep --collect {}: none of the {} points has written its summary.json yet", dir,
         job.points.size());
  }
  manifest.settings = {{"concurrency", concurrencies},
                       {"simulated", simulated},
                       {"slurm_job", job.job_id ? nlohmann::json(*job.job_id) : nlohmann::json()},
                       {"points_missing_or_failed", not_done}};
  bench::write_sweep_manifest(dir, manifest);
  report_sweep_dir(dir);
  if (not_done > 0) {
    std::fprintf(stderr, "sweep --collect: %d of %zu points failed or are missing; the report "
                         "holds the %zu with a summary\n",
                 not_done, job.points.size(), manifest.runs.size());
    return 1;
  }
  return 0;
}

}  // namespace paceline
