#pragma once
// Logging goes through spdlog; this header only fixes the format once for every binary.
#include <spdlog/spdlog.h>

namespace paceline {

void log_init(const std::string& level = "info");

}  // namespace paceline
