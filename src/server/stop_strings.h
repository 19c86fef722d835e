#pragma once
// Stop strings matched on the decoded text as it streams, across token boundaries. The matcher
// holds back only the longest tail that could still be the start of a stop string; everything
// before it is safe to send. On a match it returns the text before the stop string (which, as
// OpenAI does, is not returned) and reports stopped; later pushes return nothing.
#include <string>
#include <string_view>
#include <vector>

namespace paceline {

class StopStringMatcher {
 public:
  // Empty strings are ignored; with no stop strings every push returns its text unchanged.
  explicit StopStringMatcher(std::vector<std::string> stops);

  struct Result {
    std::string emit;      // text that can be sent now
    bool stopped = false;  // a stop string matched (now or before): the request should end
  };

  Result push(std::string_view text);
  // The held-back tail, at the end of the output (no stop matched): it is text, send it.
  std::string flush();

  bool stopped() const { return stopped_; }
  // The stop string that matched; empty before a match.
  const std::string& matched() const { return matched_; }

 private:
  // Length of the longest suffix of pending_ that is a proper prefix of some stop string.
  size_t partial_suffix_length() const;

  std::vector<std::string> stops_;
  size_t max_stop_length_ = 0;
  std::string pending_;  // held-back text, shorter than the longest stop string
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace paceline
