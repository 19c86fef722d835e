#include "model/tokenizer_post_processor.h"

#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace paceline {

// Helpers named for this file alone: the module compiles as a unity build.
namespace {

// The ids of a TemplateProcessing special token: its "special_tokens" entry's "ids".
std::vector<int32_t> template_token_ids(const nlohmann::json& processor, const std::string& name,
                                        const std::string& where) {
  const nlohmann::json* specials =
      processor.contains("special_tokens") ? &processor["special_tokens"] : nullptr;
  if (specials == nullptr || !specials->is_object() || !specials->contains(name)) {
    fail("{}: post_processor: template token '{}' has no entry in special_tokens", where, name);
  }
  const nlohmann::json& ids = (*specials)[name].value("ids", nlohmann::json::array());
  std::vector<int32_t> out;
  for (const nlohmann::json& id : ids) {
    if (!id.is_number_integer())
      fail("{}: post_processor: special_tokens.{}.ids holds a non-integer", where, name);
    out.push_back(id.get<int32_t>());
  }
  return out;
}

void add_template(const nlohmann::json& processor, const std::string& where,
                  SpecialTokensAround& out) {
  const nlohmann::json& single = processor.value("single", nlohmann::json::array());
  if (!single.is_array())
    fail("{}: post_processor: TemplateProcessing.single is not an array", where);
  bool after_sequence = false;
  for (const nlohmann::json& piece : single) {
    if (piece.contains("Sequence")) {
      after_sequence = true;
      continue;
    }
    if (!piece.contains("SpecialToken"))
      fail("{}: post_processor: unknown piece {}", where, piece.dump());
    const std::string name = piece["SpecialToken"].value("id", "");
    std::vector<int32_t> ids = template_token_ids(processor, name, where);
    auto& side = after_sequence ? out.suffix : out.prefix;
    side.insert(side.end(), ids.begin(), ids.end());
  }
}

// Bert and Roberta processors name their tokens as ["[CLS]", 101].
int32_t pair_id(const nlohmann::json& processor, const char* key, const std::string& where) {
  const nlohmann::json* pair = processor.contains(key) ? &processor[key] : nullptr;
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 ||
      !(*pair)[1].is_number_integer()) {
    fail("{}: post_processor: '{}' is not a [token, id] pair", where, key);
  }
  return (*pair)[1].get<int32_t>();
}

void add_processor(const nlohmann::json& processor, const std::string& where,
                   SpecialTokensAround& out) {
  if (processor.is_null()) return;
  const std::string type = processor.value("type", "");
  if (type == "ByteLevel") return;
  if (type == "TemplateProcessing") return add_template(processor, where, out);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    out.prefix.push_back(pair_id(processor, "cls", where));
    out.suffix.insert(out.suffix.begin(), pair_id(processor, "sep", where));
    return;
  }
  if (type == "Sequence") {
    for (const nlohmann::json& p : processor.value("processors", nlohmann::json::array()))
      add_processor(p, where, out);
    return;
  }
  fail("{}: post_processor of type '{}' is not supported (add_special_tokens cannot be applied)",
       where, type);
}

}  // namespace

SpecialTokensAround special_tokens_around(const nlohmann::json& tokenizer_json,
                                          const std::string& where) {
  SpecialTokensAround out;
  if (tokenizer_json.is_object() && tokenizer_json.contains("post_processor")) {
    add_processor(tokenizer_json["post_processor"], where, out);
  }
  return out;
}

SpecialTokensAround special_tokens_around_file(const std::string& tokenizer_json_path) {
  std::filesystem::path path(tokenizer_json_path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) path /= "tokenizer.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("tokenizer: cannot read {}", path.string());
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) fail("{}: not valid JSON", path.string());
  return special_tokens_around(doc, path.string());
}

}  // namespace paceline
