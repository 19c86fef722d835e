#include "exec/kernel_timeline.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>

namespace paceline {
namespace {

void erase_all(std::string& s, const std::string& what) {
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at))
    s.erase(at, what.size());
}

// Record ranges [first, last) of each step, records sorted by start.
std::vector<std::pair<size_t, size_t>> cut_into_steps(const std::vector<KernelRecord>& r,
                                                      int steps) {
  const size_t n = r.size();
  std::vector<std::pair<size_t, size_t>> out;
  if (n % static_cast<size_t>(steps) == 0) {
    const size_t k = n / static_cast<size_t>(steps);
    for (size_t s = 0; s < static_cast<size_t>(steps); ++s) out.emplace_back(s * k, (s + 1) * k);
    return out;
  }
  // The gap before record i: its start after the latest end of the records before it.
  std::vector<std::pair<uint64_t, size_t>> gaps;  // (gap, i)
  uint64_t latest_end = r[0].end_ns;
  for (size_t i = 1; i < n; ++i) {
    gaps.emplace_back(r[i].start_ns > latest_end ? r[i].start_ns - latest_end : 0, i);
    latest_end = std::max(latest_end, r[i].end_ns);
  }
  // The steps - 1 longest (the earlier first on a tie) are the boundaries.
  std::stable_sort(gaps.begin(), gaps.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  const size_t cuts = std::min(gaps.size(), static_cast<size_t>(steps - 1));
  std::vector<size_t> at;
  for (size_t c = 0; c < cuts; ++c) at.push_back(gaps[c].second);
  std::sort(at.begin(), at.end());
  size_t first = 0;
  for (size_t b : at) {
    out.emplace_back(first, b);
    first = b;
  }
  out.emplace_back(first, n);
  return out;
}

}  // namespace

std::string short_kernel_name(const std::string& name) {
  std::string s = name;
  if (name.rfind("_Z", 0) == 0) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> d(
        abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
    if (status != 0 || d == nullptr) return name;
    s = d.get();
  } else {
    return name;
  }
  erase_all(s, "(anonymous namespace)::");
  erase_all(s, "paceline::cuda::");
  erase_all(s, "paceline::");
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  // The parameter list: the first '(' outside template arguments.
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth == 0) {
      s.resize(i);
      break;
    }
  }
  return s;
}

KernelTimelineSummary summarize_kernel_timeline(std::vector<KernelRecord> records, int steps) {
  KernelTimelineSummary out;
  out.steps = std::max(steps, 0);
  if (steps < 1 || records.empty()) return out;
  std::sort(records.begin(), records.end(), [](const KernelRecord& a, const KernelRecord& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
  });
  struct Totals {
    size_t launches = 0;
    double busy_ns = 0;
    double idle_ns = 0;
  };
  std::map<std::string, Totals> by_name;
  std::map<std::string, std::string> short_names;
  double span_ns = 0, busy_ns = 0;
  for (const auto& [first, last] : cut_into_steps(records, steps)) {
    uint64_t latest_end = records[first].end_ns;
    uint64_t covered_from = records[first].start_ns;  // the union's current interval
    double union_ns = 0;
    for (size_t i = first; i < last; ++i) {
      const KernelRecord& k = records[i];
      auto [it, fresh] = short_names.try_emplace(k.name);
      if (fresh) it->second = short_kernel_name(k.name);
      Totals& t = by_name[it->second];
      t.launches += 1;
      t.busy_ns += k.end_ns > k.start_ns ? static_cast<double>(k.end_ns - k.start_ns) : 0.0;
      if (i > first && k.start_ns > latest_end) {
        t.idle_ns += static_cast<double>(k.start_ns - latest_end);
        union_ns += static_cast<double>(latest_end - covered_from);
        covered_from = k.start_ns;
      }
      latest_end = std::max(latest_end, k.end_ns);
    }
    union_ns += static_cast<double>(latest_end - covered_from);
    span_ns += static_cast<double>(latest_end - records[first].start_ns);
    busy_ns += union_ns;
  }
  const double per_step = 1.0 / static_cast<double>(steps);
  out.launches_per_step = static_cast<double>(records.size()) * per_step;
  out.span_us_per_step = span_ns * per_step / 1e3;
  out.busy_us_per_step = busy_ns * per_step / 1e3;
  out.idle_us_per_step = out.span_us_per_step - out.busy_us_per_step;
  for (const auto& [name, t] : by_name) {
    out.rows.push_back({name, static_cast<double>(t.launches) * per_step,
                        t.busy_ns * per_step / 1e3, t.idle_ns * per_step / 1e3});
  }
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const KernelTimelineRow& a, const KernelTimelineRow& b) {
                     return a.busy_us_per_step + a.idle_before_us_per_step >
                            b.busy_us_per_step + b.idle_before_us_per_step;
                   });
  return out;
}

std::string kernel_timeline_markdown(const KernelTimelineSummary& s, const std::string& title) {
  std::string out = fmt::format("### {}\n\n", title);
  if (s.rows.empty()) return out + "No kernel ran in the window.\n\n";
  out += fmt::format(
      "A step (the mean of {}): {:.1f} µs from its first kernel's start to its last kernel's "
      "end, a kernel running for {:.1f} µs of it and none for {:.1f} µs; {:.1f} launches.\n\n",
      s.steps, s.span_us_per_step, s.busy_us_per_step, s.idle_us_per_step, s.launches_per_step);
  out +=
      "| kernel | launches a step | µs running, a step | µs idle before it, a step | share of the "
      "step |\n";
  out += "| --- | ---: | ---: | ---: | ---: |\n";
  for (const KernelTimelineRow& r : s.rows) {
    std::string name = r.name;
    for (size_t at = name.find('|'); at != std::string::npos; at = name.find('|', at + 2)) {
      name.insert(at, "\\");
    }
    const double share =
        s.span_us_per_step > 0
            ? 100.0 * (r.busy_us_per_step + r.idle_before_us_per_step) / s.span_us_per_step
            : 0.0;
    out += fmt::format("| `{}` | {:.1f} | {:.1f} | {:.1f} | {:.1f}% |\n", name, r.launches_per_step,
                       r.busy_us_per_step, r.idle_before_us_per_step, share);
  }
  return out + "\n";
}

}  // namespace paceline
