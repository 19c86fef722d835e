#include "bench/session_replayer.h"

#include <algorithm>
#include <tuple>

#include "base/error.h"

namespace paceline::bench {

SessionReplayer::SessionReplayer(const std::vector<AgentxSession>& sessions,
                                 SessionReplayConfig config, Transport& transport)
    : sessions_(sessions),
      config_(config),
      transport_(transport),
      sampler_(sessions.size(), config.sampler, config.seed) {
  if (config_.concurrency < 1) {
    fail("--concurrency must be at least 1, got {}", config_.concurrency);
  }
  if (config_.warmup_requests_per_lane < 0) {
    fail("--warmup-requests-per-lane must be >= 0, got {}", config_.warmup_requests_per_lane);
  }
  if (config_.duration_ns <= 0) fail("--duration must be positive");
  if (config_.drain_timeout_ns < 0) fail("--drain-timeout must be >= 0");
  double lo = config_.start_window_lo, hi = config_.start_window_hi;
  if (!(0 <= lo && lo <= hi && hi <= 1)) {
    fail("--start-window {},{}: need 0 <= lo <= hi <= 1", lo, hi);
  }
}

void SessionReplayer::arm(int64_t at_ns, TimerKind kind, int lane, int play, int stream, int pos) {
  timers_.push_back(Timer{at_ns, next_seq_++, kind, lane, play, stream, pos});
}

std::optional<int64_t> SessionReplayer::next_timer_ns() const {
  if (finished_ || timers_.empty()) return std::nullopt;
  int64_t t = timers_.front().at_ns;
  for (const Timer& timer : timers_) t = std::min(t, timer.at_ns);
  return t;
}

void SessionReplayer::start(int64_t now_ns) {
  if (started_) fail("the replayer was started twice");
  started_ = true;
  log_.set_run_start(now_ns);
  lanes_.resize(static_cast<size_t>(config_.concurrency));
  for (int i = 0; i < config_.concurrency; ++i) {
    Lane& lane = lanes_[i];
    lane.index = i;
    lane.rng = SplitMix64(mix_keys(config_.seed, 0x1a7e0000ULL + static_cast<uint64_t>(i)));
    size_t s = sampler_.next();
    int start_turn = choose_start_turn(sessions_[s], lane.rng.uniform(), config_.start_window_lo,
                                       config_.start_window_hi);
    begin_play(lane, s, start_turn);
    lane.primer_pending = lane.plan.primer_turn >= 0;
    lane.warmup_one_token_left = config_.warmup_requests_per_lane;
    if (lane.primer_pending || lane.warmup_one_token_left > 0) {
      arm(now_ns, TimerKind::kWarmupSend, i, lane.play);
    } else {
      ++warm_lanes_;
    }
  }
  if (warm_lanes_ == config_.concurrency) begin_profiling(now_ns);
}

void SessionReplayer::advance_to(int64_t now_ns) {
  while (!finished_) {
    auto due = timers_.end();
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
      if (it->at_ns > now_ns) continue;
      if (due == timers_.end() || std::tie(it->at_ns, it->seq) < std::tie(due->at_ns, due->seq)) {
        due = it;
      }
    }
    if (due == timers_.end()) break;
    Timer timer = *due;
    timers_.erase(due);
    fire(timer, now_ns);
  }
  compress_idle(now_ns);
}

void SessionReplayer::fire(const Timer& timer, int64_t now_ns) {
  switch (timer.kind) {
    case TimerKind::kWarmupSend:
      send_warmup(lanes_[timer.lane], timer.at_ns, now_ns);
      return;
    case TimerKind::kStartPlay: {
      if (stopped_) return;
      Lane& lane = lanes_[timer.lane];
      begin_play(lane, sampler_.next(), 0);
      start_stream(lane, 0, now_ns);
      return;
    }
    case TimerKind::kStartStream:
      if (stopped_ || lanes_[timer.lane].play != timer.play) return;
      start_stream(lanes_[timer.lane], timer.stream, now_ns);
      return;
    case TimerKind::kSendTurn:
      if (stopped_ || lanes_[timer.lane].play != timer.play) return;
      send_turn(lanes_[timer.lane], timer.stream, timer.pos, timer.at_ns, now_ns);
      return;
    case TimerKind::kProfilingEnd:
      stop(now_ns);
      return;
    case TimerKind::kDrainDeadline:
      end_run(now_ns);
      return;
  }
}

