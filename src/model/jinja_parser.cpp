#include "model/jinja_parser.h"

#include <cstdlib>
#include <set>

#include "base/error.h"
#include "model/jinja_lexer.h"

namespace paceline::jinja {
namespace {

using TK = Token::Kind;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Template run() {
    Template t;
    std::string end = parse_body(t.body, {});
    if (!end.empty()) error_at(peek(), fmt::format("unexpected '{}'", end));
    return t;
  }

 private:
  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  [[noreturn]] void error_at(const Token& t, const std::string& what) const {
    fail("chat template line {}, column {}: {}", t.line, t.column, what);
  }
  bool at_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == TK::kOperator && peek(ahead).text == op;
  }
  bool at_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == TK::kName && peek(ahead).text == name;
  }
  void expect_op(std::string_view op) {
    if (!at_op(op)) error_at(peek(), fmt::format("expected '{}', got {}", op, describe(peek())));
    next();
  }
  void expect_name(std::string_view name) {
    if (!at_name(name)) error_at(peek(), fmt::format("expected '{}', got {}", name, describe(peek())));
    next();
  }
  std::string take_name() {
    if (peek().kind != TK::kName) error_at(peek(), fmt::format("expected a name, got {}", describe(peek())));
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != TK::kBlockEnd) {
      error_at(peek(), fmt::format("expected end of statement '%}}', got {}", describe(peek())));
    }
    next();
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TK::kEnd: return "end of template";
      case TK::kBlockEnd: return "'%}'";
      case TK::kPrintEnd: return "'}}'";
      case TK::kString: return "a string";
      default: return "'" + t.text + "'";
    }
  }

  // Parses nodes until a statement named in `ends` (returned, its name consumed) or the end of
  // the template (returns "").
  std::string parse_body(Body& body, const std::set<std::string>& ends) {
    while (true) {
      const Token& t = peek();
      if (t.kind == TK::kEnd) {
        if (!ends.empty()) {
          error_at(t, fmt::format("unexpected end of template, expected '{}'", *ends.rbegin()));
        }
        return "";
      }
      if (t.kind == TK::kText) {
        auto node = make_node(Node::Kind::kText, t);
        node->text = t.text;
        body.push_back(std::move(node));
        next();
      } else if (t.kind == TK::kPrintBegin) {
        next();
        auto node = make_node(Node::Kind::kPrint, peek());
        node->expr = parse_expression();
        if (peek().kind != TK::kPrintEnd) {
          error_at(peek(), fmt::format("expected '}}}}', got {}", describe(peek())));
        }
        next();
        body.push_back(std::move(node));
      } else if (t.kind == TK::kBlockBegin) {
        next();
        const Token& keyword = peek();
        if (keyword.kind != TK::kName) error_at(keyword, "expected a statement name");
        if (ends.count(keyword.text)) {
          next();
          return keyword.text;
        }
        parse_statement(body);
      } else {
        error_at(t, fmt::format("unexpected {}", describe(t)));
      }
    }
  }

  std::unique_ptr<Node> make_node(Node::Kind kind, const Token& at) {
    auto node = std::make_unique<Node>();
    node->kind = kind;
    node->line = at.line;
    node->column = at.column;
    return node;
  }

  void parse_statement(Body& body) {
    const Token& keyword = next();
    const std::string& k = keyword.text;
    if (k == "if") return body.push_back(parse_if(keyword));
    if (k == "for") return body.push_back(parse_for(keyword));
    if (k == "set") return body.push_back(parse_set(keyword));
    if (k == "macro") return body.push_back(parse_macro(keyword));
    if (k == "call") return body.push_back(parse_call_block(keyword));
    if (k == "filter") return body.push_back(parse_filter_block(keyword));
    if (k == "break" || k == "continue") {
      expect_block_end();
      return body.push_back(make_node(k == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, keyword));
    }
    if (k == "generation") {  // Transformers' assistant-mask marker: the body renders as is
      expect_block_end();
      parse_body(body, {"endgeneration"});
      expect_block_end();
      return;
    }
    error_at(keyword, fmt::format("unknown statement '{}'", k));
  }

  std::unique_ptr<Node> parse_if(const Token& at) {
    auto node = make_node(Node::Kind::kIf, at);
    node->conditions.push_back(parse_expression());
    expect_block_end();
    while (true) {
      node->bodies.emplace_back();
      std::string end = parse_body(node->bodies.back(), {"elif", "else", "endif"});
      if (end == "elif") {
        node->conditions.push_back(parse_expression());
        expect_block_end();
      } else if (end == "else") {
        expect_block_end();
        node->bodies.emplace_back();
        parse_body(node->bodies.back(), {"endif"});
        expect_block_end();
        return node;
      } else {
        expect_block_end();
        return node;
      }
    }
  }

  std::unique_ptr<Node> parse_for(const Token& at) {
    auto node = make_node(Node::Kind::kFor, at);
    node->targets.push_back(take_name());
    while (at_op(",")) {
      next();
      node->targets.push_back(take_name());
    }
    expect_name("in");
    node->expr = parse_expression(/*with_condition=*/false);
    if (at_name("if")) {
      next();
      node->condition = parse_expression();
    }
    if (at_name("recursive")) error_at(peek(), "recursive loops are not supported");
    expect_block_end();
    node->bodies.emplace_back();
    std::string end = parse_body(node->bodies[0], {"else", "endfor"});
    expect_block_end();
    node->bodies.emplace_back();
    if (end == "else") {
      parse_body(node->bodies[1], {"endfor"});
      expect_block_end();
    }
    return node;
  }

  std::unique_ptr<Node> parse_set(const Token& at) {
    auto node = make_node(Node::Kind::kSet, at);
    node->targets.push_back(take_name());
    if (at_op(".")) {
      next();
      node->attribute = take_name();
    }
    while (at_op(",")) {
      next();
      node->targets.push_back(take_name());
    }
    if (at_op("=")) {
      next();
      node->expr = parse_tuple_or_expression();
      expect_block_end();
      return node;
    }
    if (node->targets.size() != 1 || !node->attribute.empty()) error_at(peek(), "expected '='");
    expect_block_end();  // {% set x %}...{% endset %}
    node->bodies.emplace_back();
    parse_body(node->bodies[0], {"endset"});
    expect_block_end();
    return node;
  }

  std::unique_ptr<Node> parse_macro(const Token& at) {
    auto node = make_node(Node::Kind::kMacro, at);
    node->text = take_name();
    expect_op("(");
    while (!at_op(")")) {
      node->targets.push_back(take_name());
      if (at_op("=")) {
        next();
        node->defaults.push_back(parse_expression());
      } else {
        node->defaults.push_back(nullptr);
      }
      if (!at_op(")")) expect_op(",");
    }
    next();
    expect_block_end();
    node->bodies.emplace_back();
    parse_body(node->bodies[0], {"endmacro"});
    expect_block_end();
    return node;
  }

  std::unique_ptr<Node> parse_call_block(const Token& at) {
    auto node = make_node(Node::Kind::kCallBlock, at);
    node->expr = parse_expression();
    expect_block_end();
    node->bodies.emplace_back();
    parse_body(node->bodies[0], {"endcall"});
    expect_block_end();
    return node;
  }

  std::unique_ptr<Node> parse_filter_block(const Token& at) {
    auto node = make_node(Node::Kind::kFilterBlock, at);
    node->expr = parse_filter(nullptr);
    while (at_op("|")) {
      next();
      node->expr = parse_filter(std::move(node->expr));
    }
    expect_block_end();
    node->bodies.emplace_back();
    parse_body(node->bodies[0], {"endfilter"});
    expect_block_end();
    return node;
  }

  // ---- expressions, lowest precedence first, as Jinja's parser orders them

  ExprPtr make_expr(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }

  ExprPtr binary(const Token& at, std::string op, ExprPtr left, ExprPtr right) {
    auto e = make_expr(Expr::Kind::kBinary, at);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  // `a, b` as a list (a tuple in Jinja), for `set a = 1, 2`.
  ExprPtr parse_tuple_or_expression() {
    const Token& at = peek();
    ExprPtr first = parse_expression();
    if (!at_op(",")) return first;
    auto list = make_expr(Expr::Kind::kList, at);
    list->args.push_back(std::move(first));
    while (at_op(",")) {
      next();
      list->args.push_back(parse_expression());
    }
    return list;
  }

  ExprPtr parse_expression(bool with_condition = true) {
    ExprPtr e = parse_or();
    if (!with_condition) return e;
    while (at_name("if")) {
      const Token& at = next();
      auto cond = make_expr(Expr::Kind::kCond, at);
      cond->args.push_back(std::move(e));
      cond->args.push_back(parse_or());
      if (at_name("else")) {
        next();
        cond->args.push_back(parse_expression());
      } else {
        cond->args.push_back(nullptr);
      }
      e = std::move(cond);
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (at_name("or")) {
      const Token& at = next();
      e = binary(at, "or", std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (at_name("and")) {
      const Token& at = next();
      e = binary(at, "and", std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      const Token& at = next();
      auto e = make_expr(Expr::Kind::kUnary, at);
      e->name = "not";
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    while (true) {
      const Token& at = peek();
      std::string op;
      if (at.kind == TK::kOperator &&
          (at.text == "==" || at.text == "!=" || at.text == "<" || at.text == "<=" ||
           at.text == ">" || at.text == ">=")) {
        op = at.text;
        next();
      } else if (at_name("in")) {
        op = "in";
        next();
      } else if (at_name("not") && at_name("in", 1)) {
        op = "not in";
        next();
        next();
      } else {
        return e;
      }
      e = binary(at, op, std::move(e), parse_math1());
    }
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& at = next();
      e = binary(at, at.text, std::move(e), parse_concat());
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (at_op("~")) {
      const Token& at = next();
      e = binary(at, "~", std::move(e), parse_math2());
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& at = next();
      e = binary(at, at.text, std::move(e), parse_pow());
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary();
    while (at_op("**")) {
      const Token& at = next();
      e = binary(at, "**", std::move(e), parse_unary());
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter = true) {
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      const Token& at = next();
      e = make_expr(Expr::Kind::kUnary, at);
      e->name = at.text;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filters_and_tests(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = next();
    switch (t.kind) {
      case TK::kName: {
        if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
          auto e = make_expr(Expr::Kind::kLiteral, t);
          e->value = Value::from(t.text[0] == 't' || t.text[0] == 'T');
          return e;
        }
        if (t.text == "none" || t.text == "None") {
          auto e = make_expr(Expr::Kind::kLiteral, t);
          e->value = Value::none();
          return e;
        }
        auto e = make_expr(Expr::Kind::kName, t);
        e->name = t.text;
        return e;
      }
      case TK::kString: {
        std::string text = t.text;
        while (peek().kind == TK::kString) text += next().text;  // adjacent literals join
        auto e = make_expr(Expr::Kind::kLiteral, t);
        e->value = Value::from(std::move(text));
        return e;
      }
      case TK::kInt: {
        auto e = make_expr(Expr::Kind::kLiteral, t);
        e->value = Value::from(static_cast<int64_t>(std::strtoll(t.text.c_str(), nullptr, 10)));
        return e;
      }
      case TK::kFloat: {
        auto e = make_expr(Expr::Kind::kLiteral, t);
        e->value = Value::from(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case TK::kOperator:
        if (t.text == "(") return parse_parenthesized(t);
        if (t.text == "[") return parse_list(t);
        if (t.text == "{") return parse_dict(t);
        break;
      default:
        break;
    }
    error_at(t, fmt::format("unexpected {}", describe(t)));
  }

  ExprPtr parse_parenthesized(const Token& at) {
    if (at_op(")")) {
      next();
      return make_expr(Expr::Kind::kList, at);
    }
    ExprPtr first = parse_expression();
    if (at_op(")")) {
      next();
      return first;
    }
    auto list = make_expr(Expr::Kind::kList, at);
    list->args.push_back(std::move(first));
    while (at_op(",")) {
      next();
      if (at_op(")")) break;
      list->args.push_back(parse_expression());
    }
    expect_op(")");
    return list;
  }

  ExprPtr parse_list(const Token& at) {
    auto list = make_expr(Expr::Kind::kList, at);
    while (!at_op("]")) {
      list->args.push_back(parse_expression());
      if (!at_op("]")) expect_op(",");
    }
    next();
    return list;
  }

  ExprPtr parse_dict(const Token& at) {
    auto dict = make_expr(Expr::Kind::kDict, at);
    while (!at_op("}")) {
      dict->args.push_back(parse_expression());
      expect_op(":");
      dict->args.push_back(parse_expression());
      if (!at_op("}")) expect_op(",");
    }
    next();
    return dict;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (at_op(".")) {
        const Token& at = next();
        auto attr = make_expr(Expr::Kind::kAttr, at);
        if (peek().kind == TK::kInt) {  // foo.0 is foo[0] in Jinja
          auto index = make_expr(Expr::Kind::kLiteral, peek());
          index->value = Value::from(static_cast<int64_t>(std::strtoll(next().text.c_str(), nullptr, 10)));
          attr->kind = Expr::Kind::kItem;
          attr->args.push_back(std::move(e));
          attr->args.push_back(std::move(index));
        } else {
          attr->name = take_name();
          attr->args.push_back(std::move(e));
        }
        e = std::move(attr);
      } else if (at_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (at_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr subject) {
    const Token& at = next();
    ExprPtr parts[3];
    int colons = 0;
    while (!at_op("]")) {
      if (at_op(":")) {
        next();
        if (++colons > 2) error_at(peek(), "too many ':' in a slice");
        continue;
      }
      if (parts[colons]) error_at(peek(), "expected ':' or ']'");
      parts[colons] = parse_expression();
    }
    next();
    if (colons == 0) {
      if (!parts[0]) error_at(at, "empty subscript");
      auto item = make_expr(Expr::Kind::kItem, at);
      item->args.push_back(std::move(subject));
      item->args.push_back(std::move(parts[0]));
      return item;
    }
    auto slice = make_expr(Expr::Kind::kSlice, at);
    slice->args.push_back(std::move(subject));
    for (auto& p : parts) slice->args.push_back(std::move(p));
    return slice;
  }

  // Arguments of a call, filter or test: positional, then name=value.
  void parse_arguments(Expr& e) {
    expect_op("(");
    while (!at_op(")")) {
      if (peek().kind == TK::kName && at_op("=", 1)) {
        std::string name = next().text;
        next();
        e.kwargs.emplace_back(name, parse_expression());
      } else {
        if (!e.kwargs.empty()) error_at(peek(), "positional argument after keyword argument");
        e.args.push_back(parse_expression());
      }
      if (!at_op(")")) expect_op(",");
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto call = make_expr(Expr::Kind::kCall, peek());
    call->line = callee->line;  // a failing call is reported where its callee is named
    call->column = callee->column;
    call->args.push_back(std::move(callee));
    parse_arguments(*call);
    return call;
  }

  ExprPtr parse_filter(ExprPtr subject) {
    const Token& at = peek();
    auto f = make_expr(Expr::Kind::kFilter, at);
    f->name = take_name();
    while (at_op(".")) {  // dotted filter names
      next();
      f->name += "." + take_name();
    }
    f->args.push_back(std::move(subject));
    if (at_op("(")) parse_arguments(*f);
    return f;
  }

  ExprPtr parse_filters_and_tests(ExprPtr e) {
    while (true) {
      if (at_op("|")) {
        next();
        e = parse_filter(std::move(e));
      } else if (at_name("is")) {
        const Token& at = next();
        auto test = make_expr(Expr::Kind::kTest, at);
        if (at_name("not")) {
          next();
          test->negated = true;
        }
        test->name = take_name();
        test->args.push_back(std::move(e));
        if (at_op("(")) {
          parse_arguments(*test);
        } else if (starts_test_argument()) {
          test->args.push_back(parse_primary());
        }
        e = std::move(test);
      } else if (at_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // `x is divisibleby 3`, `x is sameas none`: a test takes one bare argument.
  bool starts_test_argument() const {
    const Token& t = peek();
    if (t.kind == TK::kString || t.kind == TK::kInt || t.kind == TK::kFloat) return true;
    if (t.kind == TK::kOperator) return t.text == "[" || t.text == "{";
    if (t.kind != TK::kName) return false;
    static const std::set<std::string> kStop = {"else", "or", "and", "if", "in", "not", "is", "for", "recursive"};
    return !kStop.count(t.text);
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace

Template parse_template(std::string_view source) {
  return Parser(lex_template(source)).run();
}

}  // namespace paceline::jinja
