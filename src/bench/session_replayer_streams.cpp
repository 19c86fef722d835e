// The session tree of one play: streams start, turns wait for their dependencies (the previous
// turn, joined subagents) and their think time, and a drained tree hands the lane to the next
// session. Part of SessionReplayer; the timers and sending live in session_replayer.cpp.
#include "bench/session_replayer.h"

namespace paceline::bench {

void SessionReplayer::start_stream(Lane& lane, int stream, int64_t now_ns) {
  lane.streams[stream].started = true;
  for (int child : lane.plan.streams[stream].children) {
    const PlannedStream& c = lane.plan.streams[child];
    if (c.spawn_turn < 0) {
      arm(now_ns + c.start_gap_ns, TimerKind::kStartStream, lane.index, lane.play, child);
    }
  }
  maybe_arm_next_turn(lane, stream, now_ns);
  maybe_finish_stream(lane, stream, now_ns);
}

void SessionReplayer::maybe_arm_next_turn(Lane& lane, int stream, int64_t now_ns) {
  StreamRun& run = lane.streams[stream];
  const PlannedStream& planned = lane.plan.streams[stream];
  if (stopped_ || !run.started || run.armed) return;
  if (run.sent >= static_cast<int>(planned.turns.size())) return;
  if (run.completed < run.sent) return;  // the previous turn is still in flight
  const PlannedTurn& turn = planned.turns[run.sent];
  for (int child : turn.joins) {
    if (!lane.streams[child].done) return;
  }
  run.armed = true;
  arm(now_ns + turn.gap_ns, TimerKind::kSendTurn, lane.index, lane.play, stream, run.sent);
  transport_.announce(turn_spec(lane, stream, run.sent), now_ns + turn.gap_ns);
}

void SessionReplayer::on_turn_finished(Lane& lane, int stream, int pos, int64_t now_ns) {
  ++lane.streams[stream].completed;
  for (int child : lane.plan.streams[stream].children) {
    const PlannedStream& c = lane.plan.streams[child];
    if (c.spawn_turn == pos) {
      arm(now_ns + c.start_gap_ns, TimerKind::kStartStream, lane.index, lane.play, child);
    }
  }
  maybe_arm_next_turn(lane, stream, now_ns);
  maybe_finish_stream(lane, stream, now_ns);
}

void SessionReplayer::maybe_finish_stream(Lane& lane, int stream, int64_t now_ns) {
  StreamRun& run = lane.streams[stream];
  const PlannedStream& planned = lane.plan.streams[stream];
  if (run.done || !run.started) return;
  if (run.completed < static_cast<int>(planned.turns.size())) return;
  if (run.children_done < static_cast<int>(planned.children.size())) return;
  run.done = true;
  if (planned.parent >= 0) {
    int parent = planned.parent;
    ++lane.streams[parent].children_done;
    maybe_arm_next_turn(lane, parent, now_ns);  // it may have been waiting on this join
    maybe_finish_stream(lane, parent, now_ns);
    return;
  }
  // The whole tree has drained: the lane moves on to the sampler's next session at turn 0.
  if (!stopped_) arm(now_ns, TimerKind::kStartPlay, lane.index, lane.play);
}

}  // namespace paceline::bench
