#include "engine/metrics.h"

#include <cctype>
#include <cmath>
#include <string_view>
#include <fmt/format.h>

#include "base/error.h"

namespace paceline {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  for (size_t i = 1; i < bounds_.size(); ++i) {
    if (!(bounds_[i] > bounds_[i - 1])) fail("histogram bounds must increase strictly");
  }
  buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::cumulative_counts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    out[i] = total;
  }
  return out;
}

std::vector<double> exponential_buckets(double start, double factor, int n) {
  if (start <= 0 || factor <= 1 || n < 1) fail("exponential_buckets: bad start/factor/count");
  std::vector<double> out;
  double b = start;
  for (int i = 0; i < n; ++i, b *= factor) out.push_back(b);
  return out;
}

std::vector<double> one_two_five_buckets(int64_t max) {
  if (max < 1) fail("one_two_five_buckets: max must be >= 1, got {}", max);
  std::vector<double> out;
  for (int64_t decade = 1;; decade *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (m * decade > max) return out;
      out.push_back(static_cast<double>(m * decade));
    }
  }
}

namespace {

bool is_prometheus_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

bool is_snake_case(std::string_view name) {
  for (char c : name) {
    if (std::isupper(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

void check_label_names(const std::string& metric, const MetricLabels& labels, bool histogram) {
  for (const auto& [key, value] : labels) {
    if (!is_prometheus_name(key) || key.starts_with("__")) {
      fail("metric {}: label name '{}' is not a Prometheus label name", metric, key);
    }
    if (histogram && key == "le") fail("metric {}: a histogram cannot have a label 'le'", metric);
  }
}

// The names promtool's lint accepts (the prefix's colon aside, which vLLM's names have too).
void check_metric_name(const std::string& name, bool counter) {
  if (!is_prometheus_name(name) || !is_snake_case(name)) {
    fail("metric '{}': want a snake_case Prometheus name", name);
  }
  if (counter != name.ends_with("_total")) {
    fail("metric '{}': {}", name,
         counter ? "a counter's name ends in _total" : "only a counter's name ends in _total");
  }
  for (const char* reserved : {"_bucket", "_sum", "_count", "_created"}) {
    if (name.ends_with(reserved)) fail("metric '{}': {} is reserved for histograms", name, reserved);
  }
}

}  // namespace

std::string metrics_prefix_for(const std::string& name) {
  if (name.empty()) return "";
  if (!is_prometheus_name(name)) {
    fail("--metrics-prefix '{}': want a Prometheus name (letters, digits and '_', not starting "
         "with a digit), e.g. 'vllm'",
         name);
  }
  return name + ":";
}

void MetricsRegistry::set_constant_labels(MetricLabels labels) {
  check_label_names("(every series)", labels, /*histogram=*/false);
  std::lock_guard lock(mu_);
  constant_labels_ = std::move(labels);
}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, const std::string& help,
                                                 Type type) {
  if (!families_.contains(name)) check_metric_name(name, type == Type::kCounter);
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.type = type;
    it->second.help = help;
  } else if (it->second.type != type) {
    fail("metric {} is already registered with another type", name);
  }
  return it->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const MetricLabels& labels) {
  check_label_names(name, labels, /*histogram=*/false);
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kCounter).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const MetricLabels& labels) {
  check_label_names(name, labels, /*histogram=*/false);
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kGauge).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      const std::vector<double>& bounds,
                                      const MetricLabels& labels) {
  check_label_names(name, labels, /*histogram=*/true);
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kHistogram).histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(bounds);
  return *slot;
}

namespace {

std::string escape_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_labels(const MetricLabels& labels, const std::string& extra_key = "",
                          const std::string& extra_value = "") {
  std::string out;
  // `le` goes last, after the series' own labels, as the exposition examples write it.
  for (const auto& [k, v] : labels) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", k, escape_label_value(v));
  }
  if (!extra_key.empty()) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", extra_key, extra_value);
  }
  if (!out.empty()) out += "}";
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// A series' labels with the constant ones added; its own win.
MetricLabels with_constant(const MetricLabels& labels, const MetricLabels& constant) {
  if (constant.empty()) return labels;
  MetricLabels all = labels;
  all.insert(constant.begin(), constant.end());
  return all;
}

}  // namespace

std::string MetricsRegistry::render_prometheus(const std::string& prefix) const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, fam] : families_) {
    const std::string full = prefix + name;
    const char* type = fam.type == Type::kCounter ? "counter"
                       : fam.type == Type::kGauge ? "gauge"
                                                  : "histogram";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", full, fam.help, full, type);
    for (const auto& [own, c] : fam.counters) {
      const MetricLabels labels = with_constant(own, constant_labels_);
      out += fmt::format("{}{} {}\n", full, format_labels(labels), format_value(c->value()));
    }
    for (const auto& [own, g] : fam.gauges) {
      const MetricLabels labels = with_constant(own, constant_labels_);
      out += fmt::format("{}{} {}\n", full, format_labels(labels), format_value(g->value()));
    }
    for (const auto& [own, h] : fam.histograms) {
      const MetricLabels labels = with_constant(own, constant_labels_);
      auto counts = h->cumulative_counts();
      for (size_t i = 0; i < h->bounds().size(); ++i) {
        out += fmt::format("{}_bucket{} {}\n", full,
                           format_labels(labels, "le", format_value(h->bounds()[i])), counts[i]);
      }
      out += fmt::format("{}_bucket{} {}\n", full, format_labels(labels, "le", "+Inf"),
                         counts.back());
      out += fmt::format("{}_sum{} {}\n", full, format_labels(labels), format_value(h->sum()));
      out += fmt::format("{}_count{} {}\n", full, format_labels(labels), h->count());
    }
  }
  return out;
}

}  // namespace paceline
