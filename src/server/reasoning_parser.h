#pragma once
// Splits Qwen3's thinking from its answer: "<think>\n...\n</think>\n\n answer" becomes
// reasoning_content "..." and content "answer". Newlines the template puts around the parts
// (after <think>, before and after </think>) are dropped, as the Qwen3 template strips them when
// it renders a reasoning_content back into a prompt.
#include <optional>
#include <string>
#include <string_view>

namespace paceline {

enum class ReasoningMode {
  kOff,           // no reasoning parsing: everything is content (enable_thinking false)
  kTagged,        // the output opens its own block: "<think>...</think>answer" (Qwen3)
  kStartsInside,  // the prompt opened the block: "...</think>answer" (Qwen3 thinking-2507)
};

// kOff when enable_thinking is false (the template then pre-fills an empty, closed think block);
// kStartsInside when the rendered prompt ends inside an open block ("<think>" then only
// whitespace); else kTagged.
ReasoningMode reasoning_mode_for(std::optional<bool> enable_thinking,
                                 std::string_view rendered_prompt);

struct ReasoningSplit {
  std::optional<std::string> reasoning;  // unset when the output had no think part
  std::string content;
};

// Whole-text split (non-streaming). Same result as streaming, except that in kTagged an output
// that does not start with <think> but contains </think> is split at </think> (the whole text is
// known; a stream had sent that prefix as content already).
ReasoningSplit split_reasoning(std::string_view text, ReasoningMode mode);

class ReasoningStreamParser {
 public:
  explicit ReasoningStreamParser(ReasoningMode mode);

  struct Delta {
    std::string reasoning;
    std::string content;
  };

  Delta push(std::string_view text);
  Delta flush();  // end of output: sends whatever was held back

  // True once any reasoning text was produced or a think block was seen.
  bool saw_reasoning() const { return saw_reasoning_; }

 private:
  enum class State { kStart, kReasoning, kContentStart, kContent };
  void drain(Delta& out, bool final);

  ReasoningMode mode_;
  State state_;
  bool trim_reasoning_start_ = false;  // newlines right after <think> are still to be dropped
  std::string buffer_;  // held back: a partial tag, or newlines that a tag would drop
  bool saw_reasoning_ = false;
};

}  // namespace paceline
