#pragma once
// A reader of the Prometheus text exposition format (0.0.4) for tests, and the rules that
// `promtool check metrics` applies to it, checked here so that CI needs no promtool: the text
// parses (HELP and TYPE before a family's samples, each family in one block, label syntax and
// escapes, float values), every family has help, a counter's name ends in _total and no other's
// does, only a histogram has _bucket/_sum/_count samples, names are snake_case without a type or
// an abbreviated unit in them, and each histogram is whole (le bounds increasing, counts
// cumulative, a +Inf bucket equal to _count, a _sum). The one colon allowed is the prefix's,
// which vLLM's names have too.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace paceline::testing {

using PromLabels = std::map<std::string, std::string>;

struct PromSample {
  std::string name;  // the sample's own name: a histogram's has _bucket, _sum or _count
  PromLabels labels;
  double value = 0;
};

struct PromFamily {
  std::string type;  // counter, gauge, histogram, summary, untyped
  std::string help;
  std::vector<PromSample> samples;
};

struct PromText {
  std::map<std::string, PromFamily> families;
  std::vector<std::string> problems;  // empty: promtool would accept it

  // The value of the one sample `name` whose labels include `labels`; nullopt when none or
  // several match.
  std::optional<double> value(const std::string& name, const PromLabels& labels = {}) const {
    std::optional<double> found;
    int matches = 0;
    for (const auto& [family, f] : families) {
      for (const PromSample& s : f.samples) {
        if (s.name != name) continue;
        bool all = true;
        for (const auto& [k, v] : labels) {
          auto it = s.labels.find(k);
          all = all && it != s.labels.end() && it->second == v;
        }
        if (all) {
          found = s.value;
          ++matches;
        }
      }
    }
    return matches == 1 ? found : std::nullopt;
  }
};

namespace prom_detail {

inline bool is_name(const std::string& s, bool allow_colon) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && !(allow_colon && c == ':'))
      return false;
  }
  return true;
}

inline std::optional<double> parse_value(const std::string& s) {
  if (s == "+Inf" || s == "Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  if (s == "NaN") return NAN;
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// `{a="x",b="y"}` at text[pos]; advances pos past the closing brace.
inline std::optional<PromLabels> parse_labels(const std::string& text, size_t& pos,
                                              std::string& problem) {
  PromLabels labels;
  ++pos;  // '{'
  while (pos < text.size() && text[pos] != '}') {
    size_t eq = text.find('=', pos);
    if (eq == std::string::npos) return problem = "label without '='", std::nullopt;
    std::string key = text.substr(pos, eq - pos);
    if (!is_name(key, false)) return problem = "bad label name '" + key + "'", std::nullopt;
    pos = eq + 1;
    if (pos >= text.size() || text[pos] != '"')
      return problem = "unquoted label value", std::nullopt;
    std::string value;
    for (++pos; pos < text.size() && text[pos] != '"'; ++pos) {
      if (text[pos] == '\\') {
        if (++pos >= text.size()) break;
        char e = text[pos];
        if (e == 'n')
          value += '\n';
        else if (e == '\\' || e == '"')
          value += e;
        else
          return problem = "bad escape in a label value", std::nullopt;
      } else if (text[pos] == '\n') {
        return problem = "newline in a label value", std::nullopt;
      } else {
        value += text[pos];
      }
    }
    if (pos >= text.size()) return problem = "unterminated label value", std::nullopt;
    ++pos;  // closing quote
    if (!labels.emplace(key, value).second)
      return problem = "label '" + key + "' twice", std::nullopt;
    if (pos < text.size() && text[pos] == ',') ++pos;
  }
  if (pos >= text.size()) return problem = "unterminated labels", std::nullopt;
  ++pos;  // '}'
  return labels;
}

// The family a sample belongs to: its name, or the histogram it is a part of.
inline std::string family_of(const std::string& sample,
                             const std::map<std::string, PromFamily>& f) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s(suffix);
    if (sample.size() > s.size() && sample.ends_with(s)) {
      auto it = f.find(sample.substr(0, sample.size() - s.size()));
      if (it != f.end() && (it->second.type == "histogram" || it->second.type == "summary"))
        return it->first;
    }
  }
  return sample;
}

inline std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> parts;
  std::string base = name.substr(name.find(':') == std::string::npos ? 0 : name.find(':') + 1);
  std::stringstream ss(base);
  for (std::string p; std::getline(ss, p, '_');) parts.push_back(p);
  return parts;
}

// promtool's naming rules for one family.
inline void lint_family(const std::string& name, const PromFamily& f,
                        std::vector<std::string>& problems) {
  auto problem = [&](const std::string& what) { problems.push_back(name + ": " + what); };
  if (f.help.empty()) problem("no help text");
  const size_t colons = static_cast<size_t>(std::count(name.begin(), name.end(), ':'));
  if (colons > 1) problem("more colons than the prefix's");
  for (char c : name) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      problem("not snake_case");
      break;
    }
  }
  const bool total = name.ends_with("_total");
  if (f.type == "counter" && !total) problem("counter metrics should have \"_total\" suffix");
  if (f.type != "counter" && total) problem("a " + f.type + " named _total");
  if (f.type != "histogram" && f.type != "summary") {
    for (const char* s : {"_bucket", "_sum", "_count"}) {
      if (name.ends_with(s)) problem(std::string("non-histogram metric with the suffix ") + s);
    }
  }
  static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary"};
  static const std::set<std::string> kAbbreviations = {"s",  "ms", "us", "ns", "sec", "b", "kb",
                                                       "mb", "gb", "tb", "pb", "m",   "h", "d"};
  static const std::set<std::string> kNonBaseUnits = {
      "milliseconds", "microseconds", "nanoseconds", "minutes",   "hours", "days",
      "weeks",        "kilobytes",    "megabytes",   "gigabytes", "bits"};
  for (const std::string& part : name_parts(name)) {
    if (kTypes.contains(part)) problem("metric name should not include type '" + part + "'");
    if (kAbbreviations.contains(part)) problem("abbreviated unit '" + part + "'");
    if (kNonBaseUnits.contains(part)) problem("non-base unit '" + part + "'");
  }
}

