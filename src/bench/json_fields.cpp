#include "bench/json_fields.h"

#include "base/error.h"

namespace paceline::bench {

namespace {

const char* type_name(const nlohmann::json& v) {
  return v.type_name();
}

}  // namespace

JsonFields::JsonFields(const nlohmann::json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) {
    fail("{}: expected a JSON object, found {}", where_, type_name(object_));
  }
}

bool JsonFields::has(std::string_view key) const {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

std::string JsonFields::path(std::string_view key) const {
  bool top = where_.find(": ") == std::string::npos;
  return fmt::format("{}{}{}", where_, top ? ": " : ".", key);
}

void JsonFields::fail_field(std::string_view key, std::string_view problem) const {
  fail("{}: {}", path(key), problem);
}

const nlohmann::json& JsonFields::get(std::string_view key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) fail_field(key, "missing required field");
  return *it;
}

int64_t JsonFields::integer(std::string_view key) const {
  const auto& v = get(key);
  if (!v.is_number_integer()) {
    fail_field(key, fmt::format("expected an integer, found {}", type_name(v)));
  }
  return v.get<int64_t>();
}

double JsonFields::number(std::string_view key) const {
  const auto& v = get(key);
  if (!v.is_number()) fail_field(key, fmt::format("expected a number, found {}", type_name(v)));
  return v.get<double>();
}

std::string JsonFields::string(std::string_view key) const {
  const auto& v = get(key);
  if (!v.is_string()) fail_field(key, fmt::format("expected a string, found {}", type_name(v)));
  return v.get<std::string>();
}

const nlohmann::json& JsonFields::array(std::string_view key) const {
  const auto& v = get(key);
  if (!v.is_array()) fail_field(key, fmt::format("expected an array, found {}", type_name(v)));
  return v;
}

const nlohmann::json& JsonFields::object(std::string_view key) const {
  const auto& v = get(key);
  if (!v.is_object()) fail_field(key, fmt::format("expected an object, found {}", type_name(v)));
  return v;
}

std::vector<int64_t> JsonFields::integers(std::string_view key) const {
  const auto& a = array(key);
  std::vector<int64_t> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number_integer()) {
      fail_field(key, fmt::format("element {} is {}, expected an integer", i, type_name(a[i])));
    }
    out.push_back(a[i].get<int64_t>());
  }
  return out;
}

std::vector<std::string> JsonFields::strings(std::string_view key) const {
  const auto& a = array(key);
  std::vector<std::string> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string()) {
      fail_field(key, fmt::format("element {} is {}, expected a string", i, type_name(a[i])));
    }
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

std::optional<int64_t> JsonFields::optional_integer(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return integer(key);
}

std::optional<double> JsonFields::optional_number(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return number(key);
}

std::optional<std::string> JsonFields::optional_string(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return string(key);
}

}  // namespace paceline::bench
