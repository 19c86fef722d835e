// libFuzzer target over the Qwen3 tokenizer (third_party/qwen3-tokenizer/tokenizer.json, or the
// file PACELINE_FUZZ_TOKENIZER names). The input is text to encode, and also read as a list of
// token ids to decode as a stream. Properties:
// - encode never throws, with or without special tokens, and gives ids inside the vocabulary;
// - decode(encode(text)) is the text with invalid UTF-8 repaired, whenever that text is already
//   NFC (the normalizer is the only other step that may change it);
// - the incremental decoder fed any ids one at a time, then flushed, gives exactly decode(ids),
//   with or without skipping special tokens, and every piece it emits is valid UTF-8.
// Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "fuzz/fuzz_check.h"
#include "model/tokenizer.h"
#include "model/tokenizer_normalize.h"
#include "model/tokenizer_stream.h"
#include "model/utf8.h"

namespace {

using namespace paceline;
using paceline::fuzz::require;

const Tokenizer* g_tokenizer = nullptr;

void check_encode(std::string_view text, bool parse_special) {
  std::vector<int32_t> ids = g_tokenizer->encode(text, parse_special);
  for (int32_t id : ids) require(id >= 0 && id < g_tokenizer->vocab_size(), "id out of range");
  std::string repaired = utf8_repair(text);
  std::string decoded = g_tokenizer->decode(ids);
  if (nfc_quick_check(repaired)) require(decoded == repaired, "decode(encode(text)) != text");
  require(utf8_is_valid(decoded), "decode gave invalid UTF-8");
}

// Ids from the input's bytes, 3 at a time, folded into the id space (most land in the vocabulary;
// the folding keeps the added and special tokens at the top within reach).
std::vector<int32_t> ids_from_bytes(std::string_view bytes) {
  std::vector<int32_t> ids;
  const auto vocab = static_cast<uint32_t>(g_tokenizer->vocab_size());
  for (size_t i = 0; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) | static_cast<uint8_t>(bytes[i + 1]) << 8 |
                 static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 2])) << 16;
    auto id = static_cast<int32_t>(v % vocab);
    try {
      g_tokenizer->token_bytes(id);  // skips the holes an id space may have
      ids.push_back(id);
    } catch (const Error&) {
    }
  }
  return ids;
}

void check_stream(const std::vector<int32_t>& ids, bool skip_special) {
  IncrementalDecoder decoder(*g_tokenizer, skip_special);
  std::string streamed;
  for (int32_t id : ids) {
    std::string piece = decoder.push(id);
    require(utf8_is_valid(piece), "a streamed piece is invalid UTF-8");
    streamed += piece;
  }
  streamed += decoder.flush();
  require(streamed == g_tokenizer->decode(ids, skip_special), "stream != decode(ids)");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* path = std::getenv("PACELINE_FUZZ_TOKENIZER");
  g_tokenizer = new Tokenizer(
      Tokenizer::from_file(path ? path : "third_party/qwen3-tokenizer/tokenizer.json"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_encode(text, true);
  check_encode(text, false);
  std::vector<int32_t> ids = ids_from_bytes(text);
  check_stream(ids, false);
  check_stream(ids, true);
  check_stream(g_tokenizer->encode(text), false);
  return 0;
}
