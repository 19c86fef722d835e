#pragma once
// Incremental Server-Sent Events framing (the WHATWG event-stream format) for the HTTP client.
// Bytes arrive split anywhere (mid-line, between "\r" and "\n", inside a UTF-8 character); the
// parser keeps the unfinished line and hands out each event when its blank line arrives. Only
// `data` and `event` fields matter here; comments (":" lines), `id` and `retry` are skipped.
#include <string>
#include <string_view>
#include <vector>

namespace paceline::bench {

struct SseEvent {
  std::string event;  // the `event:` field; empty for the default "message"
  std::string data;   // `data:` lines joined with "\n"
};

class SseParser {
 public:
  // Appends to `out` every event that `bytes` completes.
  void feed(std::string_view bytes, std::vector<SseEvent>& out);
  // The stream ended: an event still missing its blank line is dispatched, as servers that close
  // right after the last `data:` line expect.
  void finish(std::vector<SseEvent>& out);

  // Bytes held for an unfinished line or event (a runaway server shows up here).
  size_t buffered_bytes() const { return line_.size() + data_.size(); }

 private:
  void end_line(std::vector<SseEvent>& out);
  void dispatch(std::vector<SseEvent>& out);

  std::string line_;   // the current line, without its terminator
  std::string data_;   // data lines of the current event so far
  std::string event_;  // event field of the current event
  bool has_data_ = false;
  bool skip_lf_ = false;  // the last byte was "\r": a following "\n" belongs to it
};

}  // namespace paceline::bench
