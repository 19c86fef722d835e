#include "server/reasoning_parser.h"

#include <algorithm>

#include "base/text.h"

namespace paceline {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

void drop_leading_newlines(std::string& text) {
  text.erase(0, std::min(text.find_first_not_of('\n'), text.size()));
}

}  // namespace

ReasoningMode reasoning_mode_for(std::optional<bool> enable_thinking,
                                 std::string_view rendered_prompt) {
  if (enable_thinking == false) return ReasoningMode::kOff;
  size_t end = rendered_prompt.find_last_not_of(kAsciiSpace);
  std::string_view trimmed =
      end == std::string_view::npos ? std::string_view() : rendered_prompt.substr(0, end + 1);
  return trimmed.ends_with(kThinkOpen) ? ReasoningMode::kStartsInside : ReasoningMode::kTagged;
}

ReasoningSplit split_reasoning(std::string_view text, ReasoningMode mode) {
  if (mode == ReasoningMode::kTagged) {
    size_t start = text.find_first_not_of(kAsciiSpace);
    bool opens = start != std::string_view::npos && text.substr(start).starts_with(kThinkOpen);
    if (!opens && text.find(kThinkClose) != std::string_view::npos) {
      mode = ReasoningMode::kStartsInside;
    }
  }
  ReasoningStreamParser parser(mode);
  ReasoningStreamParser::Delta first = parser.push(text);
  ReasoningStreamParser::Delta last = parser.flush();
  ReasoningSplit split;
  split.content = std::move(first.content) + last.content;
  if (parser.saw_reasoning()) split.reasoning = std::move(first.reasoning) + last.reasoning;
  return split;
}

ReasoningStreamParser::ReasoningStreamParser(ReasoningMode mode)
    : mode_(mode), state_(mode == ReasoningMode::kOff ? State::kContent : State::kStart) {}

ReasoningStreamParser::Delta ReasoningStreamParser::push(std::string_view text) {
  Delta out;
  if (state_ == State::kContent) {
    out.content = text;
    return out;
  }
  buffer_ += text;
  drain(out, false);
  return out;
}

ReasoningStreamParser::Delta ReasoningStreamParser::flush() {
  Delta out;
  drain(out, true);
  buffer_.clear();  // only newlines that frame a part are left
  return out;
}

void ReasoningStreamParser::drain(Delta& out, bool final) {
  while (!buffer_.empty()) {
    switch (state_) {
      case State::kStart: {
        std::string_view rest = buffer_;
        rest.remove_prefix(std::min(rest.find_first_not_of(kAsciiSpace), rest.size()));
        if (!final && kThinkOpen.starts_with(rest) && rest.size() < kThinkOpen.size()) return;
        if (rest.starts_with(kThinkOpen)) {
          buffer_.erase(0, buffer_.size() - rest.size() + kThinkOpen.size());
          state_ = State::kReasoning;
        } else if (mode_ == ReasoningMode::kStartsInside) {
          state_ = State::kReasoning;
        } else {
          state_ = State::kContent;
          out.content += buffer_;
          buffer_.clear();
          return;
        }
        saw_reasoning_ = true;
        trim_reasoning_start_ = true;
        break;
      }
      case State::kReasoning: {
        if (trim_reasoning_start_) {
          drop_leading_newlines(buffer_);
          if (buffer_.empty()) return;
          trim_reasoning_start_ = false;
        }
        size_t close = buffer_.find(kThinkClose);
        if (close == std::string::npos) {
          // Hold back a partial close tag and the newlines before it: the tag would drop them.
          size_t keep = final ? 0 : partial_tag_length(buffer_, kThinkClose);
          size_t cut = buffer_.size() - keep;
          while (cut > 0 && buffer_[cut - 1] == '\n') --cut;
          out.reasoning.append(buffer_, 0, cut);
          buffer_.erase(0, cut);
          if (final) buffer_.clear();
          return;
        }
        size_t end = close;
        while (end > 0 && buffer_[end - 1] == '\n') --end;
        out.reasoning.append(buffer_, 0, end);
        buffer_.erase(0, close + kThinkClose.size());
        state_ = State::kContentStart;
        break;
      }
      case State::kContentStart:
        drop_leading_newlines(buffer_);
        if (buffer_.empty()) return;
        state_ = State::kContent;
        break;
      case State::kContent:
        out.content += buffer_;
        buffer_.clear();
        return;
    }
  }
}

}  // namespace paceline
