#include "server/openai_logprobs.h"

#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "model/utf8.h"
#include "server/openai_response.h"

namespace paceline {
namespace {

constexpr float kMinLogprob = -9999.0f;

void append_logprob(std::string& out, float logprob) {
  const float v = std::isnan(logprob) || logprob < kMinLogprob ? kMinLogprob : logprob;
  // Shortest text that reads back as the same float; a whole number gets ".0" to stay a float.
  std::string text = fmt::format("{}", v);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  out += text;
}

void append_bytes(std::string& out, std::string_view bytes) {
  out += '[';
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", static_cast<unsigned char>(bytes[i]));
  }
  out += ']';
}

// {"token":..,"logprob":..,"bytes":[..]  (left open for top_logprobs)
void append_chat_token(std::string& out, const TokenLogprob& t, const TokenBytes& bytes) {
  const std::string b = bytes(t.token);
  out += R"({"token":)";
  append_json_string(out, b);
  out += R"(,"logprob":)";
  append_logprob(out, t.logprob);
  out += R"(,"bytes":)";
  append_bytes(out, b);
}

// What Python's len() gives for the token's text: code points, invalid bytes as one U+FFFD each.
int64_t text_length(const std::string& bytes) {
  const std::string text = utf8_is_valid(bytes) ? bytes : utf8_repair(bytes);
  int64_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string chat_logprobs_json(std::span<const RowLogprobs> rows, const TokenBytes& bytes) {
  std::string out = R"({"content":[)";
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) out += ',';
    append_chat_token(out, rows[i].chosen, bytes);
    out += R"(,"top_logprobs":[)";
    for (size_t j = 0; j < rows[i].top.size(); ++j) {
      if (j > 0) out += ',';
      append_chat_token(out, rows[i].top[j], bytes);
      out += '}';
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

std::string completion_logprobs_json(std::span<const CompletionToken> tokens,
                                     const TokenBytes& bytes, int64_t first_offset) {
  std::string offsets, logprobs, texts, tops;
  int64_t offset = first_offset;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const CompletionToken& t = tokens[i];
    const char* sep = i > 0 ? "," : "";
    const std::string b = bytes(t.token);
    fmt::format_to(std::back_inserter(offsets), "{}{}", sep, offset);
    offset += text_length(b);
    texts += sep;
    append_json_string(texts, b);
    logprobs += sep;
    tops += sep;
    if (!t.logprobs) {
      logprobs += "null";
      tops += "null";
      continue;
    }
    append_logprob(logprobs, t.logprobs->chosen.logprob);
    // A JSON object keyed by token text: the chosen token first, then the highest; a text met
    // again (the chosen token among the highest) is left out, as a dict would keep it once.
    std::vector<std::string> keys;
    tops += '{';
    auto add = [&](const TokenLogprob& e) {
      std::string key = bytes(e.token);
      if (!utf8_is_valid(key)) key = utf8_repair(key);
      for (const auto& k : keys) {
        if (k == key) return;
      }
      if (!keys.empty()) tops += ',';
      append_json_string(tops, key);
      tops += ':';
      append_logprob(tops, e.logprob);
      keys.push_back(std::move(key));
    };
    add(t.logprobs->chosen);
    for (const TokenLogprob& e : t.logprobs->top) add(e);
    tops += '}';
  }
  return R"({"text_offset":[)" + offsets + R"(],"token_logprobs":[)" + logprobs +
         R"(],"tokens":[)" + texts + R"(],"top_logprobs":[)" + tops + "]}";
}

int64_t completion_text_length(std::span<const CompletionToken> tokens, const TokenBytes& bytes) {
  int64_t n = 0;
  for (const CompletionToken& t : tokens) n += text_length(bytes(t.token));
  return n;
}

}  // namespace paceline
