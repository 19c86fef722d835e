#include "server/tool_call_parser.h"

#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"

namespace paceline {
namespace {

constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The call in a block's body, or nothing when the body is not a valid call.
std::optional<ToolCall> parse_call_body(std::string_view body) {
  auto json = nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  auto name = json.find("name");
  if (name == json.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return std::nullopt;
  }
  ToolCall call;
  call.name = name->get<std::string>();
  auto arguments = json.find("arguments");
  if (arguments == json.end() || arguments->is_null()) {
    call.arguments = "{}";
  } else if (arguments->is_string()) {
    call.arguments = arguments->get<std::string>();
  } else if (arguments->is_object()) {
    call.arguments =
        arguments->dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } else {
    return std::nullopt;
  }
  return call;
}

}  // namespace

std::string tool_call_id(uint64_t seed, size_t index) {
  uint64_t base = mix64(seed + 0x9E3779B97F4A7C15ull * (2 * index + 1));
  uint64_t more = mix64(base ^ 0xD1B54A32D192ED03ull);
  return fmt::format("call_{:016x}{:08x}", base, static_cast<uint32_t>(more));
}

ToolCallParse parse_tool_calls(std::string_view text, uint64_t id_seed) {
  ToolCallStreamParser parser(id_seed);
  ToolCallStreamParser::Delta first = parser.push(text);
  ToolCallStreamParser::Delta last = parser.flush();
  ToolCallParse result{std::move(first.content), std::move(first.calls)};
  result.content += last.content;
  for (auto& call : last.calls) result.calls.push_back(std::move(call));
  return result;
}

ToolCallStreamParser::ToolCallStreamParser(uint64_t id_seed) : id_seed_(id_seed) {}

ToolCallStreamParser::Delta ToolCallStreamParser::push(std::string_view text) {
  Delta out;
  buffer_ += text;
  drain(out, false);
  return out;
}

ToolCallStreamParser::Delta ToolCallStreamParser::flush() {
  Delta out;
  drain(out, true);
  if (state_ == State::kInBlock) {
    // Never closed: the block was text after all.
    std::string block = std::string(kToolCallOpen) + buffer_;
    buffer_.clear();
    scanned_ = 0;
    state_ = State::kText;
    emit_content(out, block);
  } else if (!buffer_.empty()) {
    emit_content(out, buffer_);
    buffer_.clear();
  }
  if (!after_block_) out.content += held_space_;
  held_space_.clear();
  return out;
}

void ToolCallStreamParser::drain(Delta& out, bool final) {
  while (!buffer_.empty()) {
    if (state_ == State::kText) {
      size_t open = buffer_.find(kToolCallOpen);
      if (open == std::string::npos) {
        size_t keep = final ? 0 : partial_tag_length(buffer_, kToolCallOpen);
        emit_content(out, std::string_view(buffer_).substr(0, buffer_.size() - keep));
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
      emit_content(out, std::string_view(buffer_).substr(0, open));
      buffer_.erase(0, open + kToolCallOpen.size());
      state_ = State::kInBlock;
      continue;
    }
    size_t from = scanned_ >= kToolCallClose.size() ? scanned_ - kToolCallClose.size() + 1 : 0;
    size_t close = buffer_.find(kToolCallClose, from);
    if (close == std::string::npos) {  // the block is still open
      scanned_ = buffer_.size();
      return;
    }
    scanned_ = 0;
    std::string_view body = std::string_view(buffer_).substr(0, close);
    std::optional<ToolCall> call = parse_call_body(body);
    if (call) {
      call->index = num_calls_;
      call->id = tool_call_id(id_seed_, num_calls_);
      ++num_calls_;
      out.calls.push_back(std::move(*call));
      held_space_.clear();
      after_block_ = true;
    } else {
      std::string block = fmt::format("{}{}{}", kToolCallOpen, body, kToolCallClose);
      emit_content(out, block);
    }
    buffer_.erase(0, close + kToolCallClose.size());
    state_ = State::kText;
  }
}

void ToolCallStreamParser::emit_content(Delta& out, std::string_view text) {
  size_t last = text.find_last_not_of(kAsciiSpace);
  if (last == std::string_view::npos) {
    if (!after_block_) held_space_ += text;
    return;
  }
  std::string_view body = text.substr(0, last + 1);
  if (after_block_) {
    body.remove_prefix(body.find_first_not_of(kAsciiSpace));
  } else {
    out.content += held_space_;
  }
  out.content += body;
  held_space_ = text.substr(last + 1);
  after_block_ = false;
}

}  // namespace paceline
