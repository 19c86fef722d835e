#include "bench/request_extras.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "base/error.h"

namespace paceline::bench {

namespace {

// RFC 9110 token characters.
bool is_token_char(unsigned char c) {
  static constexpr std::string_view kExtra = "!#$%&'*+-.^_`|~";
  return std::isalnum(c) != 0 || kExtra.find(static_cast<char>(c)) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Top-level fields of the bodies http_transport.cpp builds.
constexpr std::array<std::string_view, 9> kClientFields = {"model",
                                                           "messages",
                                                           "prompt",
                                                           "stream",
                                                           "stream_options",
                                                           "max_tokens",
                                                           "max_completion_tokens",
                                                           "min_tokens",
                                                           "ignore_eos"};

}  // namespace

HttpHeader parse_header_flag(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    fail("--header '{}': expected 'Name: value'", text);
  }
  std::string_view name = text.substr(0, colon);
  std::string_view value = trim(text.substr(colon + 1));
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
        return is_token_char(static_cast<unsigned char>(c));
      })) {
    fail("--header '{}': '{}' is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)",
         text, name);
  }
  if (value.find_first_of("\r\n") != std::string_view::npos || value.find('\0') != value.npos) {
    fail("--header '{}': the value holds a line break", name);
  }
  std::string key = lower(name);
  if (key == "content-length" || key == "transfer-encoding" || key == "host") {
    fail("--header '{}': the client sets {} itself", text, name);
  }
  return {std::string(name), std::string(value)};
}

ExtraBody::ExtraBody(std::string_view json_text) {
  try {
    fields_ = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    fail("--extra-body: not valid JSON: {}", e.what());
  }
  if (!fields_.is_object()) {
    fail("--extra-body: expected a JSON object such as '{{\"temperature\": 0}}', found {}",
         fields_.type_name());
  }
  for (const auto& [key, value] : fields_.items()) {
    if (std::find(kClientFields.begin(), kClientFields.end(), key) != kClientFields.end()) {
      overrides_ = true;
    }
  }
  std::string dumped = fields_.dump();
  tail_ = "," + dumped.substr(1);  // the fields without their opening brace, then '}'
}

void ExtraBody::apply(std::string& body) const {
  if (empty()) return;
  if (overrides_) {
    // Rare, and only with this flag: re-parsing the body costs about a millisecond per MB.
    nlohmann::json j = nlohmann::json::parse(body);
    j.update(fields_, /*merge_objects=*/true);
    body = j.dump();
    return;
  }
  if (body.empty() || body.back() != '}') fail("--extra-body: the request body is not an object");
  body.pop_back();
  body += tail_;
}

}  // namespace paceline::bench
