#include "base/resources.h"

#include <cstdlib>

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
