#include "bench/arrival_replayer.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "base/error.h"
#include "bench/marker.h"
#include "bench/rng.h"
#include "bench/wait_ns.h"

namespace paceline::bench {

ArrivalReplayer::ArrivalReplayer(const std::vector<MooncakeRecord>& records,
                                 ArrivalReplayConfig config, Transport& transport)
    : records_(records), config_(std::move(config)), transport_(transport) {
  if (!(config_.time_scale > 0)) fail("--time-scale must be positive, got {}", config_.time_scale);
  if (config_.block_size <= 0) fail("block size must be positive, got {}", config_.block_size);
  marker_ = cache_bust_marker(SplitMix64(mix_keys(config_.seed, 0xa5517a1ULL)).next());
}

int64_t ArrivalReplayer::scaled_ns(double ms) const {
  return wait_ns_from(ms * config_.time_scale * 1e6);
}

void ArrivalReplayer::arm(int64_t at_ns, int64_t record) {
  timers_.push(Timer{at_ns, next_seq_++, record});
}

std::optional<int64_t> ArrivalReplayer::next_timer_ns() const {
  if (finished_ || timers_.empty()) return std::nullopt;
  return timers_.top().at_ns;
}

void ArrivalReplayer::start(int64_t now_ns) {
  if (started_) fail("the replayer was started twice");
  started_ = true;
  run_start_ns_ = now_ns;
  log_.set_run_start(now_ns);
  next_in_session_.assign(records_.size(), -1);
  std::unordered_map<std::string, int64_t> last_of_session;
  for (int64_t i = 0; i < static_cast<int64_t>(records_.size()); ++i) {
    const MooncakeRecord& r = records_[i];
    if (r.session_id) {
      auto [it, first] = last_of_session.try_emplace(*r.session_id, i);
      if (!first) {
        next_in_session_[it->second] = i;  // sent when record it->second has been answered
        it->second = i;
        continue;
      }
    }
    if (!r.timestamp_ms) fail("mooncake record {} has no timestamp", r.line);
    arm(now_ns + scaled_ns(*r.timestamp_ms), i);
  }
  unsent_ = static_cast<int64_t>(records_.size());
  if (config_.duration_ns > 0) arm(now_ns + config_.duration_ns, -1);
  check_done();
}

void ArrivalReplayer::advance_to(int64_t now_ns) {
  while (!finished_ && !timers_.empty() && timers_.top().at_ns <= now_ns) {
    Timer t = timers_.top();
    timers_.pop();
    if (t.record == -1) {
      stop(now_ns);
    } else if (t.record == -2) {
      end_run(now_ns);
    } else if (!stopped_) {
      send(t.record, t.at_ns, now_ns);
    }
  }
}

void ArrivalReplayer::send(int64_t index, int64_t scheduled_ns, int64_t now_ns) {
  const MooncakeRecord& r = records_[index];
  RequestSpec spec;
  spec.phase = Phase::kProfiling;
  spec.session = r.session_id.value_or("");
  spec.turn = static_cast<int>(index);
  spec.isl = r.input_length;
  spec.osl = std::max<int64_t>(1, r.output_length);
  spec.block_size = config_.block_size;
  spec.hash_ids = r.hash_ids;
  spec.hash_scope = config_.trace_name;
  spec.marker = marker_;
  spec.scheduled_ns = scheduled_ns;
  log_.open(spec, now_ns);
  record_of_request_.push_back(index);
  --unsent_;
  ++in_flight_;
  uint64_t id = spec.id;
  StreamCallbacks cb;
  cb.on_first_token = [this, id](int64_t t) { log_.first_token(id, t); };
  cb.on_chunk = [this, id](int64_t t, int64_t n) { log_.chunk(id, t, n); };
  cb.on_done = [this, id](int64_t t, const Usage& usage) {
    if (log_.done(id, t, usage)) on_finished(id, t);
  };
  cb.on_error = [this, id](int64_t t, int status, const std::string& text) {
    if (log_.error(id, t, status, text)) on_finished(id, t);
  };
  transport_.send(spec, std::move(cb));
}

void ArrivalReplayer::on_finished(uint64_t id, int64_t now_ns) {
  --in_flight_;
  if (finished_) return;
  int64_t next = next_in_session_[record_of_request_[id]];
  if (next >= 0 && !stopped_) {
    const MooncakeRecord& r = records_[next];
    int64_t at = r.delay_ms ? now_ns + scaled_ns(*r.delay_ms)
                            : std::max(now_ns, run_start_ns_ + scaled_ns(*r.timestamp_ms));
    arm(at, next);
  }
  check_done();
}

void ArrivalReplayer::check_done() {
  if (in_flight_ > 0) return;
  if (stopped_ || unsent_ == 0) {
    finished_ = true;
    timers_ = {};
  }
}

void ArrivalReplayer::stop(int64_t now_ns) {
  stopped_ = true;
  timers_ = {};
  if (in_flight_ == 0) {
    finished_ = true;
    return;
  }
  arm(now_ns + config_.drain_timeout_ns, -2);
}

void ArrivalReplayer::end_run(int64_t now_ns) {
  stopped_ = true;
  finished_ = true;
  timers_ = {};
  for (const RequestRecord& r : log_.records()) {
    if (r.status != RecordStatus::kInFlight) continue;
    uint64_t id = r.id;
    log_.incomplete(id, now_ns);
    transport_.cancel(id);
  }
  in_flight_ = 0;
}

void ArrivalReplayer::cancel(int64_t now_ns) {
  if (!finished_) end_run(now_ns);
}

}  // namespace paceline::bench
