#pragma once
// The agent session a request belongs to, as a router sees it: one play of one recorded session,
// its subagent streams included (they are part of the same agent's work and share its trace's
// prefix scope). Two plays of one session are two sessions: their cache-bust markers differ, so
// they share no KV and need not meet on one replica. The bench sends it as X-Session-ID; the
// simulator's session router hashes it.
#include <string>

#include "bench/transport.h"

namespace paceline::bench {

// "<session>-<the play's 12 marker hex digits>", or the session alone when the request has no
// marker; empty when the request belongs to no session (a Mooncake record without session_id).
// Bytes outside visible ASCII become `_`, so it is a valid HTTP header value.
std::string session_key(const RequestSpec& spec);

}  // namespace paceline::bench
