#pragma once
// What a chat template can call: the filters, tests, global functions and the str/dict/list
// methods of Jinja and Python that Hugging Face templates use. Each throws paceline::Error with
// a message (the interpreter adds line and column).
#include <optional>
#include <string>

#include "model/jinja_value.h"

namespace paceline::jinja {

// A failure while rendering, before the interpreter adds the line and column of the expression
// or statement that failed.
struct TemplateFailure {
  std::string message;
};
[[noreturn]] inline void template_fail(std::string message) { throw TemplateFailure{std::move(message)}; }

// Calls filter `name` on args.positional[0] (the value left of `|`).
Value apply_filter(const std::string& name, Args& args);
// Applies test `name` to args.positional[0] (the value left of `is`).
bool apply_test(const std::string& name, Args& args);
// `value.name` as a bound method of a str, dict or list, when it is one.
std::optional<Value> bound_method(const Value& value, const std::string& name);
// range, namespace, dict, raise_exception, strftime_now.
Dict global_functions();

// Python's str(x) for a value that must be text: a str as is, else value_to_string.
std::string as_text(const Value& v);

}  // namespace paceline::jinja
