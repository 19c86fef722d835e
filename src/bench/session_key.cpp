#include "bench/session_key.h"

namespace paceline::bench {

std::string session_key(const RequestSpec& spec) {
  if (spec.session.empty()) return "";
  std::string key = spec.session;
  // The marker is "[rid:<hex>]\n\n" (marker.h): the hex digits name the play.
  const size_t start = spec.marker.find("[rid:");
  const size_t end = spec.marker.find(']');
  if (start != std::string::npos && end != std::string::npos && end > start + 5) {
    key += "-" + spec.marker.substr(start + 5, end - start - 5);
  }
  // It travels as a header value: a trace's id with spaces or control bytes must not break the
  // request (or split it in two).
  for (char& c : key) {
    if (c < 0x21 || c > 0x7e) c = '_';
  }
  return key;
}

}  // namespace paceline::bench
