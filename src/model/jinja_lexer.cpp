#include "model/jinja_lexer.h"

#include <cctype>

#include "base/error.h"
#include "model/utf8.h"

namespace paceline::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Jinja joins the template's lines with "\n" (so "\r\n" reads as "\n") and, without
// keep_trailing_newline, drops one newline at the very end.
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Token> run() {
    bool strip_next = false;  // the previous tag ended with `-`
    while (pos_ < src_.size()) {
      size_t open = find_tag(pos_);
      std::string text = src_.substr(pos_, open - pos_);
      int text_line = line_, text_col = col_;
      bool line_start = pos_ == 0 || src_[pos_ - 1] == '\n';
      advance_to(open);
      if (strip_next) {
        size_t first = 0;
        while (first < text.size() && is_space(text[first])) ++first;
        text.erase(0, first);
        line_start = false;
      }
      if (open < src_.size()) trim_before_tag(text, line_start, open);
      if (!text.empty()) tokens_.push_back({Token::Kind::kText, text, text_line, text_col});
      if (open >= src_.size()) break;
      strip_next = lex_tag();
    }
    tokens_.push_back({Token::Kind::kEnd, "", line_, col_});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail("chat template line {}, column {}: {}", line_, col_, what);
  }

  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return src_.size();
  }

  void advance_to(size_t target) {
    while (pos_ < target) {
      if (src_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else if ((static_cast<unsigned char>(src_[pos_]) & 0xC0) != 0x80) {
        ++col_;
      }
      ++pos_;
    }
  }

  // `{{-`/`{%-` strip all whitespace before the tag; lstrip_blocks strips the spaces and tabs
  // that start the line of a `{%` or `{#` tag unless it is written `{%+`.
  void trim_before_tag(std::string& text, bool line_start, size_t open) const {
    char kind = src_[open + 1];
    char flag = open + 2 < src_.size() ? src_[open + 2] : '\0';
    if (flag == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
      return;
    }
    if (kind == '{' || flag == '+') return;
    size_t line_begin = text.rfind('\n');
    size_t from = line_begin == std::string::npos ? 0 : line_begin + 1;
    if (line_begin == std::string::npos && !line_start) return;
    for (size_t i = from; i < text.size(); ++i) {
      if (text[i] != ' ' && text[i] != '\t') return;
    }
    text.erase(from);
  }

  // Lexes one tag from its opening `{`; returns whether it ended with `-` (strip what follows).
  bool lex_tag() {
    char kind = src_[pos_ + 1];
    advance_to(pos_ + 2);
    if (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) advance_to(pos_ + 1);
    if (kind == '#') return lex_comment();
    bool block = kind == '%';
    tokens_.push_back({block ? Token::Kind::kBlockBegin : Token::Kind::kPrintBegin, "", line_, col_});
    size_t first_token = tokens_.size();
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size()) error(block ? "unclosed '{%' tag" : "unclosed '{{' tag");
      char end_char = block ? '%' : '}';
      bool minus = src_[pos_] == '-' && src_.compare(pos_ + 1, 1, std::string(1, end_char)) == 0 &&
                   src_.compare(pos_ + 2, 1, "}") == 0;
      bool plus = block && src_[pos_] == '+' && src_.compare(pos_ + 1, 2, "%}") == 0;
      bool close = src_[pos_] == end_char && src_.compare(pos_ + 1, 1, "}") == 0;
      if ((minus || plus || close) && depth == 0) {
        tokens_.push_back({block ? Token::Kind::kBlockEnd : Token::Kind::kPrintEnd, "", line_, col_});
        advance_to(pos_ + (minus || plus ? 3 : 2));
        if (block && !minus && !plus && pos_ < src_.size() && src_[pos_] == '\n') {
          advance_to(pos_ + 1);  // trim_blocks
        }
        if (block && is_raw(first_token)) lex_raw();
        return minus;
      }
      lex_expression_token(depth);
    }
  }

  bool lex_comment() {
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) error("unclosed '{#' comment");
    bool minus = end > pos_ && src_[end - 1] == '-';
    advance_to(end + 2);
    if (!minus && pos_ < src_.size() && src_[pos_] == '\n') advance_to(pos_ + 1);
    return minus;
  }

  bool is_raw(size_t first_token) const {
    return tokens_.size() == first_token + 2 && tokens_[first_token].kind == Token::Kind::kName &&
           tokens_[first_token].text == "raw";
  }

  // {% raw %}...{% endraw %}: the text between is literal; the two tags are not kept.
  void lex_raw() {
    tokens_.resize(tokens_.size() - 3);
    size_t search = pos_;
    while (true) {
      size_t open = src_.find("{%", search);
      if (open == std::string::npos) error("'{% raw %}' without '{% endraw %}'");
      size_t i = open + 2;
      if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
      while (i < src_.size() && is_space(src_[i])) ++i;
      if (src_.compare(i, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      std::string text = src_.substr(pos_, open - pos_);
      if (src_[open + 2] == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      }
      if (!text.empty()) tokens_.push_back({Token::Kind::kText, text, line_, col_});
      size_t close = src_.find("%}", i);
      if (close == std::string::npos) error("unclosed '{% endraw %}' tag");
      advance_to(close + 2);
      return;
    }
  }

  void lex_expression_token(int& depth) {
    int line = line_, col = col_;
    char c = src_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
      tokens_.push_back({Token::Kind::kName, src_.substr(pos_, end - pos_), line, col});
      advance_to(end);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      lex_number(line, col);
    } else if (c == '\'' || c == '"') {
      lex_string(line, col);
    } else {
      static const char* const kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
      for (const char* op : kTwo) {
        if (src_.compare(pos_, 2, op) == 0) {
          tokens_.push_back({Token::Kind::kOperator, op, line, col});
          advance_to(pos_ + 2);
          return;
        }
      }
      if (std::string_view("+-*/%~<>()[]{},.:|=").find(c) == std::string_view::npos) {
        error(fmt::format("unexpected character '{}'", c));
      }
      if (c == '{' || c == '(' || c == '[') ++depth;
      if (c == '}' || c == ')' || c == ']') --depth;
      tokens_.push_back({Token::Kind::kOperator, std::string(1, c), line, col});
      advance_to(pos_ + 1);
    }
  }

  void lex_number(int line, int col) {
    size_t end = pos_;
    auto digits = [&] {
      while (end < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
    };
    digits();
    bool real = false;
    if (end + 1 < src_.size() && src_[end] == '.' && std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
      real = true;
      ++end;
      digits();
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t e = end + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
        real = true;
        end = e;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < end; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    tokens_.push_back({real ? Token::Kind::kFloat : Token::Kind::kInt, text, line, col});
    advance_to(end);
  }

  void lex_string(int line, int col) {
    char quote = src_[pos_];
    size_t i = pos_ + 1;
    std::string value;
    while (true) {
      if (i >= src_.size()) error("unterminated string literal");
      char c = src_[i];
      if (c == quote) break;
      if (c != '\\' || i + 1 >= src_.size()) {
        value += c;
        ++i;
        continue;
      }
      char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\\': case '\'': case '"': value += e; break;
        case '\n': break;  // a backslash at the end of a line continues it
        case 'x': case 'u': case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n > src_.size()) error("truncated escape in string literal");
          char32_t cp = static_cast<char32_t>(std::stoul(src_.substr(i, n), nullptr, 16));
          utf8_append(cp, value);
          i += n;
          break;
        }
        default:  // Python keeps unknown escapes as written
          value += '\\';
          value += e;
      }
    }
    tokens_.push_back({Token::Kind::kString, value, line, col});
    advance_to(i + 1);
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex_template(std::string_view source) {
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace paceline::jinja
