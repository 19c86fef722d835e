#pragma once
// JSON string escaping, as Python's json.dumps(ensure_ascii=False) writes it: '"', '\\' and the
// control characters are escaped (\n \r \t \b \f by name, others as \u00xx), every other byte,
// UTF-8 included, is copied as is. The server and the chat template's tojson both use it.
#include <string>
#include <string_view>

namespace paceline {

// Appends `text` escaped, without the surrounding quotes.
void append_json_escaped(std::string& out, std::string_view text);

}  // namespace paceline
