#pragma once
// Letters and numbers that Unicode 15.0 and 16.0 added. Hugging Face tokenizers' regex engine
// (Oniguruma, Unicode 16 tables in tokenizers 0.23) puts them in \p{L} and \p{N}; PCRE2 10.42
// (Unicode 14 tables) sees unassigned code points. So that new scripts (CJK Extension H, Kawi,
// Todhri, Garay...) split as tokenizers splits them, the split regex runs on a shadow of the
// text in which each such character is a stand-in of the same category and UTF-8 length, and
// the pieces are cut from the real text at the same byte offsets.
#include <string>
#include <string_view>

namespace paceline {

// When `text` (valid UTF-8) holds a letter or number added by Unicode 15 or 16, writes to
// `shadow` the text with each replaced by a stand-in and returns true; otherwise returns false
// and leaves `shadow` alone.
bool unicode_stand_in_new_characters(std::string_view text, std::string& shadow);

}  // namespace paceline