// A histogram's samples, per label set (le aside): buckets ascending and cumulative, +Inf equal
// to _count, and a _sum.
inline void lint_histogram(const std::string& name, const PromFamily& f,
                           std::vector<std::string>& problems) {
  struct Series {
    std::vector<std::pair<double, double>> buckets;
    std::optional<double> sum, count;
  };
  std::map<PromLabels, Series> series;
  for (const PromSample& s : f.samples) {
    PromLabels key = s.labels;
    if (s.name == name + "_bucket") {
      auto le = key.find("le");
      if (le == key.end()) {
        problems.push_back(name + ": a bucket without le");
        continue;
      }
      std::optional<double> bound = parse_value(le->second);
      key.erase(le);
      if (!bound)
        problems.push_back(name + ": bad le '" + le->second + "'");
      else
        series[key].buckets.emplace_back(*bound, s.value);
    } else if (s.name == name + "_sum") {
      series[key].sum = s.value;
    } else if (s.name == name + "_count") {
      series[key].count = s.value;
    } else {
      problems.push_back(name + ": sample " + s.name + " in a histogram");
    }
  }
  for (const auto& [labels, h] : series) {
    if (h.buckets.empty() || !std::isinf(h.buckets.back().first))
      problems.push_back(name + ": no +Inf bucket");
    for (size_t i = 1; i < h.buckets.size(); ++i) {
      if (!(h.buckets[i].first > h.buckets[i - 1].first))
        problems.push_back(name + ": le bounds not increasing");
      if (h.buckets[i].second < h.buckets[i - 1].second)
        problems.push_back(name + ": bucket counts not cumulative");
    }
    if (!h.sum) problems.push_back(name + ": no _sum");
    if (!h.count) problems.push_back(name + ": no _count");
    if (h.count && !h.buckets.empty() && h.buckets.back().second != *h.count)
      problems.push_back(name + ": +Inf bucket differs from _count");
  }
}

}  // namespace prom_detail

inline PromText parse_prometheus(const std::string& text) {
  using namespace prom_detail;
  PromText out;
  std::set<std::string> closed;  // families whose block has ended
  std::string current;
  size_t line_no = 0;
  auto problem = [&](const std::string& what) {
    out.problems.push_back("line " + std::to_string(line_no) + ": " + what);
  };
  auto enter = [&](const std::string& family) {
    if (family == current) return;
    if (!current.empty()) closed.insert(current);
    if (closed.contains(family)) problem(family + ": its samples are not in one block");
    current = family;
  };
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::stringstream ls(line.substr(1));
      std::string keyword, name;
      ls >> keyword >> name;
      if (keyword != "HELP" && keyword != "TYPE") continue;  // a comment
      if (!is_name(name, true)) {
        problem("bad metric name '" + name + "'");
        continue;
      }
      std::string rest;
      std::getline(ls, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      enter(name);
      PromFamily& f = out.families[name];
      if (keyword == "TYPE") {
        if (!f.type.empty()) problem(name + ": a second TYPE");
        if (!f.samples.empty()) problem(name + ": TYPE after its samples");
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (!kTypes.contains(rest)) problem(name + ": unknown type '" + rest + "'");
        f.type = rest;
      } else {
        if (!f.help.empty()) problem(name + ": a second HELP");
        f.help = rest;
      }
      continue;
    }
    size_t pos = 0;
    while (pos < line.size() && line[pos] != '{' && line[pos] != ' ') ++pos;
    PromSample s;
    s.name = line.substr(0, pos);
    if (!is_name(s.name, true)) {
      problem("bad sample name '" + s.name + "'");
      continue;
    }
    if (pos < line.size() && line[pos] == '{') {
      std::string why;
      std::optional<PromLabels> labels = parse_labels(line, pos, why);
      if (!labels) {
        problem(s.name + ": " + why);
        continue;
      }
      s.labels = std::move(*labels);
    }
    if (pos >= line.size() || line[pos] != ' ') {
      problem(s.name + ": no value");
      continue;
    }
    std::string rest = line.substr(pos + 1);
    std::string value = rest.substr(0, rest.find(' '));
    std::optional<double> v = parse_value(value);
    if (!v) {
      problem(s.name + ": bad value '" + value + "'");
      continue;
    }
    s.value = *v;
    const std::string family = family_of(s.name, out.families);
    enter(family);
    PromFamily& f = out.families[family];
    if (f.type.empty()) f.type = "untyped";
    f.samples.push_back(std::move(s));
  }
  for (const auto& [name, f] : out.families) {
    lint_family(name, f, out.problems);
    if (f.type == "histogram") lint_histogram(name, f, out.problems);
  }
  return out;
}

}  // namespace paceline::testing
