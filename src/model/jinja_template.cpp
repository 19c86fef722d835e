#include "model/jinja_template.h"

#include <cmath>
#include <unordered_map>

#include "base/error.h"
#include "model/jinja_ast.h"
#include "model/jinja_builtins.h"
#include "model/jinja_parser.h"

namespace paceline::jinja {
namespace {

void require_defined(const Value& v) {
  if (v.is_undefined()) {
    template_fail(v.undefined_name.empty() ? "value is undefined" : "'" + v.undefined_name + "' is undefined");
  }
}

enum class Flow { kNormal, kBreak, kContinue };

// Python's list slice indices for [start:stop:step] over `size` elements.
std::vector<int64_t> slice_indices(int64_t size, const Value& start, const Value& stop, const Value& step) {
  auto as_int = [](const Value& v, const char* what) {
    if (v.kind != Value::Kind::kInt) template_fail(std::string("slice ") + what + " must be an integer");
    return v.integer;
  };
  int64_t st = step.is_none() || step.is_undefined() ? 1 : as_int(step, "step");
  if (st == 0) template_fail("slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t fallback) {
    if (v.is_none() || v.is_undefined()) return fallback;
    int64_t i = as_int(v, "index");
    if (i < 0) i += size;
    if (st > 0) return std::clamp<int64_t>(i, 0, size);
    return std::clamp<int64_t>(i, -1, size - 1);
  };
  int64_t b = clamp(start, st > 0 ? 0 : size - 1);
  int64_t e = clamp(stop, st > 0 ? size : -1);
  std::vector<int64_t> out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(i);
  return out;
}

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

// The items a for loop or filter walks: a list, a dict's keys, a string's characters.
List iterate(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return {};  // Jinja iterates an undefined value as empty
    case Value::Kind::kList:
      return *v.list;
    case Value::Kind::kDict: {
      List keys;
      for (const auto& [k, item] : *v.dict) keys.push_back(Value::from(k));
      return keys;
    }
    case Value::Kind::kString: {
      List chars;
      for (auto& c : code_points(v.str())) chars.push_back(Value::from(std::move(c)));
      return chars;
    }
    default:
      template_fail("'" + v.type_name() + "' object is not iterable");
  }
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  using K = Value::Kind;
  require_defined(a);
  require_defined(b);
  if (op == "~") return Value::from(as_text(a) + as_text(b));
  auto numeric = [](const Value& v) { return v.is_number() || v.kind == K::kBool; };
  auto as_double = [](const Value& v) { return v.kind == K::kBool ? (v.boolean ? 1.0 : 0.0) : v.number(); };
  auto as_int = [](const Value& v) { return v.kind == K::kBool ? (v.boolean ? 1 : 0) : v.integer; };
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value::from(a.str() + b.str());
    if (a.is_list() && b.is_list()) {
      List items = *a.list;
      items.insert(items.end(), b.list->begin(), b.list->end());
      return Value::from(std::move(items));
    }
  }
  if (op == "*") {
    const Value* text = a.is_string() ? &a : b.is_string() ? &b : nullptr;
    const Value& count = a.is_string() ? b : a;
    if (text && count.kind == K::kInt) {
      std::string out;
      for (int64_t i = 0; i < count.integer; ++i) out += text->str();
      return Value::from(std::move(out));
    }
  }
  if (!numeric(a) || !numeric(b)) {
    template_fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                b.type_name() + "'");
  }
  bool ints = a.kind != K::kFloat && b.kind != K::kFloat;
  if (op == "/") {
    if (as_double(b) == 0) template_fail("division by zero");
    return Value::from(as_double(a) / as_double(b));
  }
  if (ints) {
    int64_t x = as_int(a), y = as_int(b);
    if (op == "+") return Value::from(x + y);
    if (op == "-") return Value::from(x - y);
    if (op == "*") return Value::from(x * y);
    if (op == "//" || op == "%") {
      if (y == 0) template_fail("integer division or modulo by zero");
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {  // Python floors
        --q;
        r += y;
      }
      return Value::from(op == "//" ? q : r);
    }
    if (op == "**" && y >= 0) {
      int64_t p = 1;
      for (int64_t i = 0; i < y; ++i) p *= x;
      return Value::from(p);
    }
  }
  double x = as_double(a), y = as_double(b);
  if (op == "+") return Value::from(x + y);
  if (op == "-") return Value::from(x - y);
  if (op == "*") return Value::from(x * y);
  if (op == "**") return Value::from(std::pow(x, y));
  if (y == 0) template_fail("float division or modulo by zero");
  if (op == "//") return Value::from(std::floor(x / y));
  if (op == "%") return Value::from(x - std::floor(x / y) * y);
  template_fail("unknown operator " + op);
}

