#pragma once
// Byte-level BPE merging: a word's bytes start as single-byte tokens, and the adjacent pair with
// the lowest merge rank is joined until no adjacent pair has a merge. Ties go to the leftmost
// pair, as in Hugging Face tokenizers.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/bpe_pair_map.h"

namespace paceline {

class BpeMerger {
 public:
  BpeMerger() { byte_ids_.fill(-1); }

  // The token of the single byte `byte`. A byte without one becomes the unknown token, or is
  // dropped when there is none (Hugging Face BPE without unk_token does the same).
  void set_byte_id(uint8_t byte, int32_t id) { byte_ids_[byte] = id; }
  void set_unk_id(int32_t id) { unk_id_ = id; }

  // Adds the next merge in rank order; a pair listed twice keeps its later rank.
  void add_merge(int32_t left, int32_t right, int32_t merged);
  size_t num_merges() const { return merges_.size(); }

  // Appends the ids of `word` (raw bytes) to `out`.
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  // Rescans all pairs each step: quadratic, and fastest for the short words of real text.
  void merge_short(std::string_view word, std::vector<int32_t>& out) const;
  // A heap of candidate pairs over a linked list: O(n log n) for long words.
  void merge_long(std::string_view word, std::vector<int32_t>& out) const;

  std::array<int32_t, 256> byte_ids_;
  int32_t unk_id_ = -1;
  BpePairMap merges_;
  int32_t next_rank_ = 0;
};

}  // namespace paceline
