#include "base/resources.h"

#include <cstdlib>

#ifndef PACELINE_DATA_FROM_BIN
#define PACELINE_DATA_FROM_BIN "../share/paceline"
#endif

namespace paceline {

namespace fs = std::filesystem;

std::vector<fs::path> resource_roots() {
  std::vector<fs::path> roots;
  if (const char* home = std::getenv("PACELINE_HOME"); home != nullptr && *home != '\0') {
    roots.emplace_back(home);
  }
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  if (!ec) roots.push_back(cwd);
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      roots.push_back(dir);
      // An installed binary's resources (cmake/install.cmake), before any folder above it.
      if (dir == exe.parent_path()) {
        roots.push_back((dir / PACELINE_DATA_FROM_BIN).lexically_normal());
      }
      if (dir == dir.parent_path()) break;
    }
  }
  return roots;
}

std::optional<fs::path> find_resource(const fs::path& relative) {
  for (const fs::path& root : resource_roots()) {
    std::error_code ec;
    if (fs::exists(root / relative, ec)) return root / relative;
  }
  return std::nullopt;
}

}  // namespace paceline
