#pragma once
// Parses a chat template (Jinja's grammar, the subset Hugging Face templates use) into its
// syntax tree. Statements: if/elif/else, for (with `if` filter, else, loop.*), set (names,
// tuples, namespace attributes, blocks), macro, call, filter, break/continue, raw, and
// Transformers' generation block (rendered as its body).
#include <string_view>

#include "model/jinja_ast.h"

namespace paceline::jinja {

// Throws paceline::Error "chat template line L, column C: ..." for a syntax error.
Template parse_template(std::string_view source);

}  // namespace paceline::jinja
