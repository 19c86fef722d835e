#pragma once
// The `tojson` filter of Hugging Face chat templates: Python's
// json.dumps(value, ensure_ascii=False), reproduced byte for byte. Separators are ", " and ": ",
// object keys keep their order, non-ASCII text stays raw, control characters are escaped, and
// floats are written as Python's repr writes them (1.0, 1e-05, 1.5e+16).
#include <string>

#include <nlohmann/json.hpp>

namespace paceline {

// Throws paceline::Error for values JSON cannot hold (binary, discarded).
std::string chat_tojson(const nlohmann::ordered_json& value);

// Python's repr(float): the shortest digits that read back to the same double, in fixed notation
// when the decimal point falls within 16 digits of the first digit, else in exponent notation.
std::string chat_python_float_repr(double value);

}  // namespace paceline
