#pragma once
// Validated access to the fields of one JSON object, for the trace readers. Every error names the
// file, the path to the object and the field ("trace_0010.json: requests[3].hash_ids: ..."), so a
// user can find the bad record without a debugger.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline::bench {

class JsonFields {
 public:
  // `where` locates the object: "file.json" or "file.json: requests[3]". Fails unless `object` is
  // a JSON object.
  JsonFields(const nlohmann::json& object, std::string where);

  bool has(std::string_view key) const;

  int64_t integer(std::string_view key) const;
  double number(std::string_view key) const;  // an integer or a floating-point value
  std::string string(std::string_view key) const;
  std::vector<int64_t> integers(std::string_view key) const;
  std::vector<std::string> strings(std::string_view key) const;
  const nlohmann::json& array(std::string_view key) const;
  const nlohmann::json& object(std::string_view key) const;

  // Absent or null gives nullopt; present with the wrong type still fails.
  std::optional<int64_t> optional_integer(std::string_view key) const;
  std::optional<double> optional_number(std::string_view key) const;
  std::optional<std::string> optional_string(std::string_view key) const;

  // "where.key" (or "where: key" at the top of a file), the name used in messages.
  std::string path(std::string_view key) const;
  const std::string& where() const { return where_; }

  [[noreturn]] void fail_field(std::string_view key, std::string_view problem) const;

 private:
  const nlohmann::json& get(std::string_view key) const;

  const nlohmann::json& object_;
  std::string where_;
};

}  // namespace paceline::bench
