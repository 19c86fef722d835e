#pragma once
// A server's /metrics read as Prometheus text (../engine/prometheus_text.h): one series' value
// by name and some of its labels, whatever else it carries (every series has model_name).
#include <string>

#include "../engine/prometheus_text.h"
#include "server_process.h"

namespace paceline::testing {

// -1 when no series, or more than one, matches.
inline double metric_value(const std::string& text, const std::string& name,
                           const PromLabels& labels = {}, const std::string& prefix = "paceline:") {
  return parse_prometheus(text).value(prefix + name, labels).value_or(-1);
}

inline double scrape_metric(int port, const std::string& name, const PromLabels& labels = {}) {
  return metric_value(http(port, "GET", "/metrics").body, name, labels);
}

}  // namespace paceline::testing
