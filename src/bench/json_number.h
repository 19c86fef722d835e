#pragma once
// Numbers in the run files: NaN (no data) is written as null and read back as NaN.
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace paceline::bench {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// j[key] as a double, or NaN when it is missing, null or not a number.
inline double number_or_nan(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : kNaN;
}

}  // namespace paceline::bench