bool less_than(const Value& a, const Value& b, const std::string& op) {
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  auto numeric = [](const Value& v) { return v.is_number() || v.kind == Value::Kind::kBool; };
  if (numeric(a) && numeric(b)) {
    auto d = [](const Value& v) { return v.kind == Value::Kind::kBool ? (v.boolean ? 1.0 : 0.0) : v.number(); };
    return d(a) < d(b);
  }
  template_fail("'" + op + "' not supported between instances of '" + a.type_name() + "' and '" +
              b.type_name() + "'");
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) template_fail("'in <string>' requires string as left operand, not " + item.type_name());
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const auto& v : *container.list) {
      if (values_equal(v, item)) return true;
    }
    return false;
  }
  if (container.is_dict()) return item.is_string() && container.find(item.str()) != nullptr;
  if (container.is_undefined()) return false;  // Jinja's undefined iterates as empty
  template_fail("argument of type '" + container.type_name() + "' is not iterable");
}

class Renderer {
 public:
  Renderer(const Dict& variables) {
    for (auto& [k, v] : global_functions()) globals_[k] = v;
    for (const auto& [k, v] : variables) globals_[k] = v;
    scopes_.emplace_back();
  }

  void render(const Body& body, std::string& out) {
    Flow flow = exec(body, out);
    (void)flow;  // break/continue outside a loop do nothing, as Jinja's loopcontrols
  }

 private:
  using Scope = std::unordered_map<std::string, Value>;

  [[noreturn]] static void fail_at(int line, int column, const std::string& message) {
    fail("chat template line {}, column {}: {}", line, column, message);
  }

