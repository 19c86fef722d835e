#include "model/tokenizer_stream.h"

#include "model/utf8.h"

namespace paceline {

std::string IncrementalDecoder::push(int32_t id) {
  const std::string_view bytes = tokenizer_->token_bytes(id);
  if (skip_special_tokens_ && tokenizer_->is_special(id)) return {};
  pending_.append(bytes);
  std::string text;
  const size_t consumed = utf8_append_lossy(pending_, /*final=*/false, text);
  pending_.erase(0, consumed);
  return text;
}

std::string IncrementalDecoder::flush() {
  std::string text;
  utf8_append_lossy(pending_, /*final=*/true, text);
  pending_.clear();
  return text;
}

}  // namespace paceline
