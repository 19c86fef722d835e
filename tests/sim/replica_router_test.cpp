// Replicas behind a routing rule on one virtual clock: the session rule keeps an agent session's
// turns (and its subagents) on one replica, round robin spreads them, least-loaded picks the
// emptiest; callbacks across replicas come in time order.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>

#include "base/clock.h"
#include "bench/marker.h"
#include "bench/session_key.h"
#include "sim/consistent_hash_ring.h"
#include "bench/virtual_driver.h"
#include "sim/replica_router.h"
#include "sim/sim_executor.h"
#include "sim/sim_transport.h"
#include "sim/trace_oracle.h"
#include "linear_cost.h"

namespace paceline::sim {
namespace {

using test_util::kMs;
using test_util::LinearCost;

SchedulerConfig small() {
  SchedulerConfig c;
  c.max_model_len = 4096;
  c.block_size = 16;
  c.num_kv_blocks = 256;
  c.max_num_batched_tokens = 2048;
  return c;
}

struct Replica {
  explicit Replica(const VirtualClock& clock)
      : core(small(), std::make_unique<SimExecutor>(cost, caps()), clock), transport(core, clock) {}
  static ExecutorCapabilities caps() {
    ExecutorCapabilities x;
    x.kv = {256, 16};
    return x;
  }
  LinearCost cost;
  EngineCore core;
  SimTransport transport;
};

struct Cluster {
  Cluster(int n, RouterKind kind) {
    std::vector<SimTransport*> t;
    for (int i = 0; i < n; ++i) {
      replicas.push_back(std::make_unique<Replica>(clock));
      t.push_back(&replicas.back()->transport);
    }
    router = std::make_unique<ReplicaRouter>(t, kind);
  }

  bench::RequestSpec spec(uint64_t id, const std::string& session, uint64_t play) {
    bench::RequestSpec s;
    s.id = id;
    s.session = session;
    s.marker = bench::cache_bust_marker(play);
    s.isl = 64;
    s.osl = 2;
    s.block_size = 16;
    s.hash_scope = session;
    return s;
  }

  // Sends, and notes which replica got it (the one whose in_flight grew).
  int send(const bench::RequestSpec& s) {
    std::vector<int64_t> before;
    for (auto& r : replicas) before.push_back(r->transport.in_flight());
    bench::StreamCallbacks cb;
    cb.on_first_token = [](int64_t) {};
    cb.on_chunk = [](int64_t, int64_t) {};
    cb.on_done = [this](int64_t t, const bench::Usage&) { done_ns.push_back(t); };
    cb.on_error = [](int64_t, int, const std::string& text) { FAIL() << text; };
    router->send(s, std::move(cb));
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (replicas[i]->transport.in_flight() > before[i]) return static_cast<int>(i);
    }
    return -1;
  }

  void drain() {
    while (std::optional<int64_t> t = router->next_event_ns()) {
      clock.set_ns(std::max(*t, clock.now_ns()));
      router->advance_to(clock.now_ns());
    }
  }

