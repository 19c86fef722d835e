#include "bench/text_prompt.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "base/error.h"
#include "bench/rng.h"

namespace paceline::bench {

namespace {

// 128 common English words; with a leading space each is one token in the Qwen3 vocabulary.
constexpr std::array<std::string_view, 128> kWords = {
    "the",   "of",     "and",     "to",     "in",      "is",      "was",     "for",    "on",
    "that",  "with",   "as",      "by",     "at",      "from",    "his",     "her",    "it",
    "an",    "are",    "were",    "this",   "be",      "which",   "or",      "had",    "not",
    "but",   "have",   "they",    "one",    "their",   "all",     "been",    "has",    "more",
    "its",   "also",   "who",     "first",  "after",   "new",     "other",   "two",    "can",
    "time",  "when",   "into",    "than",   "some",    "only",    "over",    "most",   "may",
    "made",  "these",  "out",     "them",   "such",    "would",   "year",    "there",  "many",
    "used",  "so",     "could",   "about",  "between", "then",    "through", "where",  "while",
    "well",  "both",   "during",  "under",  "those",   "three",   "later",   "being",  "however",
    "world", "back",   "part",    "before", "because", "same",    "each",    "city",   "work",
    "still", "known",  "called",  "school", "life",    "against", "since",   "state",  "group",
    "own",   "long",   "found",   "until",  "what",    "area",    "high",    "number", "name",
    "day",   "people", "family",  "way",    "end",     "form",    "team",    "again",  "second",
    "any",   "early",  "another", "house",  "water",   "river",   "music",   "light",  "game",
    "story", "power",
};
static_assert(kWords.size() == 1 << 7, "seven bits pick a word");
static_assert(std::all_of(kWords.begin(), kWords.end(),
                          [](std::string_view w) { return !w.empty() && w.size() <= 7; }),
              "a word and its space fit in 8 bytes");

constexpr int kBitsPerWord = 7;  // log2 of the word count
constexpr int kWordsPerDraw = 64 / kBitsPerWord;

// Each word with its leading space, padded to 8 bytes so that a copy is one fixed-size move.
struct PaddedWord {
  std::array<char, 8> bytes{};
  size_t size = 0;
};

const std::array<PaddedWord, kWords.size()>& padded_words() {
  static const auto table = [] {
    std::array<PaddedWord, kWords.size()> t{};
    for (size_t i = 0; i < kWords.size(); ++i) {
      t[i].bytes[0] = ' ';
      std::copy(kWords[i].begin(), kWords[i].end(), t[i].bytes.begin() + 1);
      t[i].size = kWords[i].size() + 1;
    }
    return t;
  }();
  return table;
}

// `count` words drawn from `key`: one 64-bit draw gives nine words. Prompts of 100k tokens are
// built on the client's event loop, so this is a table lookup and one 8-byte copy per word.
void append_words(std::string& out, uint64_t key, int64_t count) {
  if (count <= 0) return;
  const auto& words = padded_words();
  size_t at = out.size();
  out.resize(at + static_cast<size_t>(count) * 8);
  char* p = out.data() + at;
  uint64_t bits = 0;
  for (int64_t j = 0; j < count; ++j) {
    if (j % kWordsPerDraw == 0) bits = mix_keys(key, static_cast<uint64_t>(j / kWordsPerDraw));
    const PaddedWord& w = words[bits & (kWords.size() - 1)];
    bits >>= kBitsPerWord;
    std::memcpy(p, w.bytes.data(), 8);
    p += w.size;
  }
  out.resize(static_cast<size_t>(p - out.data()));
}

}  // namespace

std::span<const std::string_view> filler_words() {
  return kWords;
}

bool marker_leads(const RequestSpec& spec) {
  return !spec.hash_ids.empty();
}

std::string synthesize_prompt_text(const RequestSpec& spec, const TextPromptConfig& config) {
  const bool lead = marker_leads(spec);
  std::string text = lead ? spec.marker : std::string();
  append_prompt_words(text, spec, config);
  if (!lead) text += spec.marker;
  return text;
}

void append_prompt_words(std::string& text, const RequestSpec& spec,
                         const TextPromptConfig& config) {
  if (spec.block_size <= 0) {
    fail("request {}: block size {} is not positive", spec.id, spec.block_size);
  }
  if (config.overhead_tokens < 0) fail("prompt overhead must be >= 0");
  const int64_t blocks = std::min<int64_t>(static_cast<int64_t>(spec.hash_ids.size()),
                                           (spec.isl + spec.block_size - 1) / spec.block_size);
  const int64_t in_blocks = std::min(spec.isl, blocks * spec.block_size);
  // The overhead comes off the private tail only; a prompt made of whole shared blocks keeps them.
  const int64_t tail = std::max<int64_t>(0, spec.isl - in_blocks - config.overhead_tokens);

  text.reserve(text.size() + static_cast<size_t>(in_blocks + tail) * 8);
  const uint64_t scope_key =
      mix_keys(mix_keys(config.seed, 0x7e47ULL), hash_string(spec.hash_scope));
  for (int64_t i = 0; i < blocks; ++i) {
    int64_t words = std::min(spec.block_size, in_blocks - i * spec.block_size);
    append_words(text, mix_keys(scope_key, static_cast<uint64_t>(spec.hash_ids[i])), words);
  }
  // The tail is the request's own: key it by the play (marker) and where the request sits in it.
  uint64_t tail_key = mix_keys(mix_keys(scope_key, hash_string(spec.marker)), 0x7a11ULL);
  tail_key = mix_keys(mix_keys(tail_key, static_cast<uint64_t>(spec.stream)),
                      static_cast<uint64_t>(static_cast<int64_t>(spec.turn)));
  append_words(text, tail_key, tail);
}

}  // namespace paceline::bench
