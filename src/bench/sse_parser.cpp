#include "bench/sse_parser.h"

namespace paceline::bench {

void SseParser::feed(std::string_view bytes, std::vector<SseEvent>& out) {
  size_t i = 0;
  if (skip_lf_ && !bytes.empty()) {
    skip_lf_ = false;
    if (bytes[0] == '\n') i = 1;
  }
  while (i < bytes.size()) {
    size_t eol = bytes.find_first_of("\r\n", i);
    if (eol == std::string_view::npos) {
      line_.append(bytes.substr(i));
      return;
    }
    line_.append(bytes.substr(i, eol - i));
    end_line(out);
    i = eol + 1;
    if (bytes[eol] == '\r') {
      if (i == bytes.size()) {
        skip_lf_ = true;  // the "\n" of a "\r\n" may come with the next read
      } else if (bytes[i] == '\n') {
        ++i;
      }
    }
  }
}

void SseParser::finish(std::vector<SseEvent>& out) {
  if (!line_.empty()) end_line(out);
  dispatch(out);
  skip_lf_ = false;
}

void SseParser::end_line(std::vector<SseEvent>& out) {
  if (line_.empty()) {
    dispatch(out);
    return;
  }
  if (line_[0] == ':') {  // a comment (keep-alive pings)
    line_.clear();
    return;
  }
  std::string_view line = line_;
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  }
  line_.clear();
}

void SseParser::dispatch(std::vector<SseEvent>& out) {
  if (has_data_) out.push_back(SseEvent{std::move(event_), std::move(data_)});
  event_.clear();
  data_.clear();
  has_data_ = false;
}

}  // namespace paceline::bench
