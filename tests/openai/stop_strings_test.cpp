// Stop strings end the output wherever the token boundaries fall, and are not returned.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/stop_strings.h"

namespace paceline {
namespace {

// Streams `pieces` through a matcher and returns what a client would receive.
std::string stream(std::vector<std::string> stops, const std::vector<std::string>& pieces,
                   bool* stopped = nullptr) {
  StopStringMatcher matcher(std::move(stops));
  std::string out;
  for (const auto& piece : pieces) {
    StopStringMatcher::Result r = matcher.push(piece);
    out += r.emit;
    if (r.stopped) break;
  }
  if (!matcher.stopped()) out += matcher.flush();
  if (stopped) *stopped = matcher.stopped();
  return out;
}

TEST(StopStrings, MatchAcrossTokenBoundaries) {
  StopStringMatcher matcher({"bc"});
  StopStringMatcher::Result first = matcher.push("ab");
  EXPECT_EQ(first.emit, "a");  // "b" could start "bc": held back
  EXPECT_FALSE(first.stopped);
  StopStringMatcher::Result second = matcher.push("c");
  EXPECT_EQ(second.emit, "");
  EXPECT_TRUE(second.stopped);
  EXPECT_EQ(matcher.matched(), "bc");
}

TEST(StopStrings, TextBeforeTheStopIsEmittedAndTheRestDropped) {
  bool stopped = false;
  EXPECT_EQ(stream({"STOP"}, {"hello S", "TO", "P and more"}, &stopped), "hello ");
  EXPECT_TRUE(stopped);
}

TEST(StopStrings, AHeldBackPrefixThatDoesNotMatchIsReleased) {
  StopStringMatcher matcher({"bc"});
  EXPECT_EQ(matcher.push("ab").emit, "a");
  EXPECT_EQ(matcher.push("d").emit, "bd");
}

TEST(StopStrings, HoldsBackOnlyTheLongestPossibleStart) {
  StopStringMatcher matcher({"xyz", "yq"});
  EXPECT_EQ(matcher.push("axy").emit, "a");  // "xy" may start "xyz"
  EXPECT_EQ(matcher.push("a").emit, "xya");
}

TEST(StopStrings, FlushReturnsTheHeldTailAtTheEnd) {
  StopStringMatcher matcher({"end"});
  EXPECT_EQ(matcher.push("the en").emit, "the ");
  EXPECT_EQ(matcher.flush(), "en");
  EXPECT_FALSE(matcher.stopped());
}

TEST(StopStrings, EarliestMatchWins) {
  EXPECT_EQ(stream({"cd", "b"}, {"abcd"}), "a");
  EXPECT_EQ(stream({"bcd", "c"}, {"ab", "cd"}), "a");  // "bcd" starts before "c"
}

TEST(StopStrings, StopAtTheVeryStartGivesNothing) {
  bool stopped = false;
  EXPECT_EQ(stream({"<"}, {"<x"}, &stopped), "");
  EXPECT_TRUE(stopped);
}

TEST(StopStrings, AfterStoppingNothingMoreIsEmitted) {
  StopStringMatcher matcher({"x"});
  EXPECT_TRUE(matcher.push("axb").stopped);
  StopStringMatcher::Result later = matcher.push("more");
  EXPECT_TRUE(later.stopped);
  EXPECT_EQ(later.emit, "");
  EXPECT_EQ(matcher.flush(), "");
}

TEST(StopStrings, NoStopsPassTextThrough) {
  StopStringMatcher matcher({"", ""});
  EXPECT_EQ(matcher.push("abc").emit, "abc");
  EXPECT_EQ(matcher.flush(), "");
}

TEST(StopStrings, OneByteAtATimeEqualsWholeText) {
  std::string text = "The answer is 42.\nObservation: done";
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(stream({"Observation:", "\n\n"}, bytes), "The answer is 42.\n");
  EXPECT_EQ(stream({"Observation:", "\n\n"}, {text}), "The answer is 42.\n");
}

TEST(StopStrings, MultiByteStopsAreHeldAtCharacterBoundaries) {
  StopStringMatcher matcher({"\xE4\xBD\xA0\xE5\xA5\xBD"});  // 你好
  EXPECT_EQ(matcher.push("a\xE4\xBD\xA0").emit, "a");
  EXPECT_TRUE(matcher.push("\xE5\xA5\xBD").stopped);
}

}  // namespace
}  // namespace paceline
