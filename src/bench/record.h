#pragma once
// The per-request record: what was sent, when each part of the answer arrived, what the server
// said it counted. Replayers open a record per send and feed it the transport's callbacks; metrics
// and the records.jsonl file are computed from these alone.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/transport.h"

namespace paceline::bench {

enum class RecordStatus {
  kInFlight,
  kOk,
  kError,
  kIncomplete,  // still running when the drain timeout or a cancel ended the run
};

const char* status_name(RecordStatus s);

struct RequestRecord {
  uint64_t id = 0;
  Phase phase = Phase::kProfiling;
  int lane = -1;
  std::string session;
  int play = 0;
  int stream = 0;
  std::string agent;
  int turn = 0;

  // ns since the run started; -1 where it has not happened.
  int64_t scheduled_ns = 0;
  int64_t start_ns = 0;
  int64_t first_token_ns = -1;        // first chunk with content
  int64_t last_token_ns = -1;         // last chunk with content
  int64_t end_ns = -1;                // the stream ended (usage chunk, error or cancel)
  std::vector<int64_t> chunk_ns;      // every content chunk
  std::vector<int64_t> chunk_tokens;  // tokens in that chunk, as the transport counted them

  int64_t requested_isl = 0;
  int64_t requested_osl = 0;
  int64_t isl = 0;             // from usage when reported, else requested_isl
  int64_t osl = 0;             // from usage when reported, else the sum of chunk_tokens
  int64_t cached_tokens = -1;  // from usage; -1 when not reported
  bool usage_reported = false;
  // Tokens of leading blocks whose ids this run had already sent in the same play: the hit an
  // infinite prefix cache would give.
  int64_t trace_reusable_tokens = 0;

  RecordStatus status = RecordStatus::kInFlight;
  int http_status = 0;
  bool stream_completed = false;  // the stream ended normally ([DONE] or usage), content or not
  std::string error;
  bool context_overflow = false;

  bool ok() const { return status == RecordStatus::kOk; }
  double ttft_s() const { return static_cast<double>(first_token_ns - start_ns) / 1e9; }
  double e2el_s() const { return static_cast<double>(last_token_ns - start_ns) / 1e9; }
};

// Whether an error answer says the prompt did not fit the model's context (the validity rule
// counts these separately).
bool looks_like_context_overflow(int http_status, std::string_view text);

class RecordLog {
 public:
  // Times passed in are on the driver's clock; records keep them relative to `run_start_ns`.
  void set_run_start(int64_t run_start_ns) { run_start_ns_ = run_start_ns; }
  int64_t run_start_ns() const { return run_start_ns_; }

  // Opens the record for a request being sent at `now_ns` and sets spec.id to its index.
  RequestRecord& open(RequestSpec& spec, int64_t now_ns, int64_t trace_reusable_tokens = 0);

  // Each returns false when the record is no longer in flight (a late callback after a cancel).
  bool first_token(uint64_t id, int64_t t_ns);
  bool chunk(uint64_t id, int64_t t_ns, int64_t n_tokens);
  bool done(uint64_t id, int64_t t_ns, const Usage& usage);
  bool error(uint64_t id, int64_t t_ns, int http_status, const std::string& text);
  bool incomplete(uint64_t id, int64_t t_ns);

  const RequestRecord& at(uint64_t id) const { return records_.at(id); }
  const std::vector<RequestRecord>& records() const { return records_; }

 private:
  RequestRecord* live(uint64_t id);
  int64_t rel(int64_t t_ns) const { return t_ns - run_start_ns_; }

  int64_t run_start_ns_ = 0;
  std::vector<RequestRecord> records_;
};

}  // namespace paceline::bench
