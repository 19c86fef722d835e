// paceline's NFC against Hugging Face tokenizers' NFC on 3.3 million probe strings: every code
// point alone, between "e" and U+0301, before U+0316 U+0301, and every canonical decomposition.
// nfc_probe.json (from probe_nfc.py, tokenizers 0.23.2) lists the probes tokenizers changes and
// what into; every other probe must come out unchanged.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <unordered_map>

#include <fmt/format.h>
#include <utf8proc.h>
#include <nlohmann/json.hpp>

#include "model/tokenizer_normalize.h"
#include "model/utf8.h"

namespace paceline {
namespace {

std::string code_points(const std::string& s) {
  std::string out;
  for (size_t pos = 0; pos < s.size();)
    out += fmt::format("U+{:04X} ", uint32_t{utf8_next(s, pos)});
  return out;
}

std::string canonical_decomposition(const std::string& s) {
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                              static_cast<utf8proc_ssize_t>(s.size()), &out,
                              static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

TEST(NfcProbe, MatchesTokenizersOnEveryProbe) {
  std::ifstream in(std::string(PACELINE_SOURCE_DIR) + "/tests/tokenizer/nfc_probe.json");
  ASSERT_TRUE(in) << "tests/tokenizer/nfc_probe.json is missing";
  const nlohmann::json probe = nlohmann::json::parse(in);
  std::unordered_map<std::string, std::string> changed;
  for (const auto& pair : probe.at("changed")) changed.emplace(pair[0], pair[1]);

  int probes = 0, failures = 0;
  auto check = [&](const std::string& s) {
    ++probes;
    std::string storage;
    const std::string ours(nfc_normalize(s, storage));
    const auto it = changed.find(s);
    const std::string& expected = it == changed.end() ? s : it->second;
    if (ours != expected && ++failures <= 10) {
      ADD_FAILURE() << "NFC of " << code_points(s) << "\n  tokenizers: " << code_points(expected)
                    << "\n  paceline:   " << code_points(ours);
    }
  };
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string x;
    utf8_append(cp, x);
    check(x);
    check("e" + x + "\u0301");
    check(x + "\u0316\u0301");
    if (const std::string d = canonical_decomposition(x); d != x) check(d);
  }
  EXPECT_GT(probes, 3000000);
  EXPECT_EQ(failures, 0) << "of " << probes << " probes";
}

}  // namespace
}  // namespace paceline
