#pragma once
// The pre-tokenizer's split regex (Split with behavior "Isolated"), run by PCRE2 with UTF and
// Unicode properties, JIT compiled. tokenizer.json regexes are written for Oniguruma, which
// Hugging Face tokenizers uses; onig_to_pcre2 bridges what \s means, and letters and numbers newer
// than PCRE2's Unicode tables get stand-ins (tokenizer_unicode.h).
#include <string>
#include <string_view>
#include <vector>

namespace paceline {

// Rewrites an Oniguruma pattern for PCRE2: \s and \S become explicit classes of the Unicode
// White_Space characters, which is Oniguruma's \s (PCRE2's \s also matches U+180E); \h is
// Oniguruma's hex digit.
std::string onig_to_pcre2(std::string_view pattern);

class PretokenRegex {
 public:
  // Compiles an Oniguruma-dialect `pattern`; `where` names the tokenizer file in errors.
  PretokenRegex(std::string_view pattern, std::string_view where);
  ~PretokenRegex();
  PretokenRegex(PretokenRegex&& other) noexcept;
  PretokenRegex& operator=(PretokenRegex&&) = delete;
  PretokenRegex(const PretokenRegex&) = delete;
  PretokenRegex& operator=(const PretokenRegex&) = delete;

  // Appends to `pieces` each match and each stretch between matches of `text` (valid UTF-8),
  // in order, so that the pieces concatenate back to `text`. Safe to call from many threads.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
};

}  // namespace paceline
