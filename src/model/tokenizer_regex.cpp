#include "model/tokenizer_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/error.h"
#include "model/tokenizer_unicode.h"
#include "model/utf8.h"

namespace paceline {
namespace {

// Oniguruma's \s for Unicode text: White_Space, i.e. \t-\r, space, NEL and the Z categories.
constexpr std::string_view kWhiteSpace =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

// Per-thread match state: the match data block and a JIT stack big enough for long inputs.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);

  MatchScratch() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~MatchScratch() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

std::string onig_to_pcre2(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else if (e == 'h') {  // Oniguruma's hex digit; PCRE2's \h is horizontal space
        out += in_class ? "0-9a-fA-F" : "[0-9a-fA-F]";
      } else if (e == 'H' && !in_class) {
        out += "[^0-9a-fA-F]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    out += c;
    if (!in_class && c == '[') {
      in_class = true;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
    } else if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t end = pattern.find(":]", i + 2);  // a POSIX class such as [:alpha:]
      if (end != std::string_view::npos) {
        out.append(pattern.substr(i + 1, end + 2 - (i + 1)));
        i = end + 1;
      }
    } else if (in_class && c == ']') {
      in_class = false;
    }
  }
  return out;
}

PretokenRegex::PretokenRegex(std::string_view pattern, std::string_view where) : pattern_(pattern) {
  const std::string translated = onig_to_pcre2(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    fail("tokenizer {}: cannot compile the split regex {} (as PCRE2: {}) at offset {}: {}", where,
         pattern, translated, offset, pcre2_message(error));
  }
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = code;
}

PretokenRegex::~PretokenRegex() {
  pcre2_code_free(static_cast<pcre2_code*>(code_));
}

PretokenRegex::PretokenRegex(PretokenRegex&& other) noexcept
    : pattern_(std::move(other.pattern_)), code_(other.code_), jit_(other.jit_) {
  other.code_ = nullptr;
}

void PretokenRegex::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  auto* code = static_cast<const pcre2_code*>(code_);
  MatchScratch& s = scratch();
  std::string shadow;
  const bool stand_ins = unicode_stand_in_new_characters(text, shadow);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(stand_ins ? shadow.data() : text.data());
  size_t start = 0, gap = 0;  // text[gap, match) is unmatched text
  while (start < text.size()) {
    const int rc = jit_ ? pcre2_jit_match(code, subject, text.size(), start, 0, s.data, s.context)
                        : pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, s.data,
                                      s.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail("tokenizer: split regex {} failed: {}", pattern_, pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(s.data);
    const size_t begin = ovector[0], end = ovector[1];
    if (end == begin) {  // an empty match splits nothing; step over one character
      size_t next = begin;
      if (next >= text.size()) break;
      utf8_next(text, next);
      start = next;
      continue;
    }
    if (begin > gap) pieces.push_back(text.substr(gap, begin - gap));
    pieces.push_back(text.substr(begin, end - begin));
    gap = start = end;
  }
  if (gap < text.size()) pieces.push_back(text.substr(gap));
}

}  // namespace paceline
