#pragma once
// The next-use oracle of `paceline sim --kv-policy oracle`: the replayer announces every turn it
// has planned (its send time once armed, "later" while it waits on a turn in flight), and the
// oracle turns each announced prompt into the chained block hashes the scheduler will look up,
// so the KV manager can evict the block needed furthest in the future (Belady's rule). A request
// keeps its announcement until it is answered, so the prefix of a request waiting in the queue
// counts as needed now. Blocks nobody announced are needed never.
//
// Its foresight is the replayer's: every turn whose predecessor has been sent, with the exact
// time once the predecessor is answered. In a closed loop nothing further ahead can be known
// without the server's own future, so this is the offline optimum for the run the server lives
// (docs/kv-tiers.md says what it reaches).
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "bench/token_prompt.h"
#include "bench/transport.h"
#include "kv/eviction_policy.h"

namespace paceline::sim {

class TraceNextUseOracle final : public NextUseOracle {
 public:
  TraceNextUseOracle(int64_t block_size, bench::TokenPromptConfig prompt);

  // The request `spec` names (lane, play, stream, turn) is next used at `at_ns`.
  void announce(const bench::RequestSpec& spec, int64_t at_ns);
  // The request was answered (or refused, or cancelled): its blocks lose that use.
  void withdraw(const bench::RequestSpec& spec);

  int64_t next_use_ns(uint64_t hash) const override;
  void set_listener(std::function<void(uint64_t hash)> on_change) override;

  int64_t num_announced() const { return static_cast<int64_t>(requests_.size()); }

 private:
  struct Use {
    int64_t at_ns;
    uint64_t request;
  };
  struct Announced {
    int64_t at_ns = 0;
    std::vector<uint64_t> hashes;
  };
  static uint64_t request_key(const bench::RequestSpec& spec);
  void set_time(uint64_t key, Announced& a, int64_t at_ns);
  void notify(const std::vector<uint64_t>& hashes) const;

  int64_t block_size_;
  bench::TokenPromptConfig prompt_;
  std::unordered_map<uint64_t, Announced> requests_;
  std::unordered_map<uint64_t, std::vector<Use>> uses_;  // by block hash
  std::function<void(uint64_t)> on_change_;
};

}  // namespace paceline::sim
