#pragma once
// A small metrics registry (counters, gauges, histograms) that the server exports in Prometheus
// text format. Updates are lock-free atomics, so the engine thread never waits on a scrape.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace paceline {

using MetricLabels = std::map<std::string, std::string>;

class Counter {
 public:
  void inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // Upper bounds, strictly increasing; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Cumulative counts per bound (Prometheus "le" semantics), then the +Inf count.
  std::vector<uint64_t> cumulative_counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0.0};
  std::atomic<uint64_t> count_{0};
};

// Bucket bounds growing by `factor` from `start`, `n` of them.
std::vector<double> exponential_buckets(double start, double factor, int n);
// 1, 2, 5, 10, 20, 50, ... up to `max` (included when it is one of them): vLLM's bounds for its
// token-count histograms, with max_model_len as `max`.
std::vector<double> one_two_five_buckets(int64_t max);

// The prefix of every exposed name for `--metrics-prefix NAME`: NAME and a colon ("vllm" gives
// "vllm:"), or nothing for an empty NAME. Throws paceline::Error for a NAME that is not a
// Prometheus name ([a-zA-Z_][a-zA-Z0-9_]*).
std::string metrics_prefix_for(const std::string& name);

class MetricsRegistry {
 public:
  // Each call with the same name and labels returns the same series. A name registered as one
  // type cannot be reused as another (paceline::Error). Names follow Prometheus' conventions, so
  // that `promtool check metrics` passes: snake_case, a counter's ends in `_total` and no other
  // type's does, nothing ends in a histogram's `_bucket`, `_sum` or `_count`; label names are
  // Prometheus names, and `le` is the histograms' own (paceline::Error otherwise).
  Counter& counter(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help,
                       const std::vector<double>& bounds, const MetricLabels& labels = {});
  // Labels every series carries when rendered (vLLM's `model_name`); a series' own label of the
  // same name wins. Label names are checked as above.
  void set_constant_labels(MetricLabels labels);
  // The prefix render_prometheus() gives every name; "paceline:" unless set.
  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }
  // Prometheus text exposition format 0.0.4; every name gets `prefix` (e.g. "paceline:").
  std::string render_prometheus(const std::string& prefix) const;
  std::string render_prometheus() const { return render_prometheus(prefix_); }

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::map<MetricLabels, std::unique_ptr<Counter>> counters;
    std::map<MetricLabels, std::unique_ptr<Gauge>> gauges;
    std::map<MetricLabels, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, const std::string& help, Type type);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
  MetricLabels constant_labels_;
  std::string prefix_ = "paceline:";
};

}  // namespace paceline
