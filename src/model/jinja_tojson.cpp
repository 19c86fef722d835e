#include "model/jinja_tojson.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/json_escape.h"
#include "model/chat_tojson.h"
#include "model/jinja_builtins.h"
#include "model/utf8.h"

namespace paceline::jinja {
namespace {

void append_ascii_escaped(std::string& out, const std::string& text) {
  std::string raw;
  append_json_escaped(raw, text);
  for (size_t i = 0; i < raw.size();) {
    if (static_cast<unsigned char>(raw[i]) < 0x80) {
      out += raw[i++];
      continue;
    }
    char32_t cp = utf8_next(raw, i);
    auto unit = [&](unsigned u) { out += fmt::format("\\u{:04x}", u); };
    if (cp >= 0x10000) {  // a surrogate pair, as Python writes it
      cp -= 0x10000;
      unit(0xD800 + (cp >> 10));
      unit(0xDC00 + (cp & 0x3FF));
    } else {
      unit(cp);
    }
  }
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& options) : options_(options) {
    item_sep_ = options.separators ? options.separators->first : options.indent ? "," : ", ";
    key_sep_ = options.separators ? options.separators->second : ": ";
  }

  void dump(const Value& v, int depth, std::string& out) const {
    switch (v.kind) {
      case Value::Kind::kNone:
        out += "null";
        return;
      case Value::Kind::kBool:
        out += v.boolean ? "true" : "false";
        return;
      case Value::Kind::kInt:
        out += std::to_string(v.integer);
        return;
      case Value::Kind::kFloat:
        out += chat_python_float_repr(v.real);
        return;
      case Value::Kind::kString:
        string(v.str(), out);
        return;
      case Value::Kind::kList: {
        if (v.list->empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < v.list->size(); ++i) {
          if (i > 0) out += item_sep_;
          newline(depth + 1, out);
          dump((*v.list)[i], depth + 1, out);
        }
        newline(depth, out);
        out += ']';
        return;
      }
      case Value::Kind::kDict: {
        if (v.is_namespace) break;
        if (v.dict->empty()) {
          out += "{}";
          return;
        }
        std::vector<const std::pair<std::string, Value>*> entries;
        for (const auto& entry : *v.dict) entries.push_back(&entry);
        if (options_.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](auto* a, auto* b) { return a->first < b->first; });
        }
        out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) out += item_sep_;
          newline(depth + 1, out);
          string(entries[i]->first, out);
          out += key_sep_;
          dump(entries[i]->second, depth + 1, out);
        }
        newline(depth, out);
        out += '}';
        return;
      }
      default:
        break;
    }
    template_fail("Object of type " + v.type_name() + " is not JSON serializable");
  }

 private:
  void string(const std::string& text, std::string& out) const {
    out += '"';
    if (options_.ensure_ascii) {
      append_ascii_escaped(out, text);
    } else {
      append_json_escaped(out, text);
    }
    out += '"';
  }

  void newline(int depth, std::string& out) const {
    if (!options_.indent) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += *options_.indent;
  }

  const JsonDumpOptions& options_;
  std::string item_sep_;
  std::string key_sep_;
};

}  // namespace

std::string json_dumps(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(value, 0, out);
  return out;
}

JsonDumpOptions json_dump_options(const Args& args) {
  JsonDumpOptions options;
  static const char* const kNames[] = {"ensure_ascii", "indent", "separators", "sort_keys"};
  auto set = [&](const std::string& name, const Value& v) {
    if (name == "ensure_ascii") {
      options.ensure_ascii = v.truthy();
    } else if (name == "indent") {
      if (v.kind == Value::Kind::kInt) {
        options.indent = std::string(std::max<int64_t>(v.integer, 0), ' ');
      } else if (v.is_string()) {
        options.indent = v.str();
      } else if (!v.is_none()) {
        template_fail("tojson: indent must be an int, a string or none, got " + v.type_name());
      }
    } else if (name == "separators") {
      if (v.is_none()) return;
      if (!v.is_list() || v.list->size() != 2 || !(*v.list)[0].is_string() || !(*v.list)[1].is_string()) {
        template_fail("tojson: separators must be a pair of strings");
      }
      options.separators.emplace((*v.list)[0].str(), (*v.list)[1].str());
    } else if (name == "sort_keys") {
      options.sort_keys = v.truthy();
    } else {
      template_fail("tojson: unexpected keyword argument '" + name + "'");
    }
  };
  for (size_t i = 1; i < args.positional.size(); ++i) {
    if (i > 4) template_fail("tojson takes at most 4 arguments");
    set(kNames[i - 1], args.positional[i]);
  }
  for (const auto& [k, v] : args.keyword) set(k, v);
  return options;
}

}  // namespace paceline::jinja
