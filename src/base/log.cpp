#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace paceline {

void log_init(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("paceline");
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace paceline
