#include "sched/cudagraph_sizes.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

#include "base/error.h"
#include "base/text.h"

namespace paceline {

namespace {

// One size inside `element` (for the error message); digits only, 1..kMaxCudagraphCaptureSize.
int32_t parse_size(std::string_view text, std::string_view element) {
  text = trim(text);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool digits_only = !text.empty() && std::isdigit(static_cast<unsigned char>(text[0]));
  if (!digits_only || ec != std::errc() || end != text.data() + text.size()) {
    fail("--cudagraph-capture-sizes: '{}' is not a size or a range a-b", element);
  }
  if (value < 1 || value > kMaxCudagraphCaptureSize) {
    fail("--cudagraph-capture-sizes: '{}': sizes must be between 1 and {}", element,
         kMaxCudagraphCaptureSize);
  }
  return static_cast<int32_t>(value);
}

}  // namespace

std::vector<int32_t> parse_cudagraph_capture_sizes(std::string_view spec) {
  if (trim(spec).empty()) fail("--cudagraph-capture-sizes: the list is empty");
  const std::string_view whole = spec;
  std::vector<int32_t> sizes;
  for (int index = 1;; ++index) {
    const size_t comma = spec.find(',');
    const std::string_view element = trim(spec.substr(0, comma));
    if (element.empty()) {
      fail("--cudagraph-capture-sizes: element {} of '{}' is empty", index, whole);
    }
    const size_t dash = element.find('-');
    if (dash == std::string_view::npos) {
      sizes.push_back(parse_size(element, element));
    } else {
      const int32_t lo = parse_size(element.substr(0, dash), element);
      const int32_t hi = parse_size(element.substr(dash + 1), element);
      if (lo > hi) fail("--cudagraph-capture-sizes: range '{}' runs backwards", element);
      for (int32_t s = lo; s <= hi; ++s) sizes.push_back(s);
    }
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<int32_t> default_cudagraph_capture_sizes(int32_t max_num_seqs) {
  if (max_num_seqs < 1) fail("--max-num-seqs must be >= 1, got {}", max_num_seqs);
  static constexpr int32_t kDefaults[] = {1, 2, 4, 8, 16, 32, 48, 64, 128, 256, 512};
  std::vector<int32_t> sizes;
  for (int32_t s : kDefaults) {
    if (s <= max_num_seqs) sizes.push_back(s);
  }
  return sizes;
}

int32_t padded_batch_size(const std::vector<int32_t>& sizes, int32_t batch) {
  if (batch < 1) return 0;
  const auto it = std::lower_bound(sizes.begin(), sizes.end(), batch);
  return it == sizes.end() ? 0 : *it;
}

}  // namespace paceline
