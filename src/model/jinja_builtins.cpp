#include "model/jinja_builtins.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include <utf8proc.h>

#include "model/jinja_tojson.h"
#include "model/utf8.h"

namespace paceline::jinja {

std::string as_text(const Value& v) { return v.is_string() ? v.str() : value_to_string(v); }

namespace {

// ---- argument access

const Value* arg(const Args& args, size_t index, const char* keyword = nullptr) {
  if (index < args.positional.size()) return &args.positional[index];
  if (keyword) {
    for (const auto& [k, v] : args.keyword) {
      if (k == keyword) return &v;
    }
  }
  return nullptr;
}

const std::string& string_arg(const Args& args, size_t index, const char* what) {
  const Value* v = arg(args, index);
  if (!v || !v->is_string()) {
    template_fail(std::string(what) + " expects a string argument" +
                  (v ? ", got " + v->type_name() : std::string()));
  }
  return v->str();
}

const Value& subject_of(const Args& args, const char* what) {
  if (args.positional.empty()) template_fail(std::string(what) + ": nothing to apply it to");
  return args.positional[0];
}

// ---- str helpers (Python semantics)

bool is_py_space(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000;
}

std::vector<char32_t> decode(const std::string& s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(c);
      ++i;
    } else {
      out.push_back(utf8_next(s, i));
    }
  }
  return out;
}

std::string encode(const std::vector<char32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) utf8_append(cps[i], out);
  return out;
}

// str.strip / lstrip / rstrip: whitespace by default, else any of `chars`.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::vector<char32_t> cps = decode(s);
  std::vector<char32_t> set;
  bool whitespace = !chars || chars->is_none();
  if (!whitespace) {
    if (!chars->is_string()) template_fail("strip arg must be None or str");
    set = decode(chars->str());
  }
  auto strippable = [&](char32_t c) {
    return whitespace ? is_py_space(c) : std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strippable(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strippable(cps[e - 1])) --e;
  }
  return encode(cps, b, e);
}

std::string map_case(const std::string& s, int mode) {  // 0 lower, 1 upper
  std::string out;
  for (char32_t c : decode(s)) {
    auto cp = static_cast<utf8proc_int32_t>(c);
    utf8_append(static_cast<char32_t>(mode == 0 ? utf8proc_tolower(cp) : utf8proc_toupper(cp)), out);
  }
  return out;
}

std::string capitalize(const std::string& s) {
  std::vector<char32_t> cps = decode(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    auto cp = static_cast<utf8proc_int32_t>(cps[i]);
    utf8_append(static_cast<char32_t>(i == 0 ? utf8proc_totitle(cp) : utf8proc_tolower(cp)), out);
  }
  return out;
}

std::string title(const std::string& s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t c : decode(s)) {
    auto cp = static_cast<utf8proc_int32_t>(c);
    bool cased = utf8proc_tolower(cp) != cp || utf8proc_toupper(cp) != cp;
    utf8_append(static_cast<char32_t>(cased ? (previous_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp)) : cp), out);
    previous_cased = cased;
  }
  return out;
}

