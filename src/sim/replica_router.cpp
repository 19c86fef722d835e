#include "sim/replica_router.h"

#include "base/error.h"
#include "bench/session_key.h"
#include "sim/sim_transport.h"

namespace paceline::sim {

std::optional<RouterKind> router_kind_from_name(std::string_view name) {
  if (name == "session") return RouterKind::kSession;
  if (name == "round-robin") return RouterKind::kRoundRobin;
  if (name == "least-loaded") return RouterKind::kLeastLoaded;
  return std::nullopt;
}

const char* router_kind_name(RouterKind kind) {
  switch (kind) {
    case RouterKind::kSession:
      return "session";
    case RouterKind::kRoundRobin:
      return "round-robin";
    case RouterKind::kLeastLoaded:
      return "least-loaded";
  }
  return "?";
}

ReplicaRouter::ReplicaRouter(std::vector<SimTransport*> replicas, RouterKind kind,
                             std::vector<std::string> servers)
    : replicas_(std::move(replicas)), kind_(kind), routed_(replicas_.size(), 0) {
  if (replicas_.empty()) fail("a router needs at least one replica");
  const int n = static_cast<int>(replicas_.size());
  if (servers.empty()) servers = serve_replicas_servers(n);
  if (static_cast<int>(servers.size()) != n) {
    fail("{} replica server names for {} replicas", servers.size(), n);
  }
  if (kind_ == RouterKind::kSession) ring_.emplace(std::move(servers));
}

int ReplicaRouter::pick(const bench::RequestSpec& spec) {
  const int n = static_cast<int>(replicas_.size());
  if (kind_ == RouterKind::kSession) {
    const std::string key = bench::session_key(spec);
    // nginx sends one server everything, and an empty key round robin.
    if (!key.empty() && n > 1) return ring_->server_of(key);
  }
  if (kind_ == RouterKind::kLeastLoaded) {
    int best = 0;
    for (int i = 1; i < n; ++i) {
      if (replicas_[i]->in_flight() < replicas_[best]->in_flight()) best = i;
    }
    return best;
  }
  const int r = next_;
  next_ = (next_ + 1) % n;
  return r;
}

void ReplicaRouter::send(const bench::RequestSpec& spec, bench::StreamCallbacks callbacks) {
  const int r = pick(spec);
  ++routed_[r];
  replica_of_[spec.id] = r;
  replicas_[r]->send(spec, std::move(callbacks));
}

void ReplicaRouter::announce(const bench::RequestSpec& spec, int64_t at_ns) {
  for (SimTransport* r : replicas_) r->announce(spec, at_ns);
}

void ReplicaRouter::cancel(uint64_t request_id) {
  auto it = replica_of_.find(request_id);
  if (it == replica_of_.end()) return;
  replicas_[it->second]->cancel(request_id);
  replica_of_.erase(it);
}

std::optional<int64_t> ReplicaRouter::next_event_ns() const {
  std::optional<int64_t> t;
  for (const SimTransport* r : replicas_) {
    const std::optional<int64_t> e = r->next_event_ns();
    if (e && (!t || *e < *t)) t = e;
  }
  return t;
}

void ReplicaRouter::advance_to(int64_t now_ns) {
  for (;;) {
    int due = -1;
    int64_t due_ns = 0;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      const std::optional<int64_t> e = replicas_[i]->next_event_ns();
      if (e && *e <= now_ns && (due < 0 || *e < due_ns)) {
        due = static_cast<int>(i);
        due_ns = *e;
      }
    }
    if (due < 0) return;
    replicas_[due]->advance_to(due_ns);
  }
}

}  // namespace paceline::sim
