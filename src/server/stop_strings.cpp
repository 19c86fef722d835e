#include "server/stop_strings.h"

#include <algorithm>
#include <utility>

namespace paceline {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
  for (auto& stop : stops) {
    if (stop.empty()) continue;
    max_stop_length_ = std::max(max_stop_length_, stop.size());
    stops_.push_back(std::move(stop));
  }
}

StopStringMatcher::Result StopStringMatcher::push(std::string_view text) {
  if (stopped_) return {"", true};
  if (stops_.empty()) return {std::string(text), false};
  pending_ += text;
  // The earliest match wins; at one position the longest (both emit the same text).
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const auto& stop : stops_) {
    size_t pos = pending_.find(stop);
    if (pos == std::string::npos) continue;
    if (pos < best || (pos == best && stop.size() > best_stop->size())) {
      best = pos;
      best_stop = &stop;
    }
  }
  if (best_stop != nullptr) {
    stopped_ = true;
    matched_ = *best_stop;
    Result result{pending_.substr(0, best), true};
    pending_.clear();
    return result;
  }
  size_t keep = partial_suffix_length();
  Result result{pending_.substr(0, pending_.size() - keep), false};
  pending_.erase(0, pending_.size() - keep);
  return result;
}

std::string StopStringMatcher::flush() {
  if (stopped_) return "";
  return std::exchange(pending_, std::string());
}

size_t StopStringMatcher::partial_suffix_length() const {
  std::string_view pending = pending_;
  // A complete stop is not in pending_, so only proper prefixes can be suffixes of it.
  size_t longest = std::min(pending.size(), max_stop_length_ - 1);
  for (size_t length = longest; length > 0; --length) {
    std::string_view suffix = pending.substr(pending.size() - length);
    for (const auto& stop : stops_) {
      if (stop.size() > length && std::string_view(stop).starts_with(suffix)) return length;
    }
  }
  return 0;
}

}  // namespace paceline
