#include "bench/slurm_job.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/error.h"

namespace paceline::bench {

namespace fs = std::filesystem;

std::string shell_quote(const std::string& word) {
  std::string q = "'";
  for (char c : word) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

namespace {

std::string quoted_words(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += " " + shell_quote(w);
  return s;
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// What every task runs around its point: a server first when the sweep benches one.
constexpr const char* kServerHelper = R"sh(# Starts `paceline serve` on the point's port, waits for /health, runs the bench, stops the server.
with_server() {
  local port=$1
  shift
  "$PACELINE" serve --host 127.0.0.1 --port "$port" "${SERVER_ARGS[@]}" >"$dir/server.log" 2>&1 &
  local server=$!
  local up=0
  for _ in $(seq 1 3000); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then up=1; break; fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.2
  done
  if [ "$up" != 1 ]; then
    echo "paceline sweep: point $name: the server did not come up (see $dir/server.log)" >&2
    kill "$server" 2>/dev/null
    return 1
  fi
  local rc=0
  "$PACELINE" "$@" || rc=$?
  kill -INT "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  return "$rc"
}

)sh";

}  // namespace

nlohmann::json slurm_job_json(const SlurmJob& job) {
  nlohmann::json points = nlohmann::json::array();
  for (const SlurmPoint& p : job.points) {
    points.push_back(
        {{"name", p.name}, {"concurrency", p.concurrency}, {"argv", p.argv}, {"env", p.env}});
  }
  return {{"job_id", job.job_id ? nlohmann::json(*job.job_id) : nlohmann::json()},
          {"paceline", job.paceline},
          {"sweep_dir", job.sweep_dir},
          {"server", job.server ? nlohmann::json(*job.server) : nlohmann::json()},
          {"server_port", job.server_port},
          {"sbatch", job.sbatch},
          {"points", points}};
}

SlurmJob slurm_job_from_json(const nlohmann::json& j, const std::string& path) {
  SlurmJob job;
  try {
    job.paceline = j.at("paceline").get<std::string>();
    job.sweep_dir = j.at("sweep_dir").get<std::string>();
    if (j.contains("job_id") && !j["job_id"].is_null()) job.job_id = j["job_id"].get<std::string>();
    if (j.contains("server") && !j["server"].is_null()) {
      job.server = j["server"].get<std::vector<std::string>>();
    }
    job.server_port = j.value("server_port", 8000);
    job.sbatch = j.value("sbatch", std::vector<std::string>{});
    for (const nlohmann::json& p : j.at("points")) {
      job.points.push_back({p.at("name").get<std::string>(), p.at("concurrency").get<int>(),
                            p.at("argv").get<std::vector<std::string>>(),
                            p.value("env", std::map<std::string, std::string>{})});
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not a paceline Slurm manifest: {}", path, e.what());
  }
  if (job.points.empty()) fail("{}: the manifest lists no points", path);
  return job;
}

std::string slurm_script(const SlurmJob& job) {
  if (job.points.empty()) fail("sweep: no points to submit");
  std::ostringstream s;
  s << "#!/bin/bash\n";
  s << "#SBATCH --job-name=paceline-sweep\n";
  s << fmt::format("#SBATCH --array=0-{}\n", job.points.size() - 1);
  s << "#SBATCH --output=" << (fs::path(job.sweep_dir) / "slurm" / "task-%a.out").string() << "\n";
  for (const std::string& line : job.sbatch) {
    if (line.find('\n') != std::string::npos) fail("sweep: --sbatch '{}' holds a newline", line);
    s << "#SBATCH " << line << "\n";
  }
  s << "# Written by `paceline sweep --slurm`: task i runs point i of slurm.json next to this file\n"
       "# and writes its exit status to <run dir>/exit_status; `paceline sweep --collect` reads\n"
       "# both back.\n";
  s << "set -u\n";
  s << "PACELINE=" << shell_quote(job.paceline) << "\n";
  s << "SWEEP=" << shell_quote(job.sweep_dir) << "\n";
  if (job.server) {
    s << "SERVER_ARGS=(" << quoted_words(*job.server) << " )\n";
    s << kServerHelper;
  }
  s << "task=${SLURM_ARRAY_TASK_ID:?not a Slurm array task (submit this with sbatch)}\n";
  s << "rc=0\n";
  s << "case \"$task\" in\n";
  for (size_t i = 0; i < job.points.size(); ++i) {
    const SlurmPoint& p = job.points[i];
    s << "  " << i << ")\n";
    s << "    name=" << shell_quote(p.name) << "\n";
    s << "    dir=\"$SWEEP\"/" << shell_quote(p.name) << "\n";
    s << "    mkdir -p \"$dir\" && rm -f \"$dir/exit_status\"\n";
    s << "    (\n";
    for (const auto& [k, v] : p.env) {
      if (!valid_env_name(k)) fail("sweep: point {}: '{}' is not an environment name", p.name, k);
      s << "      export " << k << "=" << shell_quote(v) << "\n";
    }
    if (job.server) {
      s << "      with_server " << job.server_port + static_cast<int>(i) << quoted_words(p.argv)
        << "\n";
    } else {
      s << "      exec \"$PACELINE\"" << quoted_words(p.argv) << "\n";
    }
    s << "    ) || rc=$?\n";
    s << "    ;;\n";
  }
  s << "  *)\n";
  s << "    echo \"paceline sweep: task $task: the sweep has no such point\" >&2\n";
  s << "    exit 2\n";
  s << "    ;;\n";
  s << "esac\n";
  s << "echo \"$rc\" >\"$dir/exit_status\"\n";
  s << "if [ \"$rc\" != 0 ]; then echo \"paceline sweep: point $name failed (exit status $rc)\" >&2; "
       "fi\n";
  s << "exit \"$rc\"\n";
  return s.str();
}

std::string parse_sbatch_job_id(const std::string& output) {
  std::string id;
  for (char c : output) {
    if (c >= '0' && c <= '9') {
      id += c;
    } else if (!id.empty() || (c != ' ' && c != '\n' && c != '\r' && c != '\t')) {
      break;
    }
  }
  return id;
}

std::vector<SlurmPointStatus> slurm_point_status(const SlurmJob& job) {
  std::vector<SlurmPointStatus> out;
  for (size_t i = 0; i < job.points.size(); ++i) {
    const SlurmPoint& p = job.points[i];
    const fs::path dir = fs::path(job.sweep_dir) / p.name;
    const std::string log =
        (fs::path(job.sweep_dir) / "slurm" / fmt::format("task-{}.out", i)).string();
    SlurmPointStatus st;
    st.point = &p;
    st.has_summary = fs::exists(dir / "summary.json");
    std::optional<int> exit_status;
    if (std::ifstream in(dir / "exit_status"); in) {
      int v = 0;
      if (in >> v) exit_status = v;
    }
    if (exit_status && *exit_status != 0) {
      st.state = SlurmPointState::kFailed;
      st.detail = fmt::format("task {} failed with exit status {}{}; its log: {}", i,
                              *exit_status, st.has_summary ? " after writing its summary" : "",
                              log);
    } else if (st.has_summary) {
      st.state = SlurmPointState::kDone;
    } else if (exit_status) {
      st.state = SlurmPointState::kFailed;
      st.detail = fmt::format("task {} exited 0 but wrote no {}; its log: {}", i,
                              (dir / "summary.json").string(), log);
    } else {
      st.state = SlurmPointState::kMissing;
      st.detail = fmt::format("task {} has not finished (never ran, still running, or killed "
                              "before it could say); no {}; its log: {}",
                              i, (dir / "summary.json").string(), log);
    }
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace paceline::bench