// str.split(sep=None, maxsplit=-1) and str.rsplit.
List split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (!sep || sep->is_none()) {  // runs of whitespace, no empty strings
    std::vector<char32_t> cps = decode(s);
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && is_py_space(cps[i])) ++i;
      if (i >= cps.size()) break;
      size_t start = i;
      while (i < cps.size() && !is_py_space(cps[i])) ++i;
      words.emplace_back(start, i);
    }
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
      if (from_right) {
        size_t keep = words.size() - maxsplit;
        size_t b = 0;
        while (b < cps.size() && is_py_space(cps[b])) ++b;
        parts.push_back(encode(cps, b, words[keep - 1].second));
        for (size_t w = keep; w < words.size(); ++w) parts.push_back(encode(cps, words[w].first, words[w].second));
      } else {
        for (int64_t w = 0; w < maxsplit; ++w) parts.push_back(encode(cps, words[w].first, words[w].second));
        size_t e = cps.size();
        while (e > 0 && is_py_space(cps[e - 1])) --e;
        parts.push_back(encode(cps, words[maxsplit].first, e));
      }
    } else {
      for (auto [b, e] : words) parts.push_back(encode(cps, b, e));
    }
  } else {
    if (!sep->is_string()) template_fail("split: separator must be a string, got " + sep->type_name());
    const std::string& d = sep->str();
    if (d.empty()) template_fail("empty separator");
    if (!from_right) {
      size_t start = 0;
      int64_t n = 0;
      while (maxsplit < 0 || n < maxsplit) {
        size_t found = s.find(d, start);
        if (found == std::string::npos) break;
        parts.push_back(s.substr(start, found - start));
        start = found + d.size();
        ++n;
      }
      parts.push_back(s.substr(start));
    } else {
      size_t end = s.size();
      int64_t n = 0;
      std::vector<std::string> reversed;
      while (maxsplit < 0 || n < maxsplit) {
        if (end < d.size()) break;
        size_t found = s.rfind(d, end - d.size());
        if (found == std::string::npos) break;
        reversed.push_back(s.substr(found + d.size(), end - found - d.size()));
        end = found;
        ++n;
      }
      reversed.push_back(s.substr(0, end));
      parts.assign(reversed.rbegin(), reversed.rend());
    }
  }
  List out;
  for (auto& p : parts) out.push_back(Value::from(std::move(p)));
  return out;
}

std::string replace(const std::string& s, const std::string& old, const std::string& with, int64_t count) {
  std::string out;
  size_t pos = 0;
  int64_t n = 0;
  if (old.empty()) {  // Python inserts `with` between every character
    std::vector<char32_t> cps = decode(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || n < count) {
        out += with;
        ++n;
      }
      if (i < cps.size()) utf8_append(cps[i], out);
    }
    return out;
  }
  while (count < 0 || n < count) {
    size_t found = s.find(old, pos);
    if (found == std::string::npos) break;
    out += s.substr(pos, found - pos) + with;
    pos = found + old.size();
    ++n;
  }
  return out + s.substr(pos);
}

int64_t int_arg(const Args& args, size_t index, const char* keyword, int64_t fallback) {
  const Value* v = arg(args, index, keyword);
  if (!v || v->is_none()) return fallback;
  if (v->kind != Value::Kind::kInt) template_fail(std::string(keyword) + " must be an integer");
  return v->integer;
}

