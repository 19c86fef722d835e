#pragma once
// The cache-bust marker: "[rid:<12 hex>]\n\n", drawn once per play and prepended to the play's
// first user message, so two plays of one session (or two runs) never share prefix cache.
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace paceline::bench {

inline std::string cache_bust_marker(uint64_t rid) {
  return fmt::format("[rid:{:012x}]\n\n", rid & 0xffff'ffff'ffffULL);
}

}  // namespace paceline::bench
