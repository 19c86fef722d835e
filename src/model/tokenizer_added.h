#pragma once
// Added tokens (tokenizer.json "added_tokens"): whole strings such as "<|im_start|>" or "<think>"
// that are cut out of the text before anything else and never split. Matching is leftmost-longest
// over all added tokens, as Hugging Face tokenizers does with its Aho-Corasick automaton.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paceline {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;      // control tokens: skipped by decode(skip_special_tokens)
  bool normalized = false;   // matched after NFC instead of on the raw text
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool single_word = false;  // matched only when no letter or digit touches it
};

// A stretch of text: an added token (id >= 0) or plain text to tokenize (id == -1).
struct TextPiece {
  std::string_view text;
  int32_t id = -1;
};

class AddedTokenMatcher {
 public:
  // Matches the tokens whose `normalized` flag equals `normalized` (one matcher per pass).
  AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool normalized);

  bool empty() const { return tokens_.empty(); }

  // Appends to `out` the pieces of `text`: plain stretches and added tokens. When
  // `parse_special` is false, special tokens are left in the text as plain characters.
  void split(std::string_view text, bool parse_special, std::vector<TextPiece>& out) const;

 private:
  // Length of the longest token matching at text[pos], and its index; {0, -1} when none.
  std::pair<size_t, int> longest_at(std::string_view text, size_t pos) const;

  std::vector<AddedToken> tokens_;
  std::array<std::vector<int>, 256> by_first_byte_;  // token indexes, longest first
};

}  // namespace paceline
