#pragma once
// Several simulated replicas behind one routing rule, on one virtual clock: what a load balancer
// in front of N `paceline serve` processes does, as a VirtualTransport the replayer drives like a
// single server. Each replica is a whole engine (its own scheduler, KV cache and prefix cache), so
// a session's prefix is hit only when its turns meet on the replica that holds its KV.
//
// The rules, and what each stands for in front of real replicas (docs/replicas.md):
//   session      the replica is a hash of the request's session key (bench/session_key.h), as
//                nginx's `hash $http_x_session_id consistent` is: sticky, blind to load. Requests
//                with no session go round robin.
//   round-robin  each request to the next replica, as nginx's default upstream.
//   least-loaded the replica with the fewest requests in flight (lowest index on a tie), as
//                nginx's `least_conn`.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bench/virtual_driver.h"

namespace paceline::sim {

class SimTransport;

enum class RouterKind { kSession, kRoundRobin, kLeastLoaded };

std::optional<RouterKind> router_kind_from_name(std::string_view name);
const char* router_kind_name(RouterKind kind);

// The replica a session key goes to among n (FNV-1a of the key, mod n): fixed for the run and
// the same in every run.
int session_replica(std::string_view key, int n);

class ReplicaRouter final : public bench::VirtualTransport {
 public:
  // The replicas must outlive the router and share the clock the driver moves.
  ReplicaRouter(std::vector<SimTransport*> replicas, RouterKind kind);

  // Told to every replica: which one a request will go to is not known before it is sent, and a
  // replica without an oracle ignores it (the oracle needs --replicas 1).
  void announce(const bench::RequestSpec& spec, int64_t at_ns) override;
  void send(const bench::RequestSpec& spec, bench::StreamCallbacks callbacks) override;
  void cancel(uint64_t request_id) override;
  std::optional<int64_t> next_event_ns() const override;
  // Replicas with events due are advanced earliest first (lowest index on a tie), again until
  // none is due, so callbacks across replicas come in time order and a send made by a callback
  // is served in the same pass.
  void advance_to(int64_t now_ns) override;

  // Requests sent to each replica so far.
  const std::vector<int64_t>& routed() const { return routed_; }

 private:
  int pick(const bench::RequestSpec& spec);

  std::vector<SimTransport*> replicas_;
  RouterKind kind_;
  int next_ = 0;  // round robin's next replica
  std::vector<int64_t> routed_;
  std::unordered_map<uint64_t, int> replica_of_;  // request id -> replica, for cancel
};

}  // namespace paceline::sim
