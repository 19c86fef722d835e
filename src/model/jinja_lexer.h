#pragma once
// The lexer of the Jinja subset chat templates use: text, {{ expressions }}, {% statements %}
// and {# comments #}, with whitespace control as Transformers configures Jinja: `-` strips the
// whitespace beside a tag, trim_blocks drops the newline after a statement or comment,
// lstrip_blocks drops the spaces and tabs before one on its line (`+` keeps them), and one
// trailing newline of the template is dropped (keep_trailing_newline off).
#include <string>
#include <string_view>
#include <vector>

namespace paceline::jinja {

struct Token {
  enum class Kind {
    kText,        // literal text between tags
    kPrintBegin,  // {{
    kPrintEnd,    // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,        // identifiers and keywords
    kString,      // a string literal, unescaped
    kInt,
    kFloat,
    kOperator,    // + - * / // % ** ~ == != < <= > >= ( ) [ ] { } , . : | =
    kEnd,         // end of the template
  };
  Kind kind;
  std::string text;
  int line = 1;
  int column = 1;
};

// Throws paceline::Error naming line and column for an unterminated tag or string, or a
// character that cannot start a token.
std::vector<Token> lex_template(std::string_view source);

}  // namespace paceline::jinja
