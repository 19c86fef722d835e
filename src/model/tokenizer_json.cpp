#include "model/tokenizer_json.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace paceline {
namespace {

using nlohmann::json;

// The GPT-2 split regex that ByteLevel applies when its use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string type_of(const json& node) {
  return node.is_object() && node.contains("type") && node["type"].is_string()
             ? node["type"].get<std::string>()
             : std::string();
}

bool flag(const json& node, const char* key, bool fallback) {
  return node.contains(key) && node[key].is_boolean() ? node[key].get<bool>() : fallback;
}

bool empty_or_null(const json& node, const char* key) {
  return !node.contains(key) || node[key].is_null() ||
         (node[key].is_string() && node[key].get<std::string>().empty());
}

// A Split pattern {"String": s} matches s literally.
std::string escape_literal(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c))) {
      out += '\\';
    }
    out += c;
  }
  return out;
}

struct Reader {
  const std::string& where;
  TokenizerSpec spec;
  bool byte_level = false;

  void normalizer(const json& node) {
    const std::string type = type_of(node);
    if (node.is_null()) return;
    if (type == "NFC") {
      spec.nfc = true;
    } else if (type == "Sequence" && node.contains("normalizers")) {
      for (const json& child : node["normalizers"]) normalizer(child);
    } else {
      fail("tokenizer {}: normalizer '{}' is not supported (only NFC)", where, type);
    }
  }

  void pre_tokenizer(const json& node) {
    const std::string type = type_of(node);
    if (type == "Sequence" && node.contains("pretokenizers")) {
      for (const json& child : node["pretokenizers"]) pre_tokenizer(child);
    } else if (type == "Split") {
      if (byte_level) fail("tokenizer {}: a Split after ByteLevel is not supported", where);
      const json& pattern = node.at("pattern");
      if (pattern.contains("Regex")) {
        spec.split_patterns.push_back(pattern["Regex"].get<std::string>());
      } else if (pattern.contains("String")) {
        spec.split_patterns.push_back(escape_literal(pattern["String"].get<std::string>()));
      } else {
        fail("tokenizer {}: Split pattern has neither Regex nor String", where);
      }
      const std::string behavior = node.value("behavior", "");
      if (behavior != "Isolated" || flag(node, "invert", false)) {
        fail("tokenizer {}: Split behavior '{}' (invert {}) is not supported (only Isolated)",
             where, behavior, flag(node, "invert", false));
      }
    } else if (type == "ByteLevel") {
      if (flag(node, "add_prefix_space", false)) {
        fail("tokenizer {}: ByteLevel add_prefix_space=true is not supported", where);
      }
      if (flag(node, "use_regex", true)) spec.split_patterns.push_back(kGpt2Pattern);
      byte_level = true;
    } else {
      fail("tokenizer {}: pre_tokenizer '{}' is not supported (only Split and ByteLevel)", where,
           node.is_null() ? "null" : type);
    }
  }

  void model(const json& node) {
    const std::string type = type_of(node);
    if (!type.empty() && type != "BPE") {
      fail("tokenizer {}: model type '{}' is not supported (only BPE)", where, type);
    }
    if (node.contains("dropout") && !node["dropout"].is_null() &&
        node["dropout"].get<double>() != 0) {
      fail("tokenizer {}: BPE dropout is not supported", where);
    }
    if (flag(node, "byte_fallback", false)) {
      fail("tokenizer {}: BPE byte_fallback is not supported (byte-level BPE needs none)", where);
    }
    if (!empty_or_null(node, "continuing_subword_prefix") ||
        !empty_or_null(node, "end_of_word_suffix")) {
      fail("tokenizer {}: BPE subword prefixes and suffixes are not supported", where);
    }
    spec.ignore_merges = flag(node, "ignore_merges", false);
    if (node.contains("unk_token") && node["unk_token"].is_string()) {
      spec.unk_token = node["unk_token"].get<std::string>();
    }
    const json& vocab = node.at("vocab");
    if (!vocab.is_object()) fail("tokenizer {}: model.vocab is not an object", where);
    spec.vocab.reserve(vocab.size());
    for (const auto& [token, id] : vocab.items()) spec.vocab.emplace_back(token, id.get<int32_t>());
    const json& merges = node.at("merges");
    spec.merges.reserve(merges.size());
    for (const json& merge : merges) {
      if (merge.is_array() && merge.size() == 2) {  // ["a", "b"] (tokenizers >= 0.20)
        spec.merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
        continue;
      }
      const std::string text = merge.get<std::string>();  // "a b"
      const size_t space = text.find(' ');
      if (space == std::string::npos) {
        fail("tokenizer {}: merge '{}' is not two tokens separated by a space", where, text);
      }
      spec.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    }
  }

  void added_tokens(const json& node) {
    if (node.is_null()) return;
    for (const json& entry : node) {
      AddedToken token;
      token.content = entry.at("content").get<std::string>();
      token.id = entry.at("id").get<int32_t>();
      token.special = flag(entry, "special", false);
      token.normalized = flag(entry, "normalized", !token.special);
      token.lstrip = flag(entry, "lstrip", false);
      token.rstrip = flag(entry, "rstrip", false);
      token.single_word = flag(entry, "single_word", false);
      spec.added_tokens.push_back(std::move(token));
    }
  }
};

}  // namespace

TokenizerSpec tokenizer_spec_from_json(const std::string& json_text, const std::string& where) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    fail("tokenizer {}: not valid JSON: {}", where, e.what());
  }
  if (!root.is_object() || !root.contains("model")) {
    fail("tokenizer {}: not a tokenizer.json (no \"model\" object)", where);
  }
  Reader reader{where, {}};
  try {
    reader.normalizer(root.value("normalizer", json()));
    reader.pre_tokenizer(root.value("pre_tokenizer", json()));
    reader.model(root["model"]);
    reader.added_tokens(root.value("added_tokens", json()));
    const std::string decoder = type_of(root.value("decoder", json()));
    if (decoder != "ByteLevel") {
      fail("tokenizer {}: decoder '{}' is not supported (only ByteLevel)", where, decoder);
    }
  } catch (const json::exception& e) {
    fail("tokenizer {}: unexpected structure: {}", where, e.what());
  }
  if (!reader.byte_level) fail("tokenizer {}: no ByteLevel pre_tokenizer", where);
  return std::move(reader.spec);
}

}  // namespace paceline
