#pragma once
// "Well-formed enough" for the reports: every element that is opened is closed in order (void
// elements and self-closing tags aside), and nothing points outside the page.
#include <regex>
#include <string>
#include <vector>

namespace paceline::bench::test_util {

// Empty when the tags nest; else what went wrong first.
inline std::string tag_nesting_error(const std::string& html) {
  static const std::regex tag(R"(<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>)");
  static const std::vector<std::string> kVoid = {"meta", "br", "hr", "img", "input", "link"};
  std::vector<std::string> open;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), tag); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    std::string name = m[2].str();
    if (m[3].length() > 0 || std::find(kVoid.begin(), kVoid.end(), name) != kVoid.end()) continue;
    if (m[1].length() == 0) {
      open.push_back(name);
    } else if (open.empty() || open.back() != name) {
      return "</" + name + "> closes <" + (open.empty() ? std::string("nothing") : open.back()) +
             "> at offset " + std::to_string(m.position());
    } else {
      open.pop_back();
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

// Whatever would make a browser fetch something: links to other sites, scripts, stylesheets.
inline std::vector<std::string> external_references(const std::string& html) {
  std::vector<std::string> found;
  for (const char* bad :
       {"href=\"http", "src=", "<script", "<link", "@import", "url(", "xlink:href=\"http"}) {
    if (html.find(bad) != std::string::npos) found.push_back(bad);
  }
  return found;
}

inline size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace paceline::bench::test_util
