#pragma once
// Reads a Hugging Face tokenizer.json into plain structs, checking that it describes the design
// paceline implements: byte-level BPE (GPT-2, Llama-3, Qwen2/3) with an optional NFC normalizer
// and Split regex pre-tokenizers. Anything else is refused with a message naming the field.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/tokenizer_added.h"

namespace paceline {

struct TokenizerSpec {
  bool nfc = false;                         // normalizer NFC (alone or in a Sequence)
  std::vector<std::string> split_patterns;  // Split regexes (Oniguruma dialect), applied in order
  std::vector<std::pair<std::string, int32_t>> vocab;       // byte-level token text -> id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedToken> added_tokens;
  bool ignore_merges = false;  // a word that is itself in the vocabulary skips merging
  std::string unk_token;       // empty when none
};

// Parses tokenizer.json text; `where` (the file) is named in every error. Throws paceline::Error.
TokenizerSpec tokenizer_spec_from_json(const std::string& json_text, const std::string& where);

}  // namespace paceline