  Flow exec(const Body& body, std::string& out) {
    for (const auto& node : body) {
      Flow flow;
      try {
        flow = exec_node(*node, out);
      } catch (const TemplateFailure& e) {
        fail_at(node->line, node->column, e.message);
      }
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Flow exec_node(const Node& node, std::string& out) {
    switch (node.kind) {
      case Node::Kind::kText:
        out += node.text;
        return Flow::kNormal;
      case Node::Kind::kPrint:
        out += as_text(eval(*node.expr));
        return Flow::kNormal;
      case Node::Kind::kIf:
        for (size_t i = 0; i < node.bodies.size(); ++i) {
          if (i >= node.conditions.size() || eval(*node.conditions[i]).truthy()) {
            return exec(node.bodies[i], out);
          }
        }
        return Flow::kNormal;
      case Node::Kind::kFor:
        exec_for(node, out);
        return Flow::kNormal;
      case Node::Kind::kSet:
        exec_set(node);
        return Flow::kNormal;
      case Node::Kind::kMacro:
        scopes_.back()[node.text] = make_macro(node);
        return Flow::kNormal;
      case Node::Kind::kCallBlock:
        exec_call_block(node, out);
        return Flow::kNormal;
      case Node::Kind::kFilterBlock: {
        std::string inner;
        exec(node.bodies[0], inner);
        out += as_text(eval_filter(*node.expr, Value::from(std::move(inner))));
        return Flow::kNormal;
      }
      case Node::Kind::kBreak:
        return Flow::kBreak;
      case Node::Kind::kContinue:
        return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  void exec_for(const Node& node, std::string& out) {
    List all = iterate(eval(*node.expr));
    List items;
    if (node.condition) {  // `for x in xs if cond`: loop.* counts only the kept items
      for (auto& item : all) {
        scopes_.emplace_back();
        bind_targets(node, item);
        bool keep = eval(*node.condition).truthy();
        scopes_.pop_back();
        if (keep) items.push_back(std::move(item));
      }
    } else {
      items = std::move(all);
    }
    int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      scopes_.emplace_back();
      bind_targets(node, items[i]);
      scopes_.back()["loop"] = loop_value(items, i);
      Flow flow = exec(node.bodies[0], out);
      scopes_.pop_back();
      if (flow == Flow::kBreak) break;
    }
    if (n == 0 && node.bodies.size() > 1) exec(node.bodies[1], out);
  }

  static Value loop_value(const List& items, int64_t i) {
    int64_t n = static_cast<int64_t>(items.size());
    Dict loop = {
        {"index", Value::from(i + 1)},
        {"index0", Value::from(i)},
        {"revindex", Value::from(n - i)},
        {"revindex0", Value::from(n - i - 1)},
        {"first", Value::from(i == 0)},
        {"last", Value::from(i == n - 1)},
        {"length", Value::from(n)},
        {"depth", Value::from(int64_t{1})},
        {"depth0", Value::from(int64_t{0})},
        {"previtem", i > 0 ? items[i - 1] : Value::undefined("loop.previtem")},
        {"nextitem", i + 1 < n ? items[i + 1] : Value::undefined("loop.nextitem")},
    };
    loop.emplace_back("cycle", Value::from(Function([i](Args& args) {
      if (args.positional.empty()) template_fail("loop.cycle() needs at least one value");
      return args.positional[i % static_cast<int64_t>(args.positional.size())];
    })));
    return Value::from(std::move(loop));
  }

  // `for a, b in ...` and `set a, b = ...`: one name takes the value, several unpack it.
  void bind_targets(const Node& node, const Value& item) {
    if (node.targets.size() == 1) {
      scopes_.back()[node.targets[0]] = item;
      return;
    }
    List parts = iterate(item);
    if (parts.size() != node.targets.size()) {
      template_fail(fmt::format("cannot unpack {} values into {} names", parts.size(), node.targets.size()));
    }
    for (size_t i = 0; i < parts.size(); ++i) scopes_.back()[node.targets[i]] = parts[i];
  }

  void exec_set(const Node& node) {
    Value value;
    if (node.expr) {
      value = eval(*node.expr);
    } else {
      std::string text;
      exec(node.bodies[0], text);
      value = Value::from(std::move(text));
    }
    if (!node.attribute.empty()) {
      Value target = lookup(node.targets[0]);
      if (!target.is_namespace) {
        template_fail("cannot assign attribute '" + node.attribute + "' on '" + node.targets[0] +
                    "': only a namespace() takes attribute assignments");
      }
      for (auto& [k, v] : *target.dict) {
        if (k == node.attribute) {
          v = value;
          return;
        }
      }
      target.dict->emplace_back(node.attribute, value);
      return;
    }
    bind_targets(node, value);
  }

  Value make_macro(const Node& node) {
    return Value::from(Function([this, &node](Args& args) {
      scopes_.emplace_back();
      Scope& scope = scopes_.back();
      for (size_t i = 0; i < node.targets.size(); ++i) {
        const std::string& param = node.targets[i];
        if (i < args.positional.size()) {
          scope[param] = args.positional[i];
        } else if (node.defaults[i]) {
          scope[param] = eval(*node.defaults[i]);
        } else {
          scope[param] = Value::undefined(param);
        }
      }
      if (args.positional.size() > node.targets.size()) {
        scopes_.pop_back();
        template_fail("macro '" + node.text + "' takes not more than " +
                    std::to_string(node.targets.size()) + " argument(s)");
      }
      for (auto& [k, v] : args.keyword) scope[k] = v;
      std::string out;
      exec(node.bodies[0], out);
      scopes_.pop_back();
      return Value::from(std::move(out));
    }));
  }

  void exec_call_block(const Node& node, std::string& out) {
    const Node* block = &node;
    scopes_.emplace_back();
    scopes_.back()["caller"] = Value::from(Function([this, block](Args&) {
      std::string text;
      exec(block->bodies[0], text);
      return Value::from(std::move(text));
    }));
    Value result = eval(*node.expr);
    scopes_.pop_back();
    out += as_text(result);
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    auto found = globals_.find(name);
    if (found != globals_.end()) return found->second;
    return Value::undefined(name);
  }

  Args eval_args(const Expr& e, size_t first, std::optional<Value> subject = std::nullopt) {
    Args args;
    if (subject) args.positional.push_back(std::move(*subject));
    for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i]));
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v));
    return args;
  }

  Value eval_filter(const Expr& e, Value subject) {
    Args args = eval_args(e, 1, std::move(subject));
    return apply_filter(e.name, args);
  }

  Value eval(const Expr& e) {
    try {
      return eval_inner(e);
    } catch (const TemplateFailure& error) {
      fail_at(e.line, e.column, error.message);
    }
  }

  Value eval_inner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return lookup(e.name);
      case Expr::Kind::kList: {
        List items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        return Value::from(std::move(items));
      }
      case Expr::Kind::kDict: {
        Dict items;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value key = eval(*e.args[i]);
          if (!key.is_string()) template_fail("dict keys must be strings here, got " + key.type_name());
          items.emplace_back(key.str(), eval(*e.args[i + 1]));
        }
        return Value::from(std::move(items));
      }
      case Expr::Kind::kAttr:
        return attribute(eval(*e.args[0]), e.name, *e.args[0]);
      case Expr::Kind::kItem:
        return item(eval(*e.args[0]), eval(*e.args[1]), *e.args[0]);
      case Expr::Kind::kSlice:
        return slice(e);
      case Expr::Kind::kCall: {
        Value callee = eval(*e.args[0]);
        require_defined(callee);
        if (callee.kind != Value::Kind::kFunction) template_fail("'" + callee.type_name() + "' object is not callable");
        Args args = eval_args(e, 1);
        return (*callee.function)(args);
      }
      case Expr::Kind::kFilter:
        return eval_filter(e, eval(*e.args[0]));
      case Expr::Kind::kTest: {
        Args args = eval_args(e, 1, eval(*e.args[0]));
        return Value::from(apply_test(e.name, args) != e.negated);
      }
      case Expr::Kind::kUnary: {
        Value v = eval(*e.args[0]);
        if (e.name == "not") return Value::from(!v.truthy());
        require_defined(v);
        if (v.kind == Value::Kind::kInt) return Value::from(e.name == "-" ? -v.integer : v.integer);
        if (v.kind == Value::Kind::kFloat) return Value::from(e.name == "-" ? -v.real : v.real);
        template_fail("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
      }
      case Expr::Kind::kBinary:
        return binary(e);
      case Expr::Kind::kCond:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value::undefined();
    }
    template_fail("unknown expression");
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and" || op == "or") {
      Value left = eval(*e.args[0]);
      if (left.truthy() == (op == "or")) return left;
      return eval(*e.args[1]);
    }
    Value a = eval(*e.args[0]);
    Value b = eval(*e.args[1]);
    if (op == "==") return Value::from(values_equal(a, b));
    if (op == "!=") return Value::from(!values_equal(a, b));
    if (op == "in") return Value::from(contains(b, a));
    if (op == "not in") return Value::from(!contains(b, a));
    if (op == "<") return Value::from(less_than(a, b, op));
    if (op == ">") return Value::from(less_than(b, a, op));
    if (op == "<=") return Value::from(!less_than(b, a, op));
    if (op == ">=") return Value::from(!less_than(a, b, op));
    return arithmetic(op, a, b);
  }

  // Jinja's getattr: a Python attribute (a method) first, then the item of that name.
  static Value attribute(const Value& subject, const std::string& name, const Expr& where) {
    require_defined(subject);
    if (subject.is_dict() && !subject.is_namespace) {
      if (auto method = bound_method(subject, name)) return *method;
    }
    if (const Value* v = subject.find(name)) return *v;
    if (auto method = bound_method(subject, name)) return *method;
    return Value::undefined(describe(where) + "." + name);
  }

  // Jinja's getitem: the item first, then the attribute of that name.
  static Value item(const Value& subject, const Value& key, const Expr& where) {
    require_defined(subject);
    if (subject.is_dict()) {
      if (key.is_string()) {
        if (const Value* v = subject.find(key.str())) return *v;
        if (auto method = bound_method(subject, key.str())) return *method;
      }
      return Value::undefined(describe(where) + "[" + value_repr(key) + "]");
    }
    if ((subject.is_list() || subject.is_string()) && key.kind == Value::Kind::kInt) {
      int64_t n;
      std::vector<std::string> chars;
      if (subject.is_list()) {
        n = static_cast<int64_t>(subject.list->size());
      } else {
        chars = code_points(subject.str());
        n = static_cast<int64_t>(chars.size());
      }
      int64_t i = key.integer < 0 ? key.integer + n : key.integer;
      if (i < 0 || i >= n) return Value::undefined(describe(where) + "[" + std::to_string(key.integer) + "]");
      return subject.is_list() ? (*subject.list)[i] : Value::from(chars[i]);
    }
    if (key.is_string()) {
      if (auto method = bound_method(subject, key.str())) return *method;
    }
    return Value::undefined(describe(where) + "[" + value_repr(key) + "]");
  }

  Value slice(const Expr& e) {
    Value subject = eval(*e.args[0]);
    require_defined(subject);
    auto bound = [&](size_t i) { return e.args[i] ? eval(*e.args[i]) : Value::none(); };
    Value start = bound(1), stop = bound(2), step = bound(3);
    if (subject.is_list()) {
      List out;
      for (int64_t i : slice_indices(static_cast<int64_t>(subject.list->size()), start, stop, step)) {
        out.push_back((*subject.list)[i]);
      }
      return Value::from(std::move(out));
    }
    if (subject.is_string()) {
      std::vector<std::string> chars = code_points(subject.str());
      std::string out;
      for (int64_t i : slice_indices(static_cast<int64_t>(chars.size()), start, stop, step)) out += chars[i];
      return Value::from(std::move(out));
    }
    template_fail("'" + subject.type_name() + "' object is not subscriptable");
  }

  // A short name for an expression in "is undefined" messages: `message.content`.
  static std::string describe(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kName:
        return e.name;
      case Expr::Kind::kAttr:
        return describe(*e.args[0]) + "." + e.name;
      case Expr::Kind::kItem:
        if (e.args[1]->kind == Expr::Kind::kLiteral) {
          return describe(*e.args[0]) + "[" + value_repr(e.args[1]->value) + "]";
        }
        return describe(*e.args[0]) + "[...]";
      default:
        return "value";
    }
  }

  std::unordered_map<std::string, Value> globals_;
  std::vector<Scope> scopes_;
};

}  // namespace

JinjaTemplate::JinjaTemplate(std::string_view source)
    : template_(std::make_unique<Template>(parse_template(source))) {}
JinjaTemplate::~JinjaTemplate() = default;
JinjaTemplate::JinjaTemplate(JinjaTemplate&&) noexcept = default;
JinjaTemplate& JinjaTemplate::operator=(JinjaTemplate&&) noexcept = default;

std::string JinjaTemplate::render(const Dict& variables) const {
  Renderer renderer(variables);
  std::string out;
  try {
    renderer.render(template_->body, out);
  } catch (const TemplateFailure& e) {
    fail("chat template: {}", e.message);
  }
  return out;
}

}  // namespace paceline::jinja
