#pragma once
// The benchmark's HTTP client: RequestSpecs become streaming POSTs to an OpenAI-compatible server
// (ours, vLLM, SGLang, ...), driven by one Asio event loop on the thread that drives the replayer.
// One keep-alive connection per request in flight, pooled for reuse; each response is read chunk
// by chunk as it arrives and stamped with the steady clock at that moment; SSE events are
// interpreted as they complete (sse_openai.h). Callbacks run on the loop's thread.
//
// What a request sends (../shared/specs/agentx-replay.md): `model`, the prompt (chat: one user
// message of filler text, text_prompt.h; completions: token ids, token_prompt.h), `stream`,
// `stream_options.include_usage`, `max_tokens` = `max_completion_tokens` = `min_tokens` = OSL,
// `ignore_eos`; `Authorization: Bearer` with an API key; the user's extra headers and body fields
// (request_extras.h); `X-Correlation-ID` (unique per request) and, when asked, `X-Session-ID`
// (the agent session, session_key.h), as AIPerf sends them. Only http:// URLs (no TLS).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "base/clock.h"
#include "bench/request_extras.h"
#include "bench/sse_openai.h"
#include "bench/text_prompt.h"
#include "bench/token_prompt.h"
#include "bench/transport.h"

namespace paceline::bench {

struct HttpUrl {
  std::string host;
  std::string port = "80";
  std::string base_path;  // prefix before /v1/..., without a trailing slash; usually empty

  std::string str() const;  // "http://host:port[base_path]"
};

// "http://host[:port][/prefix]"; a trailing "/v1" is dropped (the client adds it).
HttpUrl parse_http_url(std::string_view url);

enum class Endpoint { kChat, kCompletions };
Endpoint parse_endpoint(std::string_view name);  // "chat" | "completions"
const char* endpoint_name(Endpoint endpoint);

struct HttpTransportOptions {
  HttpUrl url;
  Endpoint endpoint = Endpoint::kChat;
  std::string model;  // sent instead of the recorded model; empty: the recorded one
  std::string api_key;
  bool session_id_header = false;  // X-Session-ID on every request that belongs to a session
  std::vector<HttpHeader> headers;  // -H/--header, sent with every request
  ExtraBody extra_body;             // --extra-body, merged into every body
  TextPromptConfig text;
  TokenPromptConfig tokens;
};

// The JSON body of one request.
std::string request_body(const RequestSpec& spec, const HttpTransportOptions& options);
// The per-request header lines, each ending in CRLF: X-Correlation-ID "<run>-<spec.id>" (`run`:
// 16 hex digits drawn once per transport, so ids differ across runs) and, when asked and the
// request has a session, X-Session-ID.
std::string request_headers(const RequestSpec& spec, const HttpTransportOptions& options,
                            uint64_t run);

class HttpTransport final : public Transport {
 public:
  // Resolves the server's address now (fails with a clear message when it cannot).
  HttpTransport(boost::asio::io_context& io, HttpTransportOptions options, const Clock& clock);
  ~HttpTransport() override;
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  void send(const RequestSpec& spec, StreamCallbacks callbacks) override;
  void cancel(uint64_t request_id) override;

  // Runs after every on_done / on_error, once that callback has returned: the driver's cue that
  // the replayer may have armed a timer.
  void set_after_finish(std::function<void()> hook) { after_finish_ = std::move(hook); }
  // Closes every connection; requests still in flight get no more callbacks.
  void close_all();

  int in_flight() const;
  int64_t content_chunks() const { return content_chunks_; }  // all streams, so far
  int64_t connections_opened() const { return connections_opened_; }

 private:
  struct Exchange;
  struct Connection;
  struct State;

  void start(const std::shared_ptr<Exchange>& ex);
  void connect(const std::shared_ptr<Exchange>& ex);
  void write(const std::shared_ptr<Exchange>& ex);
  void read_header(const std::shared_ptr<Exchange>& ex);
  void read_body(const std::shared_ptr<Exchange>& ex);
  void on_body_bytes(const std::shared_ptr<Exchange>& ex, size_t n, int64_t t_ns);
  void on_body_end(const std::shared_ptr<Exchange>& ex, int64_t t_ns);
  void deliver(const std::shared_ptr<Exchange>& ex, const OpenAiStreamReader::Step& step,
               int64_t t_ns);
  void on_failure(const std::shared_ptr<Exchange>& ex, const std::string& what, int64_t t_ns);
  void finish_ok(const std::shared_ptr<Exchange>& ex, int64_t t_ns);
  void finish_error(const std::shared_ptr<Exchange>& ex, int status, const std::string& text,
                    int64_t t_ns);
  void release(const std::shared_ptr<Exchange>& ex, bool reusable);

  boost::asio::io_context& io_;
  HttpTransportOptions options_;
  const Clock& clock_;
  std::string head_;  // request line and the headers every request shares
  uint64_t run_ = 0;  // the correlation ids' prefix
  std::unique_ptr<State> state_;
  std::function<void()> after_finish_;
  int64_t content_chunks_ = 0;
  int64_t connections_opened_ = 0;
};

}  // namespace paceline::bench
