#pragma once
// Streaming detokenization: turns generated ids into text as they arrive, never emitting half a
// UTF-8 character. A character split across byte tokens (emoji, CJK) is held back until its last
// byte arrives; bytes that can no longer form a character come out as U+FFFD at once.
#include <cstdint>
#include <string>

#include "model/tokenizer.h"

namespace paceline {

class IncrementalDecoder {
 public:
  // `tokenizer` must outlive the decoder.
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false)
      : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

  // The complete text that `id` adds; empty while a character is unfinished. Throws
  // paceline::Error on an id outside the vocabulary.
  std::string push(int32_t id);
  // Whatever is still held back, an unfinished character as U+FFFD; the decoder is then empty.
  // All push() results followed by flush() equal tokenizer.decode(all ids).
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::string pending_;  // bytes of an unfinished character, at most 3
};

}  // namespace paceline