std::optional<Value> string_method(const Value& self, const std::string& name) {
  auto text = self.text;
  auto method = [](auto f) { return std::optional<Value>(Value::from(Function(std::move(f)))); };
  // Arguments after the bound `self` start at index 0 here.
  if (name == "startswith" || name == "endswith") {
    bool start = name == "startswith";
    return method([text, start](Args& args) {
      const Value* p = arg(args, 0);
      if (!p) template_fail("startswith/endswith takes one argument");
      auto test = [&](const Value& v) {
        if (!v.is_string()) template_fail("startswith/endswith expects a string or a list of strings");
        return start ? text->starts_with(v.str()) : text->ends_with(v.str());
      };
      if (p->is_list()) {
        for (const auto& v : *p->list) {
          if (test(v)) return Value::from(true);
        }
        return Value::from(false);
      }
      return Value::from(test(*p));
    });
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool left = name != "rstrip", right = name != "lstrip";
    return method([text, left, right](Args& args) { return Value::from(strip(*text, arg(args, 0), left, right)); });
  }
  if (name == "split" || name == "rsplit") {
    bool from_right = name == "rsplit";
    return method([text, from_right](Args& args) {
      return Value::from(split(*text, arg(args, 0, "sep"), int_arg(args, 1, "maxsplit", -1), from_right));
    });
  }
  if (name == "upper" || name == "lower") {
    int mode = name == "upper" ? 1 : 0;
    return method([text, mode](Args&) { return Value::from(map_case(*text, mode)); });
  }
  if (name == "capitalize") return method([text](Args&) { return Value::from(capitalize(*text)); });
  if (name == "title") return method([text](Args&) { return Value::from(title(*text)); });
  if (name == "replace") {
    return method([text](Args& args) {
      return Value::from(replace(*text, string_arg(args, 0, "replace"), string_arg(args, 1, "replace"),
                                 int_arg(args, 2, "count", -1)));
    });
  }
  if (name == "find" || name == "rfind" || name == "count") {
    return method([text, name](Args& args) {
      const std::string& needle = string_arg(args, 0, name.c_str());
      if (name == "count") {
        if (needle.empty()) return Value::from(string_length(*text) + 1);
        int64_t n = 0;
        for (size_t p = text->find(needle); p != std::string::npos; p = text->find(needle, p + needle.size())) ++n;
        return Value::from(n);
      }
      size_t p = name == "find" ? text->find(needle) : text->rfind(needle);
      if (p == std::string::npos) return Value::from(int64_t{-1});
      return Value::from(string_length(text->substr(0, p)));
    });
  }
  if (name == "join") {
    return method([text](Args& args) {
      const Value* items = arg(args, 0);
      if (!items || !items->is_list()) template_fail("join expects a list");
      std::string out;
      for (size_t i = 0; i < items->list->size(); ++i) {
        if (i > 0) out += *text;
        out += as_text((*items->list)[i]);
      }
      return Value::from(std::move(out));
    });
  }
  if (name == "isspace" || name == "isdigit" || name == "isalpha" || name == "isalnum" ||
      name == "islower" || name == "isupper") {
    return method([text, name](Args&) {
      std::vector<char32_t> cps = decode(*text);
      if (cps.empty()) return Value::from(false);
      bool any_cased = false;
      for (char32_t c : cps) {
        auto cp = static_cast<utf8proc_int32_t>(c);
        auto cat = utf8proc_category(cp);
        bool letter = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
        bool digit = cat == UTF8PROC_CATEGORY_ND;
        bool lower = utf8proc_toupper(cp) != cp, upper = utf8proc_tolower(cp) != cp;
        any_cased |= lower || upper;
        bool ok = name == "isspace" ? is_py_space(c)
                  : name == "isdigit" ? digit
                  : name == "isalpha" ? letter
                  : name == "isalnum" ? letter || digit
                  : name == "islower" ? !upper
                                      : !lower;
        if (!ok) return Value::from(false);
      }
      if (name == "islower" || name == "isupper") return Value::from(any_cased);
      return Value::from(true);
    });
  }
  return std::nullopt;
}

List dict_items(const Value& d) {
  List out;
  for (const auto& [k, v] : *d.dict) out.push_back(Value::from(List{Value::from(k), v}));
  return out;
}

std::optional<Value> dict_method(const Value& self, const std::string& name) {
  auto method = [](auto f) { return std::optional<Value>(Value::from(Function(std::move(f)))); };
  if (name == "items") return method([self](Args&) { return Value::from(dict_items(self)); });
  if (name == "keys" || name == "values") {
    bool keys = name == "keys";
    return method([self, keys](Args&) {
      List out;
      for (const auto& [k, v] : *self.dict) out.push_back(keys ? Value::from(k) : v);
      return Value::from(std::move(out));
    });
  }
  if (name == "get") {
    return method([self](Args& args) {
      const Value* key = arg(args, 0);
      if (!key) template_fail("get expected at least 1 argument");
      if (key->is_string()) {
        if (const Value* v = self.find(key->str())) return *v;
      }
      const Value* fallback = arg(args, 1);
      return fallback ? *fallback : Value::none();
    });
  }
  return std::nullopt;
}

// ---- filters

Value filter_join(Args& args) {
  const Value& items = subject_of(args, "join");
  const Value* sep = arg(args, 1, "d");
  const Value* attribute = arg(args, 2, "attribute");
  std::string d = sep ? as_text(*sep) : "";
  std::string out;
  List list = items.is_list() ? *items.list : List{};
  if (items.is_string()) {
    for (auto c : decode(items.str())) {
      std::string s;
      utf8_append(c, s);
      list.push_back(Value::from(s));
    }
  } else if (!items.is_list()) {
    template_fail("join: cannot join a " + items.type_name());
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += d;
    const Value& v = list[i];
    if (attribute) {
      const Value* a = attribute->is_string() ? v.find(attribute->str()) : nullptr;
      out += a ? as_text(*a) : "";
    } else {
      out += as_text(v);
    }
  }
  return Value::from(std::move(out));
}

