#pragma once
// Runs `paceline bench` as a subprocess, as a user would, and reads back its run directory.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline::testing {

struct ProcessResult {
  int status = -1;     // exit code; 1000 + signal when killed by one
  std::string output;  // stdout
  std::string errors;  // stderr (the log)
};

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs `paceline args...` with stdout and stderr into files next to `stdout_file`. With
// `interrupt_once`, sends SIGINT (Ctrl-C) `interrupt_delay` after that file appears.
inline ProcessResult run_paceline(const std::vector<std::string>& args,
                                  const std::filesystem::path& stdout_file,
                                  const std::filesystem::path& interrupt_once = {},
                                  std::chrono::milliseconds interrupt_delay = {},
                                  std::chrono::seconds timeout = std::chrono::seconds(120)) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = ::open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open((stdout_file.string() + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(err, 2);
    std::vector<std::string> argv_s = {PACELINE_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ProcessResult r;
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> interrupt_at;
  for (;;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
      break;
    }
    auto now = std::chrono::steady_clock::now();
    auto elapsed = now - start;
    if (!interrupt_once.empty() && !interrupt_at && std::filesystem::exists(interrupt_once)) {
      interrupt_at = now + interrupt_delay;
    }
    if (interrupt_at && now >= *interrupt_at) {
      kill(pid, SIGINT);
      interrupt_at = std::chrono::steady_clock::time_point::max();
    }
    if (elapsed > timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      throw std::runtime_error("paceline bench did not finish in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.output = read_text(stdout_file);
  r.errors = read_text(stdout_file.string() + ".err");
  return r;
}

inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// numpy.percentile(values, q) with the default linear method, written out independently.
inline double numpy_percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double k = static_cast<double>(v.size() - 1) * q / 100.0;
  auto lo = static_cast<size_t>(std::floor(k));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (k - static_cast<double>(lo));
}

}  // namespace paceline::testing
