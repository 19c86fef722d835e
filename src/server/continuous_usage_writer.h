#pragma once
// stream_options.continuous_usage_stats, as vLLM streams it: every chunk of the stream carries
// "usage" with the tokens so far (prompt_tokens, completion_tokens, total_tokens), not only the
// last one. A ResponseWriter in front of the real one that adds the field to each JSON chunk the
// stream sends; the stream tells it the counts as its tokens arrive. Chunks that already have a
// usage (the final usage chunk), errors and [DONE] pass unchanged.
#include <memory>
#include <mutex>

#include "sched/request.h"
#include "server/http_types.h"

namespace paceline {

class ContinuousUsageWriter final : public ResponseWriter {
 public:
  explicit ContinuousUsageWriter(std::shared_ptr<ResponseWriter> inner);

  // The counts the following chunks carry.
  void set_usage(const Usage& usage);

  void send(int status, const std::string& content_type, std::string body,
            const std::map<std::string, std::string>& extra_headers = {}) override;
  void start_sse(const std::map<std::string, std::string>& extra_headers = {}) override;
  void sse_event(const std::string& payload) override;
  void end() override;
  void on_disconnect(std::function<void()> callback) override;
  bool closed() const override;

 private:
  std::shared_ptr<ResponseWriter> inner_;
  std::mutex mu_;
  Usage usage_;
};

// `chunk` (one JSON object) with ,"usage":{...} added before its closing brace; unchanged when it
// is not an object, already has a "usage" member, or is an error.
std::string with_usage(const std::string& chunk, const Usage& usage);

}  // namespace paceline
