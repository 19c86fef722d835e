#pragma once
// A short rendering of a JSON value for error messages: hostile files can hold huge values.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace paceline {

inline std::string json_brief(const nlohmann::json& value, size_t max_chars = 60) {
  std::string text = value.dump();
  if (text.size() > max_chars) text = text.substr(0, max_chars - 3) + "...";
  return text;
}

}  // namespace paceline
