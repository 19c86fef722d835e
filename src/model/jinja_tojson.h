#pragma once
// The tojson filter of Transformers' chat templates: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False), with those four options as keyword arguments.
// Transformers replaces Jinja's own tojson (which escapes HTML characters) with this one.
#include <optional>
#include <string>

#include "model/jinja_value.h"

namespace paceline::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // the text of one level; none: everything on one line
  std::optional<std::pair<std::string, std::string>> separators;  // item, key
  bool sort_keys = false;
};

// Throws TemplateFailure for a value JSON cannot hold (a function, undefined, a namespace).
std::string json_dumps(const Value& value, const JsonDumpOptions& options);

// Reads tojson's arguments (indent as an int or a string, separators as a pair).
JsonDumpOptions json_dump_options(const Args& args);

}  // namespace paceline::jinja