Value attribute_of(const Value& v, const std::string& path) {
  Value current = v;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const Value* next = current.find(part);
    if (!next && current.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      size_t i = std::stoul(part);
      if (i < current.list->size()) next = &(*current.list)[i];
    }
    if (!next) return Value::undefined(path);
    current = *next;
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

List as_list(const Value& v, const char* what) {
  if (v.is_list()) return *v.list;
  if (v.is_dict()) {
    List keys;
    for (const auto& [k, item] : *v.dict) keys.push_back(Value::from(k));
    return keys;
  }
  if (v.is_string()) {
    List chars;
    for (auto c : decode(v.str())) {
      std::string s;
      utf8_append(c, s);
      chars.push_back(Value::from(s));
    }
    return chars;
  }
  if (v.is_undefined()) return {};
  template_fail(std::string(what) + ": '" + v.type_name() + "' object is not iterable");
}

// select/reject/selectattr/rejectattr: keep the items whose test (truthiness without one)
// passes, or fails for the reject forms.
Value filter_select(Args& args, bool by_attribute, bool keep) {
  List items = as_list(subject_of(args, "select"), "select");
  size_t next = 1;
  std::string attribute;
  if (by_attribute) {
    attribute = string_arg(args, next++, "selectattr");
  }
  const Value* test = arg(args, next++);
  List out;
  for (const auto& item : items) {
    Value v = by_attribute ? attribute_of(item, attribute) : item;
    bool pass;
    if (!test) {
      pass = v.truthy();
    } else {
      if (!test->is_string()) template_fail("select: the test name must be a string");
      Args test_args;
      test_args.positional.push_back(v);
      for (size_t i = next; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
      pass = apply_test(test->str(), test_args);
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::from(std::move(out));
}

Value filter_map(Args& args) {
  List items = as_list(subject_of(args, "map"), "map");
  List out;
  if (const Value* attribute = arg(args, 99, "attribute")) {
    const Value* fallback = arg(args, 99, "default");
    for (const auto& item : items) {
      Value v = attribute_of(item, as_text(*attribute));
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::from(std::move(out));
  }
  const std::string& filter = string_arg(args, 1, "map");
  for (const auto& item : items) {
    Args filter_args;
    filter_args.positional.push_back(item);
    for (size_t i = 2; i < args.positional.size(); ++i) filter_args.positional.push_back(args.positional[i]);
    filter_args.keyword = args.keyword;
    out.push_back(apply_filter(filter, filter_args));
  }
  return Value::from(std::move(out));
}

Value filter_int(const Value& v, const Args& args) {
  int64_t fallback = int_arg(args, 1, "default", 0);
  if (v.kind == Value::Kind::kInt) return v;
  if (v.kind == Value::Kind::kBool) return Value::from(int64_t{v.boolean});
  if (v.kind == Value::Kind::kFloat) return Value::from(static_cast<int64_t>(std::trunc(v.real)));
  if (v.is_string()) {
    std::string s = strip(v.str(), nullptr, true, true);
    char* end = nullptr;
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size()) return Value::from(static_cast<int64_t>(i));
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value::from(static_cast<int64_t>(std::trunc(d)));
  }
  return Value::from(fallback);
}

Value filter_float(const Value& v) {
  if (v.is_number()) return Value::from(v.number());
  if (v.kind == Value::Kind::kBool) return Value::from(v.boolean ? 1.0 : 0.0);
  if (v.is_string()) {
    char* end = nullptr;
    std::string s = strip(v.str(), nullptr, true, true);
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value::from(d);
  }
  return Value::from(0.0);
}

Value filter_indent(Args& args) {
  std::string text = as_text(subject_of(args, "indent"));
  const Value* width = arg(args, 1, "width");
  std::string pad = !width ? "    " : width->is_string() ? width->str() : std::string(std::max<int64_t>(width->integer, 0), ' ');
  const Value* first = arg(args, 2, "first");
  const Value* blank = arg(args, 3, "blank");
  std::string out;
  size_t start = 0;
  bool first_line = true;
  while (true) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    bool indent = first_line ? (first && first->truthy()) : (!line.empty() || (blank && blank->truthy()));
    if (indent) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    first_line = false;
  }
  return Value::from(std::move(out));
}

Value sort_items(Args& args, bool is_dictsort) {
  const Value& subject = subject_of(args, "sort");
  List items = is_dictsort ? (subject.is_dict() ? dict_items(subject) : List{}) : as_list(subject, "sort");
  if (is_dictsort && !subject.is_dict()) template_fail("dictsort expects a dict");
  bool reverse = false, case_sensitive = false;
  std::string attribute;
  if (is_dictsort) {
    if (const Value* v = arg(args, 1, "case_sensitive")) case_sensitive = v->truthy();
    if (const Value* v = arg(args, 3, "reverse")) reverse = v->truthy();
    if (const Value* v = arg(args, 2, "by"); v && v->is_string() && v->str() == "value") attribute = "1";
    else attribute = "0";
  } else {
    if (const Value* v = arg(args, 1, "reverse")) reverse = v->truthy();
    if (const Value* v = arg(args, 2, "case_sensitive")) case_sensitive = v->truthy();
    if (const Value* v = arg(args, 3, "attribute")) attribute = as_text(*v);
  }
  auto key = [&](const Value& v) {
    Value k = attribute.empty() ? v : attribute_of(v, attribute);
    if (!case_sensitive && k.is_string()) return Value::from(map_case(k.str(), 0));
    return k;
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    Value ka = key(a), kb = key(b);
    bool less;
    if (ka.is_string() && kb.is_string()) {
      less = ka.str() < kb.str();
    } else if (ka.is_number() && kb.is_number()) {
      less = ka.number() < kb.number();
    } else {
      template_fail("sort: cannot compare '" + ka.type_name() + "' and '" + kb.type_name() + "'");
    }
    return less;
  });
  if (reverse) std::reverse(items.begin(), items.end());
  return Value::from(std::move(items));
}

}  // namespace

std::optional<Value> bound_method(const Value& value, const std::string& name) {
  if (value.is_string()) return string_method(value, name);
  if (value.is_dict() && !value.is_namespace) return dict_method(value, name);
  return std::nullopt;
}

Value apply_filter(const std::string& name, Args& args) {
  const Value& v = subject_of(args, name.c_str());
  if (name == "length" || name == "count") {
    if (v.is_string()) return Value::from(string_length(v.str()));
    if (v.is_list()) return Value::from(static_cast<int64_t>(v.list->size()));
    if (v.is_dict()) return Value::from(static_cast<int64_t>(v.dict->size()));
    if (v.is_undefined()) return Value::from(int64_t{0});
    template_fail("object of type '" + v.type_name() + "' has no len()");
  }
  if (name == "trim") return Value::from(strip(as_text(v), arg(args, 1, "chars"), true, true));
  if (name == "tojson") return Value::from(json_dumps(v, json_dump_options(args)));
  if (name == "items") {
    if (v.is_undefined()) return Value::from(List{});
    if (!v.is_dict()) template_fail("items: expected a dict, got " + v.type_name());
    return Value::from(dict_items(v));
  }
  if (name == "dictsort") return sort_items(args, true);
  if (name == "sort") return sort_items(args, false);
  if (name == "selectattr") return filter_select(args, true, true);
  if (name == "rejectattr") return filter_select(args, true, false);
  if (name == "select") return filter_select(args, false, true);
  if (name == "reject") return filter_select(args, false, false);
  if (name == "map") return filter_map(args);
  if (name == "join") return filter_join(args);
  if (name == "default" || name == "d") {
    const Value* fallback = arg(args, 1, "default_value");
    const Value* boolean = arg(args, 2, "boolean");
    bool use = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
    return use ? (fallback ? *fallback : Value::from(std::string())) : v;
  }
  if (name == "upper" || name == "lower") return Value::from(map_case(as_text(v), name == "upper" ? 1 : 0));
  if (name == "capitalize") return Value::from(capitalize(as_text(v)));
  if (name == "title") return Value::from(title(as_text(v)));
  if (name == "replace") {
    return Value::from(replace(as_text(v), as_text(*arg(args, 1)), as_text(*arg(args, 2)),
                               int_arg(args, 3, "count", -1)));
  }
  if (name == "first" || name == "last") {
    List items = as_list(v, name.c_str());
    if (items.empty()) return Value::undefined(name);
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::from(as_list(v, "list"));
  if (name == "reverse") {
    if (v.is_string()) {
      std::vector<char32_t> cps = decode(v.str());
      std::reverse(cps.begin(), cps.end());
      return Value::from(encode(cps, 0, cps.size()));
    }
    List items = as_list(v, "reverse");
    std::reverse(items.begin(), items.end());
    return Value::from(std::move(items));
  }
  if (name == "unique") {
    List out;
    for (const auto& item : as_list(v, "unique")) {
      bool seen = false;
      for (const auto& o : out) seen = seen || values_equal(o, item);
      if (!seen) out.push_back(item);
    }
    return Value::from(std::move(out));
  }
  if (name == "string") return Value::from(as_text(v));
  if (name == "safe" || name == "e" || name == "escape" || name == "forceescape") {
    if (name == "safe") return v;
    std::string out;  // HTML escaping, as markupsafe does it
    for (char c : as_text(v)) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return Value::from(std::move(out));
  }
  if (name == "int") return filter_int(v, args);
  if (name == "float") return filter_float(v);
  if (name == "abs") {
    if (v.kind == Value::Kind::kInt) return Value::from(v.integer < 0 ? -v.integer : v.integer);
    if (v.kind == Value::Kind::kFloat) return Value::from(std::fabs(v.real));
    template_fail("bad operand type for abs(): '" + v.type_name() + "'");
  }
  if (name == "round") {
    int64_t precision = int_arg(args, 1, "precision", 0);
    double scale = std::pow(10.0, static_cast<double>(precision));
    return Value::from(std::nearbyint(v.number() * scale) / scale);
  }
  if (name == "sum" || name == "min" || name == "max") {
    List items = as_list(v, name.c_str());
    if (name == "sum") {
      Value total = Value::from(int64_t{0});
      for (const auto& item : items) {
        if (!item.is_number()) template_fail("sum: items must be numbers");
        total = total.kind == Value::Kind::kInt && item.kind == Value::Kind::kInt
                    ? Value::from(total.integer + item.integer)
                    : Value::from(total.number() + item.number());
      }
      return total;
    }
    if (items.empty()) return Value::undefined(name);
    Value best = items[0];
    for (const auto& item : items) {
      bool less = item.is_string() && best.is_string() ? item.str() < best.str() : item.number() < best.number();
      bool greater = item.is_string() && best.is_string() ? best.str() < item.str() : best.number() < item.number();
      if (name == "min" ? less : greater) best = item;
    }
    return best;
  }
  if (name == "indent") return filter_indent(args);
  if (name == "wordcount") return Value::from(static_cast<int64_t>(split(as_text(v), nullptr, -1, false).size()));
  if (name == "center" || name == "truncate" || name == "wordwrap" || name == "format" || name == "urlencode") {
    template_fail("filter '" + name + "' is not supported by paceline's chat template interpreter");
  }
  template_fail("no filter named '" + name + "'");
}

bool apply_test(const std::string& name, Args& args) {
  const Value& v = subject_of(args, name.c_str());
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == K::kInt;
  if (name == "float") return v.kind == K::kFloat;
  if (name == "boolean") return v.kind == K::kBool;
  if (name == "true") return v.kind == K::kBool && v.boolean;
  if (name == "false") return v.kind == K::kBool && !v.boolean;
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "callable") return v.kind == K::kFunction;
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    return map_case(v.str(), name == "lower" ? 0 : 1) == v.str();
  }
  const Value* other = arg(args, 1);
  auto need_other = [&] {
    if (!other) template_fail("test '" + name + "' needs an argument");
    return *other;
  };
  if (name == "eq" || name == "equalto" || name == "==") return values_equal(v, need_other());
  if (name == "ne" || name == "!=") return !values_equal(v, need_other());
  if (name == "sameas") {
    Value o = need_other();
    if (v.kind != o.kind) return false;
    if (v.is_none() || v.is_undefined()) return true;
    if (v.kind == K::kBool) return v.boolean == o.boolean;
    if (v.is_list()) return v.list == o.list;
    if (v.is_dict()) return v.dict == o.dict;
    return values_equal(v, o);
  }
  if (name == "in") {
    Value o = need_other();
    if (o.is_string()) return v.is_string() && o.str().find(v.str()) != std::string::npos;
    if (o.is_dict()) return v.is_string() && o.find(v.str());
    for (const auto& item : as_list(o, "in")) {
      if (values_equal(item, v)) return true;
    }
    return false;
  }
  if (name == "odd" || name == "even") {
    if (v.kind != K::kInt) template_fail("test '" + name + "' expects an integer");
    return (v.integer % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    Value o = need_other();
    if (v.kind != K::kInt || o.kind != K::kInt || o.integer == 0) template_fail("divisibleby expects integers");
    return v.integer % o.integer == 0;
  }
  if (name == "lt" || name == "<" || name == "gt" || name == ">" || name == "le" || name == "<=" ||
      name == "ge" || name == ">=") {
    Value o = need_other();
    if (!(v.is_number() && o.is_number()) && !(v.is_string() && o.is_string())) {
      template_fail("test '" + name + "' cannot compare '" + v.type_name() + "' and '" + o.type_name() + "'");
    }
    bool lt = v.is_string() ? v.str() < o.str() : v.number() < o.number();
    bool eq = values_equal(v, o);
    if (name == "lt" || name == "<") return lt;
    if (name == "le" || name == "<=") return lt || eq;
    if (name == "gt" || name == ">") return !lt && !eq;
    return !lt;
  }
  template_fail("no test named '" + name + "'");
}

Dict global_functions() {
  Dict g;
  g.emplace_back("raise_exception", Value::from(Function([](Args& args) -> Value {
    template_fail("the template raised an error: " + (args.positional.empty() ? std::string() : as_text(args.positional[0])));
  })));
  g.emplace_back("range", Value::from(Function([](Args& args) {
    int64_t start = 0, stop = 0, step = 1;
    auto get = [&](size_t i) {
      if (args.positional[i].kind != Value::Kind::kInt) template_fail("range() expects integers");
      return args.positional[i].integer;
    };
    if (args.positional.size() == 1) {
      stop = get(0);
    } else if (args.positional.size() >= 2) {
      start = get(0);
      stop = get(1);
      if (args.positional.size() > 2) step = get(2);
    } else {
      template_fail("range expected at least 1 argument");
    }
    if (step == 0) template_fail("range() arg 3 must not be zero");
    List out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value::from(i));
    return Value::from(std::move(out));
  })));
  g.emplace_back("namespace", Value::from(Function([](Args& args) {
    Dict attributes;
    for (const auto& v : args.positional) {
      if (!v.is_dict()) template_fail("namespace() takes only a dict as a positional argument");
      for (const auto& entry : *v.dict) attributes.push_back(entry);
    }
    for (const auto& entry : args.keyword) attributes.push_back(entry);
    Value ns = Value::from(std::move(attributes));
    ns.is_namespace = true;
    return ns;
  })));
  g.emplace_back("dict", Value::from(Function([](Args& args) {
    Dict items;
    for (const auto& entry : args.keyword) items.push_back(entry);
    return Value::from(std::move(items));
  })));
  g.emplace_back("strftime_now", Value::from(Function([](Args& args) {
    std::string format = args.positional.empty() ? "" : as_text(args.positional[0]);
    std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm local{};
    localtime_r(&now, &local);
    char buffer[256];
    size_t n = std::strftime(buffer, sizeof(buffer), format.c_str(), &local);
    return Value::from(std::string(buffer, n));
  })));
  return g;
}

}  // namespace paceline::jinja
