// chat_tojson must print what Python's json.dumps(value, ensure_ascii=False) prints.
#include <limits>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/chat_tojson.h"

namespace paceline {
namespace {

using Json = nlohmann::ordered_json;

TEST(ChatTojson, SeparatorsAndKeyOrderAreJsonDumpsDefaults) {
  EXPECT_EQ(chat_tojson(Json::parse(R"({"z": 1, "a": [true, false, null], "m": {}, "e": []})")),
            R"({"z": 1, "a": [true, false, null], "m": {}, "e": []})");
}

TEST(ChatTojson, StringsEscapeControlCharactersAndKeepUnicodeRaw) {
  EXPECT_EQ(chat_tojson(Json("q\"b\\n\nr\rt\tb\bf\f\x01\x1f\x7f")),
            R"("q\"b\\n\nr\rt\tb\bf\f\u0001\u001f)"
            "\x7f\"");
  EXPECT_EQ(chat_tojson(Json("Zürich 世界 🙂 /")), "\"Zürich 世界 🙂 /\"");
}

TEST(ChatTojson, IntegersPrintInFull) {
  EXPECT_EQ(chat_tojson(Json::parse("[0, -7, 9223372036854775807, 18446744073709551615]")),
            "[0, -7, 9223372036854775807, 18446744073709551615]");
}

TEST(ChatTojson, FloatsPrintAsPythonRepr) {
  // Each pair checked against Python 3: json.dumps(float.fromhex(...)) / repr.
  const std::pair<double, const char*> cases[] = {
      {1.0, "1.0"},
      {-0.0, "-0.0"},
      {0.0, "0.0"},
      {0.1, "0.1"},
      {0.30000000000000004, "0.30000000000000004"},
      {1e-4, "0.0001"},
      {1e-5, "1e-05"},
      {1.5e-7, "1.5e-07"},
      {2.5, "2.5"},
      {100.0, "100.0"},
      {1e15, "1000000000000000.0"},
      {9999999999999998.0, "9999999999999998.0"},
      {1e16, "1e+16"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {1e22, "1e+22"},
      {1e100, "1e+100"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {std::numeric_limits<double>::infinity(), "Infinity"},
      {-std::numeric_limits<double>::infinity(), "-Infinity"},
      {std::numeric_limits<double>::quiet_NaN(), "NaN"},
  };
  for (const auto& [value, text] : cases) EXPECT_EQ(chat_tojson(Json(value)), text) << text;
}

}  // namespace
}  // namespace paceline