void SessionReplayer::begin_play(Lane& lane, size_t session_index, int start_turn) {
  ++lane.play;
  lane.session = &sessions_[session_index];
  lane.plan = plan_session(*lane.session, start_turn, config_.trace_idle_gap_cap_ns);
  lane.marker = cache_bust_marker(lane.rng.next());
  lane.streams.assign(lane.plan.streams.size(), StreamRun{});
  lane.seen_blocks.clear();
}

void SessionReplayer::send_warmup(Lane& lane, int64_t scheduled_ns, int64_t now_ns) {
  const AgentxSession& session = *lane.session;
  RequestSpec spec;
  spec.phase = Phase::kWarmup;
  if (lane.primer_pending) {
    // The turn before the start turn, with its whole prefix: what a long-running session would
    // have in the cache. Its answer is not reused (later turns' blocks are synthesized), so one
    // token is enough.
    lane.primer_pending = false;
    const AgentxRequest& primer = session.requests[lane.plan.primer_turn];
    spec.turn = lane.plan.primer_turn;
    spec.model = primer.model;
    spec.isl = primer.in;
    spec.hash_ids = primer.hash_ids;
  } else {
    // One-token requests: one block of text unique to the lane, to warm connections and the
    // server's code paths without disturbing the primed prefix.
    int k = config_.warmup_requests_per_lane - lane.warmup_one_token_left;
    --lane.warmup_one_token_left;
    spec.turn = -1 - k;
    spec.model = session.requests[lane.plan.start_turn].model;
    spec.isl = session.block_size;
  }
  spec.osl = 1;
  const bool primer = spec.turn >= 0 && !lane.plan.streams[0].turns.empty();
  send(std::move(spec), lane, Sent{lane.index, lane.play, -1, 0}, scheduled_ns, now_ns);
  // The primer's blocks are for the start turn, sent once every lane has warmed up.
  if (primer) transport_.announce(turn_spec(lane, 0, 0), Transport::kUnscheduled);
}

void SessionReplayer::send_turn(Lane& lane, int stream, int pos, int64_t scheduled_ns,
                                int64_t now_ns) {
  StreamRun& run = lane.streams[stream];
  run.armed = false;
  ++run.sent;
  send(turn_spec(lane, stream, pos), lane, Sent{lane.index, lane.play, stream, pos}, scheduled_ns,
       now_ns);
  if (pos + 1 < static_cast<int>(lane.plan.streams[stream].turns.size())) {
    transport_.announce(turn_spec(lane, stream, pos + 1), Transport::kUnscheduled);
  }
}

RequestSpec SessionReplayer::turn_spec(const Lane& lane, int stream, int pos) const {
  const PlannedStream& planned = lane.plan.streams[stream];
  const AgentxRequest& request = *planned.turns[pos].request;
  RequestSpec spec;
  spec.phase = Phase::kProfiling;
  spec.stream = stream;
  spec.agent = planned.agent_id;
  spec.turn = planned.turns[pos].index;
  spec.model = request.model;
  spec.isl = request.in;
  spec.osl = std::max<int64_t>(1, request.out);  // a few recorded turns have out = 0
  spec.hash_ids = request.hash_ids;
  fill_lane_fields(spec, lane);
  return spec;
}

void SessionReplayer::fill_lane_fields(RequestSpec& spec, const Lane& lane) const {
  spec.lane = lane.index;
  spec.session = lane.session->id;
  spec.hash_scope = lane.session->id;
  spec.play = lane.play;
  spec.block_size = lane.session->block_size;
  spec.marker = lane.marker;
}

