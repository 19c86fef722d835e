#pragma once
// The values a Jinja chat template computes with, with Python's semantics where templates rely
// on them: truthiness, equality across int and float, str() and repr() of lists and dicts, and
// code-point lengths of strings. Lists and dicts are shared, as Python objects are; templates
// cannot mutate them (Transformers renders in Jinja's immutable sandbox), except a namespace's
// attributes.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline::jinja {

struct Value;
using List = std::vector<Value>;
// Insertion-ordered, as Python's dict: chat templates print tools in the order they were given.
using Dict = std::vector<std::pair<std::string, Value>>;

// Positional arguments, then keyword arguments, of a call from the template.
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};
using Function = std::function<Value(Args&)>;

struct Value {
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };
  Kind kind = Kind::kUndefined;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::shared_ptr<const std::string> text;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;  // also a namespace(), whose attributes `set` may change
  bool is_namespace = false;
  std::shared_ptr<Function> function;
  std::string undefined_name;  // what was looked up, for the error when it is used

  static Value undefined(std::string name = "");
  static Value none();
  static Value from(bool b);
  static Value from(int64_t i);
  static Value from(double d);
  static Value from(std::string s);
  static Value from(List items);
  static Value from(Dict items);
  static Value from(Function f);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat; }
  bool is_list() const { return kind == Kind::kList; }
  bool is_dict() const { return kind == Kind::kDict; }
  const std::string& str() const { return *text; }
  double number() const { return kind == Kind::kInt ? static_cast<double>(integer) : real; }

  // Python's bool(x); undefined is false.
  bool truthy() const;
  // The entry for `key` of a dict, or nullptr.
  const Value* find(const std::string& key) const;
  // Python's type name, for error messages.
  std::string type_name() const;
};

// Python's ==, as Jinja compares: 1 == 1.0, lists and dicts element by element.
bool values_equal(const Value& a, const Value& b);
// What {{ x }} prints: str(x), except that undefined prints as "" and none as "None".
std::string value_to_string(const Value& v);
// Python's repr(x): strings quoted as Python quotes them.
std::string value_repr(const Value& v);
// Number of code points: Python's len(str).
int64_t string_length(const std::string& s);

Value value_from_json(const nlohmann::ordered_json& json);
// Throws paceline::Error for values JSON cannot hold (functions, undefined).
nlohmann::ordered_json value_to_json(const Value& v);

}  // namespace paceline::jinja
