#pragma once
// Several simulated replicas behind one routing rule, on one virtual clock: what a load balancer
// in front of N `paceline serve` processes does, as a VirtualTransport the replayer drives like a
// single server. Each replica is a whole engine (its own scheduler, KV cache and prefix cache), so
// a session's prefix is hit only when its turns meet on the replica that holds its KV.
//
// The rules, and what each stands for in front of real replicas (docs/replicas.md):
//   session      the replica that nginx's `hash $http_x_session_id consistent` picks for the
//                request's session key (bench/session_key.h): a ketama ring over the replicas'
//                server names (consistent_hash_ring.h), so that the simulator puts each session
//                where a real nginx would, the ring's imbalance included. Sticky and blind to
//                load; requests with no session go round robin, as nginx sends an empty key.
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
#include "sim/consistent_hash_ring.h"

namespace paceline::sim {

class SimTransport;

enum class RouterKind { kSession, kRoundRobin, kLeastLoaded };

std::optional<RouterKind> router_kind_from_name(std::string_view name);
const char* router_kind_name(RouterKind kind);

class ReplicaRouter final : public bench::VirtualTransport {
 public:
  // The replicas must outlive the router and share the clock the driver moves. `servers`: the
  // replicas' names in nginx's upstream, which place them on the session rule's ring; empty:
  // those of scripts/serve_replicas on its default port (127.0.0.1:8001, ...).
  ReplicaRouter(std::vector<SimTransport*> replicas, RouterKind kind,
                std::vector<std::string> servers = {});

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
  std::optional<ConsistentHashRing> ring_;  // the session rule's
  int next_ = 0;  // round robin's next replica
  std::vector<int64_t> routed_;
  std::unordered_map<uint64_t, int> replica_of_;  // request id -> replica, for cancel
};

}  // namespace paceline::sim
