#include "bench/sweep_manifest.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "bench/report_read.h"

namespace paceline::bench {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> run_subdirs(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory() && fs::exists(e.path() / "summary.json")) {
      out.push_back(e.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void write_sweep_manifest(const std::string& sweep_dir, const SweepManifest& m) {
  nlohmann::json runs = nlohmann::json::array();
  for (const SweepEntry& e : m.runs) {
    runs.push_back({{"dir", e.dir}, {"concurrency", e.concurrency}, {"delayer", e.delayer}});
  }
  nlohmann::json j = {{"runs", runs}, {"settings", m.settings}};
  std::error_code ec;
  fs::create_directories(sweep_dir, ec);
  if (ec) fail("{}: cannot create the sweep directory: {}", sweep_dir, ec.message());
  fs::path path = fs::path(sweep_dir) / "sweep.json";
  std::ofstream out(path, std::ios::binary);
  out << j.dump(2) << '\n';
  if (!out) fail("{}: cannot write", path.string());
}

SweepManifest read_sweep_manifest(const std::string& sweep_dir) {
  SweepManifest m;
  fs::path path = fs::path(sweep_dir) / "sweep.json";
  if (fs::exists(path)) {
    nlohmann::json j = read_json_file(path.string());
    auto runs = j.find("runs");
    if (!j.is_object() || runs == j.end() || !runs->is_array()) {
      fail("{}: expected an object with a \"runs\" array", path.string());
    }
    for (size_t i = 0; i < runs->size(); ++i) {
      const nlohmann::json& r = (*runs)[i];
      if (!r.is_object() || !r.contains("dir") || !r["dir"].is_string()) {
        fail("{}: runs[{}]: expected an object with a string \"dir\"", path.string(), i);
      }
      SweepEntry e;
      e.dir = r["dir"].get<std::string>();
      if (r.contains("concurrency") && r["concurrency"].is_number_integer()) {
        e.concurrency = r["concurrency"].get<int>();
      }
      if (r.contains("delayer") && r["delayer"].is_string()) {
        e.delayer = r["delayer"].get<std::string>();
      }
      m.runs.push_back(std::move(e));
    }
    if (j.contains("settings") && j["settings"].is_object()) m.settings = j["settings"];
  } else {
    for (std::string& d : run_subdirs(sweep_dir)) m.runs.push_back({std::move(d), 0, ""});
  }
  if (m.runs.empty()) fail("{}: no runs (no sweep.json, no run subdirectories)", sweep_dir);
  return m;
}

bool is_sweep_dir(const std::string& dir) {
  if (fs::exists(fs::path(dir) / "sweep.json")) return true;
  return !fs::exists(fs::path(dir) / "summary.json") && !run_subdirs(dir).empty();
}

}  // namespace paceline::bench
