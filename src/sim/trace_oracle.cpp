#include "sim/trace_oracle.h"

#include <algorithm>

#include "kv/prefix_cache.h"

namespace paceline::sim {

namespace {

uint64_t combine_key(uint64_t h, uint64_t v) {  // splitmix64 of v, folded into h
  v += 0x9e3779b97f4a7c15ULL;
  v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
  v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
  return (h * 0x100000001b3ULL) ^ (v ^ (v >> 31));
}

}  // namespace

TraceNextUseOracle::TraceNextUseOracle(int64_t block_size, bench::TokenPromptConfig prompt)
    : block_size_(block_size), prompt_(prompt) {}

uint64_t TraceNextUseOracle::request_key(const bench::RequestSpec& spec) {
  uint64_t h = std::hash<std::string>{}(spec.session);
  for (int64_t v : {int64_t{spec.lane}, int64_t{spec.play}, int64_t{spec.stream},
                    int64_t{spec.turn}}) {
    h = combine_key(h, static_cast<uint64_t>(v));
  }
  return h;
}

void TraceNextUseOracle::announce(const bench::RequestSpec& spec, int64_t at_ns) {
  const uint64_t key = request_key(spec);
  auto [it, fresh] = requests_.try_emplace(key);
  Announced& a = it->second;
  if (!fresh) {
    set_time(key, a, at_ns);
    return;
  }
  a.at_ns = at_ns;
  if (spec.isl > 1) {
    const std::vector<int32_t> tokens = bench::synthesize_prompt_tokens(spec, prompt_);
    // Only the blocks a prefix hit can cover (never the one holding the last token).
    extend_block_hashes(a.hashes, tokens, block_size_, (spec.isl - 1) / block_size_);
  }
  for (uint64_t h : a.hashes) uses_[h].push_back({at_ns, key});
  notify(a.hashes);
}

void TraceNextUseOracle::set_time(uint64_t key, Announced& a, int64_t at_ns) {
  if (a.at_ns == at_ns) return;
  a.at_ns = at_ns;
  for (uint64_t h : a.hashes) {
    for (Use& u : uses_[h]) {
      if (u.request == key) u.at_ns = at_ns;
    }
  }
  notify(a.hashes);
}

void TraceNextUseOracle::withdraw(const bench::RequestSpec& spec) {
  const uint64_t key = request_key(spec);
  auto it = requests_.find(key);
  if (it == requests_.end()) return;
  const std::vector<uint64_t> hashes = std::move(it->second.hashes);
  requests_.erase(it);
  for (uint64_t h : hashes) {
    auto u = uses_.find(h);
    if (u == uses_.end()) continue;
    std::erase_if(u->second, [&](const Use& x) { return x.request == key; });
    if (u->second.empty()) uses_.erase(u);
  }
  notify(hashes);
}

int64_t TraceNextUseOracle::next_use_ns(uint64_t hash) const {
  auto it = uses_.find(hash);
  if (it == uses_.end()) return kNever;
  int64_t t = kNever;
  for (const Use& u : it->second) t = std::min(t, u.at_ns);
  return t;
}

void TraceNextUseOracle::set_listener(std::function<void(uint64_t hash)> on_change) {
  on_change_ = std::move(on_change);
}

void TraceNextUseOracle::notify(const std::vector<uint64_t>& hashes) const {
  if (!on_change_) return;
  for (uint64_t h : hashes) on_change_(h);
}

}  // namespace paceline::sim