void SessionReplayer::send(RequestSpec spec, Lane& lane, Sent sent, int64_t scheduled_ns,
                           int64_t now_ns) {
  fill_lane_fields(spec, lane);
  spec.scheduled_ns = scheduled_ns;
  // What an infinite prefix cache would hold: the leading blocks this play has already sent.
  int64_t reusable = 0;
  while (reusable < static_cast<int64_t>(spec.hash_ids.size()) &&
         lane.seen_blocks.count(spec.hash_ids[reusable]) > 0) {
    ++reusable;
  }
  lane.seen_blocks.insert(spec.hash_ids.begin(), spec.hash_ids.end());
  log_.open(spec, now_ns, std::min(spec.isl, reusable * spec.block_size));
  sent_.push_back(sent);
  ++in_flight_;
  uint64_t id = spec.id;
  StreamCallbacks cb;
  cb.on_first_token = [this, id](int64_t t) { log_.first_token(id, t); };
  cb.on_chunk = [this, id](int64_t t, int64_t n) { log_.chunk(id, t, n); };
  cb.on_done = [this, id](int64_t t, const Usage& usage) {
    if (log_.done(id, t, usage)) on_finished(id, t, log_.at(id).ok());
  };
  cb.on_error = [this, id](int64_t t, int status, const std::string& text) {
    if (log_.error(id, t, status, text)) on_finished(id, t, false);
  };
  transport_.send(spec, std::move(cb));
}

void SessionReplayer::on_finished(uint64_t id, int64_t now_ns, bool ok) {
  --in_flight_;
  if (finished_) return;
  Sent sent = sent_[id];
  Lane& lane = lanes_[sent.lane];
  if (sent.stream < 0) {
    // A warmup only needs an answer. A one-token reply whose token has no text of its own (half
    // of a UTF-8 character, or an id beyond the tokenizer) completes without content: answered.
    if (!ok && !log_.at(id).stream_completed) {
      const RequestRecord& r = log_.at(id);
      abort_reason_ = fmt::format(
          "warmup request failed on lane {} (session {}, turn {}): status {}: {}; the server "
          "must answer warmup requests before a run can be measured",
          sent.lane, r.session, r.turn, r.http_status, r.error);
      end_run(now_ns);
      return;
    }
    on_warmup_finished(lane, now_ns);
  } else {
    // A failed turn still advances its session: the closed loop keeps its pace, and the error
    // is counted in the metrics.
    on_turn_finished(lane, sent.stream, sent.pos, now_ns);
  }
  if (stopped_ && in_flight_ == 0) {
    finished_ = true;
    timers_.clear();
  }
  compress_idle(now_ns);
}

void SessionReplayer::on_warmup_finished(Lane& lane, int64_t now_ns) {
  if (lane.primer_pending || lane.warmup_one_token_left > 0) {
    arm(now_ns, TimerKind::kWarmupSend, lane.index, lane.play);
    return;
  }
  if (++warm_lanes_ == config_.concurrency) begin_profiling(now_ns);
}

void SessionReplayer::begin_profiling(int64_t now_ns) {
  profiling_start_ns_ = now_ns;
  arm(now_ns + config_.duration_ns, TimerKind::kProfilingEnd);
  for (Lane& lane : lanes_) start_stream(lane, 0, now_ns);
}

void SessionReplayer::stop(int64_t now_ns) {
  stopped_ = true;
  std::erase_if(timers_, [](const Timer& t) { return t.shiftable(); });
  if (in_flight_ == 0) {
    finished_ = true;
    timers_.clear();
    return;
  }
  arm(now_ns + config_.drain_timeout_ns, TimerKind::kDrainDeadline);
}

void SessionReplayer::end_run(int64_t now_ns) {
  stopped_ = true;
  finished_ = true;
  timers_.clear();
  for (const RequestRecord& r : log_.records()) {
    if (r.status != RecordStatus::kInFlight) continue;
    uint64_t id = r.id;
    log_.incomplete(id, now_ns);  // first, so that a callback from cancel() is ignored
    transport_.cancel(id);
  }
  in_flight_ = 0;
}

void SessionReplayer::cancel(int64_t now_ns) {
  if (finished_) return;
  cancelled_ = true;
  end_run(now_ns);
}

void SessionReplayer::compress_idle(int64_t now_ns) {
  int64_t cap = config_.system_idle_gap_cap_ns;
  if (cap <= 0 || in_flight_ > 0 || finished_) return;
  std::optional<int64_t> next;
  for (const Timer& t : timers_) {
    if (t.shiftable() && (!next || t.at_ns < *next)) next = t.at_ns;
  }
  if (!next || *next - now_ns <= cap) return;
  int64_t shift = *next - now_ns - cap;
  for (Timer& t : timers_) {
    if (t.shiftable()) t.at_ns -= shift;
  }
  idle_skipped_ns_ += shift;
}

}  // namespace paceline::bench
