#include "model/jinja_value.h"

#include "base/error.h"
#include "model/chat_tojson.h"
#include "model/utf8.h"

namespace paceline::jinja {

Value Value::undefined(std::string name) {
  Value v;
  v.undefined_name = std::move(name);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::kNone;
  return v;
}
Value Value::from(bool b) {
  Value v;
  v.kind = Kind::kBool;
  v.boolean = b;
  return v;
}
Value Value::from(int64_t i) {
  Value v;
  v.kind = Kind::kInt;
  v.integer = i;
  return v;
}
Value Value::from(double d) {
  Value v;
  v.kind = Kind::kFloat;
  v.real = d;
  return v;
}
Value Value::from(std::string s) {
  Value v;
  v.kind = Kind::kString;
  v.text = std::make_shared<const std::string>(std::move(s));
  return v;
}
Value Value::from(List items) {
  Value v;
  v.kind = Kind::kList;
  v.list = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::from(Dict items) {
  Value v;
  v.kind = Kind::kDict;
  v.dict = std::make_shared<Dict>(std::move(items));
  return v;
}
Value Value::from(Function f) {
  Value v;
  v.kind = Kind::kFunction;
  v.function = std::make_shared<Function>(std::move(f));
  return v;
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return boolean;
    case Kind::kInt:
      return integer != 0;
    case Kind::kFloat:
      return real != 0;
    case Kind::kString:
      return !text->empty();
    case Kind::kList:
      return !list->empty();
    case Kind::kDict:
      return is_namespace || !dict->empty();
    case Kind::kFunction:
      return true;
  }
  return false;
}

const Value* Value::find(const std::string& key) const {
  if (kind != Kind::kDict) return nullptr;
  for (const auto& [k, v] : *dict) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string Value::type_name() const {
  switch (kind) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return is_namespace ? "Namespace" : "dict";
    case Kind::kFunction:
      return "function";
  }
  return "?";
}

bool values_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  // Python: True == 1 and 1 == 1.0.
  auto numeric = [](const Value& v) { return v.is_number() || v.kind == K::kBool; };
  if (numeric(a) && numeric(b)) {
    auto as_double = [](const Value& v) {
      return v.kind == K::kBool ? (v.boolean ? 1.0 : 0.0) : v.number();
    };
    if (a.kind == K::kInt && b.kind == K::kInt) return a.integer == b.integer;
    return as_double(a) == as_double(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::kUndefined:
    case K::kNone:
      return true;
    case K::kString:
      return a.str() == b.str();
    case K::kList:
      if (a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i) {
        if (!values_equal((*a.list)[i], (*b.list)[i])) return false;
      }
      return true;
    case K::kDict:
      if (a.dict == b.dict) return true;
      if (a.is_namespace || b.is_namespace || a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, v] : *a.dict) {
        const Value* other = b.find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    case K::kFunction:
      return a.function == b.function;
    default:
      return false;
  }
}

namespace {

// Python's repr of a str: single quotes unless the text holds ' and no ".
std::string python_string_repr(const std::string& s) {
  char quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string value_repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kString:
      return python_string_repr(v.str());
    case Value::Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i > 0) out += ", ";
        out += value_repr((*v.list)[i]);
      }
      return out + "]";
    }
    case Value::Kind::kDict: {
      if (v.is_namespace) return "<Namespace>";
      std::string out = "{";
      bool first = true;
      for (const auto& [k, item] : *v.dict) {
        if (!first) out += ", ";
        first = false;
        out += python_string_repr(k) + ": " + value_repr(item);
      }
      return out + "}";
    }
    default:
      return value_to_string(v);
  }
}

std::string value_to_string(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.boolean ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.integer);
    case Value::Kind::kFloat: {
      std::string r = chat_python_float_repr(v.real);
      if (r == "NaN") return "nan";
      if (r == "Infinity") return "inf";
      if (r == "-Infinity") return "-inf";
      return r;
    }
    case Value::Kind::kString:
      return v.str();
    case Value::Kind::kFunction:
      return "<function>";
    default:
      return value_repr(v);
  }
}

int64_t string_length(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

Value value_from_json(const nlohmann::ordered_json& json) {
  using T = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case T::null:
      return Value::none();
    case T::boolean:
      return Value::from(json.get<bool>());
    case T::number_integer:
      return Value::from(json.get<int64_t>());
    case T::number_unsigned:
      return Value::from(static_cast<int64_t>(json.get<uint64_t>()));
    case T::number_float:
      return Value::from(json.get<double>());
    case T::string:
      return Value::from(json.get<std::string>());
    case T::array: {
      List items;
      for (const auto& item : json) items.push_back(value_from_json(item));
      return Value::from(std::move(items));
    }
    case T::object: {
      Dict items;
      for (const auto& [k, item] : json.items()) items.emplace_back(k, value_from_json(item));
      return Value::from(std::move(items));
    }
    default:
      fail("chat template: JSON value of type '{}' has no template value", json.type_name());
  }
}

nlohmann::ordered_json value_to_json(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNone:
      return nullptr;
    case Value::Kind::kBool:
      return v.boolean;
    case Value::Kind::kInt:
      return v.integer;
    case Value::Kind::kFloat:
      return v.real;
    case Value::Kind::kString:
      return v.str();
    case Value::Kind::kList: {
      auto out = nlohmann::ordered_json::array();
      for (const auto& item : *v.list) out.push_back(value_to_json(item));
      return out;
    }
    case Value::Kind::kDict: {
      if (v.is_namespace) break;
      auto out = nlohmann::ordered_json::object();
      for (const auto& [k, item] : *v.dict) out[k] = value_to_json(item);
      return out;
    }
    default:
      break;
  }
  fail("Object of type {} is not JSON serializable", v.type_name());
}

}  // namespace paceline::jinja
