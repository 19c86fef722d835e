#pragma once
// The Hugging Face tokenizer.json byte-level BPE tokenizer, as Qwen2/Qwen3 and Llama-3 use it.
//
// encode: added tokens are cut out first and never split; the text between them is repaired to
// valid UTF-8 (U+FFFD per maximal invalid subpart), NFC-normalized, split by the pre-tokenizer
// regex, mapped to the byte-level alphabet and merged by BPE rank. decode: each id's bytes,
// concatenated, with invalid UTF-8 replaced as Rust's String::from_utf8_lossy does. The ids match
// Hugging Face tokenizers' encode(text, add_special_tokens=False) exactly.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/bpe.h"
#include "model/tokenizer_added.h"
#include "model/tokenizer_cache.h"
#include "model/tokenizer_regex.h"

namespace paceline {

struct TokenizerSpec;

class Tokenizer {
 public:
  // Loads a tokenizer.json file, or the tokenizer.json inside a folder. Throws paceline::Error
  // naming the file when it is missing, not JSON, or not a byte-level BPE tokenizer.
  static Tokenizer from_file(const std::string& tokenizer_json_path);
  // Builds from tokenizer.json text; `where` names its source in error messages.
  static Tokenizer from_json(const std::string& json_text, const std::string& where);

  // Token ids of `text` (any bytes: invalid UTF-8 is repaired first). No BOS is added. When
  // `parse_special` is false, special added tokens (<|im_start|>...) in the text are encoded as
  // plain text; non-special added tokens (<think>, <tool_call>) are still matched, as Hugging
  // Face tokenizers does with encode_special_tokens=True. Safe to call from many threads.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;

  // The text of `ids`; U+FFFD where the bytes are not valid UTF-8. Throws paceline::Error on an
  // id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // The id of a token written as in the vocabulary ("Ġworld", "<|im_end|>").
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary text of `id` ("Ġworld"); throws paceline::Error when out of range.
  std::string id_to_token(int32_t id) const;
  // The bytes `id` contributes to decoded text (possibly part of a UTF-8 character).
  std::string_view token_bytes(int32_t id) const;

  // Size of the id space: one past the largest id, added tokens included.
  int64_t vocab_size() const { return static_cast<int64_t>(kinds_.size()); }
  bool is_special(int32_t id) const;
  bool is_added(int32_t id) const;

  const std::string& source() const { return where_; }

 private:
  enum class Kind : uint8_t { kMissing, kVocab, kAdded, kSpecial };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  Tokenizer(TokenizerSpec spec, std::string where);
  // Normalizes, splits and merges text that holds no raw-matched added token.
  void encode_text(std::string_view text, bool parse_special, std::vector<int32_t>& ids) const;
  void encode_pretokens(std::string_view text, size_t stage, std::vector<int32_t>& ids) const;
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;
  void check_id(int32_t id, const char* what) const;

  std::string where_;
  bool nfc_ = false;
  bool ignore_merges_ = false;
  AddedTokenMatcher raw_added_;         // added tokens matched on the text as given
  AddedTokenMatcher normalized_added_;  // added tokens matched after NFC
  std::vector<PretokenRegex> splits_;
  BpeMerger bpe_;
  StringMap vocab_ids_;             // vocabulary text -> id
  StringMap added_ids_;             // added token content -> id
  StringMap word_ids_;              // raw bytes -> id, for ignore_merges
  std::vector<std::string> texts_;  // id -> vocabulary text or added token content
  std::vector<std::string> bytes_;  // id -> bytes in decoded text
  std::vector<Kind> kinds_;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace paceline
