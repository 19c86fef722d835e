#include "model/bpe.h"

#include <climits>
#include <queue>

namespace paceline {
namespace {

constexpr size_t kShortWord = 48;  // bytes; beyond this the heap merge wins

struct Symbol {
  int32_t id;
  int32_t rank;    // rank of the merge with the next symbol, INT_MAX when none
  int32_t merged;  // id that merge produces
};

}  // namespace

void BpeMerger::add_merge(int32_t left, int32_t right, int32_t merged) {
  merges_.insert(left, right, {next_rank_++, merged});
}

void BpeMerger::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() <= kShortWord) {
    merge_short(word, out);
  } else {
    merge_long(word, out);
  }
}

void BpeMerger::merge_short(std::string_view word, std::vector<int32_t>& out) const {
  Symbol symbols[kShortWord];
  size_t n = 0;
  for (char c : word) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id >= 0 || unk_id_ >= 0) symbols[n++] = {id >= 0 ? id : unk_id_, INT_MAX, -1};
  }
  auto link = [&](size_t i) {
    const BpeMerge* m = i + 1 < n ? merges_.find(symbols[i].id, symbols[i + 1].id) : nullptr;
    symbols[i].rank = m ? m->rank : INT_MAX;
    symbols[i].merged = m ? m->merged : -1;
  };
  for (size_t i = 0; i + 1 < n; ++i) link(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (symbols[i].rank < symbols[best].rank) best = i;
    }
    if (symbols[best].rank == INT_MAX) break;
    symbols[best].id = symbols[best].merged;
    for (size_t i = best + 1; i + 1 < n; ++i) symbols[i] = symbols[i + 1];
    --n;
    link(best);
    if (best > 0) link(best - 1);
  }
  for (size_t i = 0; i < n; ++i) out.push_back(symbols[i].id);
}

void BpeMerger::merge_long(std::string_view word, std::vector<int32_t>& out) const {
  struct Node {
    int32_t id;
    int32_t prev, next;  // -1 at the ends
  };
  struct Candidate {
    int32_t rank;
    int32_t left;  // node index of the pair's left symbol
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::vector<Node> nodes;
  nodes.reserve(word.size());
  for (char c : word) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id < 0 && unk_id_ < 0) continue;
    const auto index = static_cast<int32_t>(nodes.size());
    nodes.push_back({id >= 0 ? id : unk_id_, index - 1, -1});
    if (index > 0) nodes[index - 1].next = index;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto offer = [&](int32_t left) {
    if (left < 0 || nodes[left].next < 0) return;
    if (const BpeMerge* m = merges_.find(nodes[left].id, nodes[nodes[left].next].id)) {
      heap.push({m->rank, left});
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(nodes.size()); ++i) offer(i);
  while (!heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    Node& left = nodes[top.left];
    if (left.id < 0 || left.next < 0) continue;  // merged away since it was offered
    const BpeMerge* m = merges_.find(left.id, nodes[left.next].id);
    if (m == nullptr || m->rank != top.rank) continue;  // the pair changed since
    Node& right = nodes[left.next];
    left.id = m->merged;
    left.next = right.next;
    if (right.next >= 0) nodes[right.next].prev = top.left;
    right.id = -1;
    offer(left.prev);
    offer(top.left);
  }
  for (int32_t i = nodes.empty() ? -1 : 0; i >= 0; i = nodes[i].next) out.push_back(nodes[i].id);
}

}  // namespace paceline
