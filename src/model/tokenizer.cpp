#include "model/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "model/byte_level.h"
#include "model/tokenizer_json.h"
#include "model/tokenizer_normalize.h"
#include "model/utf8.h"

namespace paceline {
namespace {

constexpr size_t kCacheWords = 1 << 16;

}  // namespace

Tokenizer Tokenizer::from_file(const std::string& tokenizer_json_path) {
  std::filesystem::path path(tokenizer_json_path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) path /= "tokenizer.json";
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("tokenizer: cannot read {}", path.string());
  std::ostringstream text;
  text << file.rdbuf();
  return from_json(text.str(), path.string());
}

Tokenizer Tokenizer::from_json(const std::string& json_text, const std::string& where) {
  return Tokenizer(tokenizer_spec_from_json(json_text, where), where);
}

Tokenizer::Tokenizer(TokenizerSpec spec, std::string where)
    : where_(std::move(where)),
      nfc_(spec.nfc),
      ignore_merges_(spec.ignore_merges),
      raw_added_(spec.added_tokens, /*normalized=*/false),
      normalized_added_(spec.added_tokens, /*normalized=*/true),
      cache_(std::make_unique<WordCache>(kCacheWords)) {
  for (const std::string& pattern : spec.split_patterns) splits_.emplace_back(pattern, where_);

  int32_t max_id = -1;
  for (const auto& [text, id] : spec.vocab) max_id = std::max(max_id, id);
  for (const AddedToken& token : spec.added_tokens) max_id = std::max(max_id, token.id);
  texts_.resize(static_cast<size_t>(max_id + 1));
  bytes_.resize(texts_.size());
  kinds_.assign(texts_.size(), Kind::kMissing);

  vocab_ids_.reserve(spec.vocab.size());
  for (auto& [text, id] : spec.vocab) {
    if (id < 0) fail("tokenizer {}: token '{}' has negative id {}", where_, text, id);
    // The ByteLevel decoder maps a token through the byte alphabet, or keeps it as is when some
    // character is outside it.
    std::optional<std::string> raw = byte_level_decode(text);
    bytes_[id] = raw ? *raw : text;
    if (raw && raw->size() == 1) bpe_.set_byte_id(static_cast<uint8_t>((*raw)[0]), id);
    if (raw && ignore_merges_) word_ids_.emplace(std::move(*raw), id);
    kinds_[id] = Kind::kVocab;
    vocab_ids_.emplace(text, id);
    texts_[id] = std::move(text);
  }
  for (const AddedToken& token : spec.added_tokens) {
    if (token.id < 0) fail("tokenizer {}: added token '{}' has negative id", where_, token.content);
    std::optional<std::string> raw = byte_level_decode(token.content);
    bytes_[token.id] = raw ? *raw : token.content;
    texts_[token.id] = token.content;
    kinds_[token.id] = token.special ? Kind::kSpecial : Kind::kAdded;
    added_ids_.emplace(token.content, token.id);
  }
  if (!spec.unk_token.empty()) {
    if (auto unk = token_to_id(spec.unk_token)) bpe_.set_unk_id(*unk);
  }

  std::string joined;
  for (const auto& [left, right] : spec.merges) {
    const auto l = vocab_ids_.find(left), r = vocab_ids_.find(right);
    joined.assign(left).append(right);
    const auto m = vocab_ids_.find(joined);
    if (l == vocab_ids_.end() || r == vocab_ids_.end() || m == vocab_ids_.end()) {
      fail("tokenizer {}: merge '{} {}' uses a token that is not in the vocabulary", where_, left,
           right);
    }
    bpe_.add_merge(l->second, r->second, m->second);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::string repaired;
  if (!utf8_is_valid(text)) {
    repaired = utf8_repair(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (raw_added_.empty()) {
    encode_text(text, parse_special, ids);
    return ids;
  }
  std::vector<TextPiece> pieces;
  raw_added_.split(text, parse_special, pieces);
  for (const TextPiece& piece : pieces) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
    } else {
      encode_text(piece.text, parse_special, ids);
    }
  }
  return ids;
}

void Tokenizer::encode_text(std::string_view text, bool parse_special,
                            std::vector<int32_t>& ids) const {
  std::string storage;
  if (nfc_) text = nfc_normalize(text, storage);
  if (normalized_added_.empty()) {
    encode_pretokens(text, 0, ids);
    return;
  }
  std::vector<TextPiece> pieces;
  normalized_added_.split(text, parse_special, pieces);
  for (const TextPiece& piece : pieces) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
    } else {
      encode_pretokens(piece.text, 0, ids);
    }
  }
}

void Tokenizer::encode_pretokens(std::string_view text, size_t stage,
                                 std::vector<int32_t>& ids) const {
  if (stage == splits_.size()) {
    encode_word(text, ids);
    return;
  }
  std::vector<std::string_view> pieces;
  pieces.reserve(text.size() / 4 + 1);
  splits_[stage].split(text, pieces);
  for (std::string_view piece : pieces) encode_pretokens(piece, stage + 1, ids);
}

void Tokenizer::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.size() == 1) {
    bpe_.merge_word(word, ids);
    return;
  }
  const bool cacheable = word.size() <= WordCache::kMaxWordBytes;
  if (cacheable && cache_->lookup(word, ids)) return;
  const size_t first = ids.size();
  if (ignore_merges_) {
    if (const auto it = word_ids_.find(word); it != word_ids_.end()) {
      ids.push_back(it->second);
    } else {
      bpe_.merge_word(word, ids);
    }
  } else {
    bpe_.merge_word(word, ids);
  }
  if (cacheable) cache_->store(word, ids.data() + first, ids.size() - first);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    check_id(id, "decode");
    if (skip_special_tokens && kinds_[id] == Kind::kSpecial) continue;
    bytes += bytes_[id];
  }
  return utf8_is_valid(bytes) ? bytes : utf8_repair(bytes);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const auto it = added_ids_.find(token); it != added_ids_.end()) return it->second;
  if (const auto it = vocab_ids_.find(token); it != vocab_ids_.end()) return it->second;
  return std::nullopt;
}

std::string Tokenizer::id_to_token(int32_t id) const {
  check_id(id, "id_to_token");
  return texts_[id];
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  check_id(id, "token_bytes");
  return bytes_[id];
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && kinds_[id] == Kind::kSpecial;
}

bool Tokenizer::is_added(int32_t id) const {
  return id >= 0 && id < vocab_size() &&
         (kinds_[id] == Kind::kSpecial || kinds_[id] == Kind::kAdded);
}

void Tokenizer::check_id(int32_t id, const char* what) const {
  if (id < 0 || id >= vocab_size()) {
    fail("tokenizer {}: {}: token id {} is out of range [0, {})", where_, what, id, vocab_size());
  }
  if (kinds_[id] == Kind::kMissing) {
    fail("tokenizer {}: {}: token id {} is not in the vocabulary", where_, what, id);
  }
}

}  // namespace paceline
