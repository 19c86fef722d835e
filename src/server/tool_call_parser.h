#pragma once
// Qwen3 (Hermes-style) tool calls: the model writes
//   <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
// blocks into its text. These parsers turn them into OpenAI tool calls and leave the rest as
// content. A block whose body is not a JSON object with a string "name" (and, if present, an
// object or string "arguments") stays in the content verbatim, tags included; so does a block
// still open when the output ends. Whitespace-only text right before or after a valid block is
// dropped (the model's separators). Streaming and whole-text parsing give the same calls and
// the same content, concatenated.
//
// Streaming emits each call whole, once its block closes: a single delta with index, id, type,
// name and the complete arguments string. OpenAI clients accumulate both forms alike; sending the
// arguments in one piece costs a little latency and never splits invalid JSON.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paceline {

struct ToolCall {
  size_t index = 0;  // position among the response's calls
  std::string id;    // "call_" + 24 hex digits
  std::string name;
  std::string arguments;  // JSON text of the arguments object ("{}" when absent)
};

// "call_" + 24 lower-case hex digits, a pure function of (seed, index).
std::string tool_call_id(uint64_t seed, size_t index);

struct ToolCallParse {
  std::string content;  // the text outside valid blocks
  std::vector<ToolCall> calls;
};

// Whole-text parse (non-streaming). Ids come from tool_call_id(id_seed, index).
ToolCallParse parse_tool_calls(std::string_view text, uint64_t id_seed);

class ToolCallStreamParser {
 public:
  explicit ToolCallStreamParser(uint64_t id_seed);

  struct Delta {
    std::string content;          // content to send now (may be empty)
    std::vector<ToolCall> calls;  // calls whose block closed in this push
  };

  Delta push(std::string_view text);
  // End of output: whatever is held back (a partial tag, an unclosed block) becomes content.
  Delta flush();

  size_t num_calls() const { return num_calls_; }

 private:
  enum class State { kText, kInBlock };
  // Consumes as much of buffer_ as is decided, appending to `out`.
  void drain(Delta& out, bool final);
  void emit_content(Delta& out, std::string_view text);

  uint64_t id_seed_;
  size_t num_calls_ = 0;
  State state_ = State::kText;
  std::string buffer_;        // undecided text (a partial tag, or a block's body so far)
  std::string held_space_;    // whitespace that a following block would drop
  bool after_block_ = false;  // the last thing decided was a valid block
  size_t scanned_ = 0;        // bytes of an open block's body searched for the close tag
};

}  // namespace paceline
