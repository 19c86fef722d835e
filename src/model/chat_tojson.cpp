#include "model/chat_tojson.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "base/error.h"
#include "base/json_escape.h"

namespace paceline {
namespace {

void append_json_string(std::string& out, const std::string& text) {
  out += '"';
  append_json_escaped(out, text);
  out += '"';
}

void append_json(std::string& out, const nlohmann::ordered_json& value) {
  using Type = nlohmann::ordered_json::value_t;
  switch (value.type()) {
    case Type::null:
      out += "null";
      return;
    case Type::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case Type::number_integer:
      out += std::to_string(value.get<int64_t>());
      return;
    case Type::number_unsigned:
      out += std::to_string(value.get<uint64_t>());
      return;
    case Type::number_float:
      out += chat_python_float_repr(value.get<double>());
      return;
    case Type::string:
      append_json_string(out, value.get_ref<const std::string&>());
      return;
    case Type::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value) {
        if (!first) out += ", ";
        first = false;
        append_json(out, item);
      }
      out += ']';
      return;
    }
    case Type::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ", ";
        first = false;
        append_json_string(out, key);
        out += ": ";
        append_json(out, item);
      }
      out += '}';
      return;
    }
    case Type::binary:
    case Type::discarded:
      break;
  }
  fail("tojson: value of type '{}' has no JSON text", value.type_name());
}

}  // namespace

std::string chat_python_float_repr(double value) {
  // Python's json.dumps writes these three as JavaScript does (allow_nan=True).
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";

  // Shortest round-trip digits, e.g. "-1.2345e+17"; Python picks the same digits.
  char buffer[64];
  auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string sci(buffer, result.ptr);
  std::string out;
  size_t pos = 0;
  if (sci[0] == '-') {
    out += '-';
    pos = 1;
  }
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = pos; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  int exponent = std::atoi(sci.c_str() + e + 1);
  int ndigits = static_cast<int>(digits.size());
  int point = exponent + 1;  // digits before the decimal point

  if (point > -4 && point <= 16) {
    if (point <= 0) {
      out += "0." + std::string(-point, '0') + digits;
    } else if (point >= ndigits) {
      out += digits + std::string(point - ndigits, '0') + ".0";
    } else {
      out += digits.substr(0, point) + "." + digits.substr(point);
    }
    return out;
  }
  out += digits[0];
  if (ndigits > 1) out += "." + digits.substr(1);
  out += exponent < 0 ? "e-" : "e+";
  std::string magnitude = std::to_string(std::abs(exponent));
  if (magnitude.size() < 2) out += '0';
  out += magnitude;
  return out;
}

std::string chat_tojson(const nlohmann::ordered_json& value) {
  std::string out;
  append_json(out, value);
  return out;
}

}  // namespace paceline
