#include "engine/metrics.h"

#include <cmath>
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

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, const std::string& help,
                                                 Type type) {
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
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kCounter).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const MetricLabels& labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kGauge).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      const std::vector<double>& bounds,
                                      const MetricLabels& labels) {
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
    for (const auto& [labels, c] : fam.counters) {
      out += fmt::format("{}{} {}\n", full, format_labels(labels), format_value(c->value()));
    }
    for (const auto& [labels, g] : fam.gauges) {
      out += fmt::format("{}{} {}\n", full, format_labels(labels), format_value(g->value()));
    }
    for (const auto& [labels, h] : fam.histograms) {
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
