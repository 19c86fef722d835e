#include "server/continuous_usage_writer.h"

#include <utility>

#include "server/openai_response.h"

namespace paceline {

std::string with_usage(const std::string& chunk, const Usage& usage) {
  // A key is the only place the raw text "usage": can occur: quotes inside strings are escaped.
  if (chunk.size() < 2 || chunk.front() != '{' || chunk.back() != '}' ||
      chunk.find("\"usage\":") != std::string::npos || chunk.starts_with("{\"error\"")) {
    return chunk;
  }
  std::string out = chunk.substr(0, chunk.size() - 1);
  out += ",\"usage\":";
  out += usage_json(usage);
  out += '}';
  return out;
}

ContinuousUsageWriter::ContinuousUsageWriter(std::shared_ptr<ResponseWriter> inner)
    : inner_(std::move(inner)) {}

void ContinuousUsageWriter::set_usage(const Usage& usage) {
  std::lock_guard lock(mu_);
  usage_ = usage;
}

void ContinuousUsageWriter::send(int status, const std::string& content_type, std::string body,
                                 const std::map<std::string, std::string>& extra_headers) {
  inner_->send(status, content_type, std::move(body), extra_headers);
}

void ContinuousUsageWriter::start_sse(const std::map<std::string, std::string>& extra_headers) {
  inner_->start_sse(extra_headers);
}

void ContinuousUsageWriter::sse_event(const std::string& payload) {
  Usage usage;
  {
    std::lock_guard lock(mu_);
    usage = usage_;
  }
  inner_->sse_event(with_usage(payload, usage));
}

void ContinuousUsageWriter::end() {
  inner_->end();
}

void ContinuousUsageWriter::on_disconnect(std::function<void()> callback) {
  inner_->on_disconnect(std::move(callback));
}

bool ContinuousUsageWriter::closed() const {
  return inner_->closed();
}

}  // namespace paceline
