#pragma once
// What the replayers send and how answers come back. A Transport is anything that can serve a
// RequestSpec: HTTP to an OpenAI-compatible server, an in-process engine in virtual time, or a
// scripted fake in tests. Times are ns on the driver's clock (the same clock the replayer is
// advanced with); callbacks must run on the thread that drives the replayer.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace paceline::bench {

enum class Phase { kWarmup, kProfiling };

inline const char* phase_name(Phase p) {
  return p == Phase::kWarmup ? "warmup" : "profiling";
}

struct RequestSpec {
  uint64_t id = 0;  // unique in the run, in send order
  Phase phase = Phase::kProfiling;
  int lane = -1;        // closed loop: the lane; open loop: -1
  std::string session;  // session (trace) id
  int play = 0;         // the lane's play number of this session tree (0 = its first)
  int stream = 0;       // 0 = the session's own turns; k >= 1 = the play's k-th subagent stream
  std::string agent;    // the subagent's agent_id; empty on the session's own turns
  int turn = 0;       // index in its stream's recorded request list; warmup one-token: -1, -2, ...
  std::string model;  // as recorded; the client may override it
  int64_t isl = 0;    // prompt tokens to send
  int64_t osl = 0;    // completion tokens to ask for (>= 1)
  int64_t block_size = 0;
  // Recorded prefix-block ids: block i covers tokens [i*bs, (i+1)*bs). Equal ids with the same
  // hash_scope and marker mean identical blocks; tokens past the last id are unique to the request.
  std::vector<int64_t> hash_ids;
  std::string hash_scope;  // where ids compare: the session (AgentX, "local") or the trace file
  // "[rid:<12 hex>]\n\n", one per play, prepended to the first user message (and mixed into token
  // ids on the token path) so that two plays of one session never share cache.
  std::string marker;
  int64_t scheduled_ns = 0;  // when the replayer meant it to go, on the driver's clock
};

// Token counts from the server's final usage chunk; -1 where the server did not say.
struct Usage {
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  int64_t cached_tokens = -1;
};

// Exactly one of on_done and on_error ends a request. on_first_token comes once, at the first
// chunk with content, before that chunk's on_chunk; the trailing usage-only chunk is no chunk.
struct StreamCallbacks {
  std::function<void(int64_t t_ns)> on_first_token;
  std::function<void(int64_t t_ns, int64_t n_tokens)> on_chunk;
  std::function<void(int64_t t_ns, const Usage& usage)> on_done;
  std::function<void(int64_t t_ns, int http_status, const std::string& text)> on_error;
};

class Transport {
 public:
  // announce() for a request whose send time is not known yet (it waits on a turn in flight).
  static constexpr int64_t kUnscheduled = INT64_MAX / 2;

  virtual ~Transport() = default;
  // The replayer's plan, for a simulator's next-use oracle: the request `spec` describes (its id
  // is not assigned yet; lane, play, stream and turn name it) will be sent at `at_ns`, or later
  // than every scheduled one when kUnscheduled. A second announce of the same request replaces
  // the first. Servers over HTTP ignore it.
  virtual void announce(const RequestSpec& /*spec*/, int64_t /*at_ns*/) {}
  // Starts the request now; the callbacks may run later, or even before send returns.
  virtual void send(const RequestSpec& spec, StreamCallbacks callbacks) = 0;
  // Abandons a request still in flight (drain timeout, Ctrl-C); no callbacks need follow.
  virtual void cancel(uint64_t /*request_id*/) {}
};

}  // namespace paceline::bench