  VirtualClock clock;
  std::vector<std::unique_ptr<Replica>> replicas;
  std::unique_ptr<ReplicaRouter> router;
  std::vector<int64_t> done_ns;
};

// The replayer announces the turns it has planned to the transport it drives, here the router:
// the oracle behind the replica must hear them (without, --kv-policy oracle was blind: its hit
// at C = 16 fell from 0.699 to 0.473, below the online policies').
TEST(ReplicaRouter, AnnouncementsReachTheReplicasOracle) {
  Cluster c(1, RouterKind::kSession);
  TraceNextUseOracle oracle(16, {});
  c.replicas[0]->transport.set_oracle(&oracle);
  c.router->announce(c.spec(1, "trace_0001", 0), 5'000);
  EXPECT_EQ(oracle.num_announced(), 1);
}

TEST(ReplicaRouter, NamesRoundTrip) {
  for (RouterKind k : {RouterKind::kSession, RouterKind::kRoundRobin, RouterKind::kLeastLoaded}) {
    EXPECT_EQ(router_kind_from_name(router_kind_name(k)), k);
  }
  EXPECT_FALSE(router_kind_from_name("random"));
}

TEST(ReplicaRouter, SessionRuleKeepsEverySessionOnOneReplicaAndUsesThemAll) {
  Cluster c(4, RouterKind::kSession);
  std::map<std::string, std::set<int>> replicas_of;
  std::set<int> used;
  uint64_t id = 0;
  for (int turn = 0; turn < 3; ++turn) {
    for (int s = 0; s < 41; ++s) {  // 41: round robin's turns would not line up with 4 replicas
      bench::RequestSpec spec = c.spec(id++, "session-" + std::to_string(s), 7 + s);
      spec.stream = turn % 2;  // a subagent's turn belongs to its parent's session
      const int r = c.send(spec);
      replicas_of[bench::session_key(spec)].insert(r);
      used.insert(r);
    }
    c.drain();
  }
  EXPECT_EQ(replicas_of.size(), 41u);
  for (const auto& [key, rs] : replicas_of) EXPECT_EQ(rs.size(), 1u) << key;
  EXPECT_EQ(used.size(), 4u);
  int64_t total = 0;
  for (int64_t n : c.router->routed()) total += n;
  EXPECT_EQ(total, 123);
}

// Where a real nginx would put it: the replica that owns the session key on the ring of the
// replicas' server names (those of scripts/serve_replicas by default).
TEST(ReplicaRouter, SessionRuleSendsEachSessionWhereNginxsRingDoes) {
  Cluster c(3, RouterKind::kSession);
  const ConsistentHashRing ring(serve_replicas_servers(3));
  for (int s = 0; s < 60; ++s) {
    const bench::RequestSpec spec = c.spec(static_cast<uint64_t>(s), "s" + std::to_string(s), 1);
    EXPECT_EQ(c.send(spec), ring.server_of(bench::session_key(spec))) << bench::session_key(spec);
  }
  c.drain();
}

TEST(ReplicaRouter, TwoPlaysOfOneSessionAreTwoSessions) {
  bench::RequestSpec a, b;
  a.session = b.session = "s";
  a.marker = bench::cache_bust_marker(1);
  b.marker = bench::cache_bust_marker(2);
  EXPECT_NE(bench::session_key(a), bench::session_key(b));
  EXPECT_EQ(bench::session_key(a), "s-000000000001");
  bench::RequestSpec none;
  EXPECT_EQ(bench::session_key(none), "");
  bench::RequestSpec odd;
  odd.session = "a b\r\nX-Evil: 1";
  EXPECT_EQ(bench::session_key(odd), "a_b__X-Evil:_1");
}

TEST(ReplicaRouter, RoundRobinCyclesAndLeastLoadedPicksTheEmptiest) {
  Cluster rr(3, RouterKind::kRoundRobin);
  std::vector<int> got;
  for (uint64_t i = 0; i < 6; ++i) got.push_back(rr.send(rr.spec(i, "same", 1)));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2}));

  Cluster ll(3, RouterKind::kLeastLoaded);
  EXPECT_EQ(ll.send(ll.spec(0, "a", 1)), 0);
  EXPECT_EQ(ll.send(ll.spec(1, "a", 1)), 1);
  EXPECT_EQ(ll.send(ll.spec(2, "a", 1)), 2);
  EXPECT_EQ(ll.send(ll.spec(3, "a", 1)), 0);
  ll.router->cancel(1);  // replica 1 is now the emptiest
  EXPECT_EQ(ll.send(ll.spec(4, "a", 1)), 1);
}

TEST(ReplicaRouter, CallbacksAcrossReplicasComeInTimeOrder) {
  Cluster c(2, RouterKind::kRoundRobin);
  // Replica 0 gets a long prompt, replica 1 a short one: 1's answer comes first.
  bench::RequestSpec longer = c.spec(0, "a", 1);
  longer.isl = 1024;
  c.send(longer);
  c.send(c.spec(1, "b", 2));
  // One advance over both answers: replica 1's must still be delivered first.
  c.clock.set_ns(10'000 * kMs);
  c.router->advance_to(c.clock.now_ns());
  ASSERT_EQ(c.done_ns.size(), 2u);
  EXPECT_LT(c.done_ns[0], c.done_ns[1]);
  EXPECT_EQ(c.router->routed(), (std::vector<int64_t>{1, 1}));
}

}  // namespace
}  // namespace paceline::sim
