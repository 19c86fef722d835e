#pragma once
// The real Qwen3 tokenizer (third_party/qwen3-tokenizer, fetched by scripts/setup), loaded once
// per test binary, and small helpers that spell expected ids by their vocabulary text.
#include <string>
#include <vector>

#include "model/tokenizer.h"

namespace paceline::testing {

inline std::string qwen3_tokenizer_dir() {
  return std::string(PACELINE_SOURCE_DIR) + "/third_party/qwen3-tokenizer";
}

inline const Tokenizer& qwen3() {
  static const Tokenizer tokenizer = Tokenizer::from_file(qwen3_tokenizer_dir());
  return tokenizer;
}

// Ids of vocabulary entries given as text ("hello", "Ġworld"); -1 for an unknown entry, so that a
// typo shows up as a failed comparison rather than a crash.
inline std::vector<int32_t> ids_of(const std::vector<std::string>& tokens) {
  std::vector<int32_t> ids;
  for (const std::string& token : tokens) ids.push_back(qwen3().token_to_id(token).value_or(-1));
  return ids;
}

}  // namespace paceline::testing
