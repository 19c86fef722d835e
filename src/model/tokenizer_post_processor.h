#pragma once
// The special tokens a Hugging Face tokenizer adds around one sequence when asked to
// (`encode(text, add_special_tokens=True)`): its tokenizer.json's "post_processor". Llama-3's
// TemplateProcessing puts <|begin_of_text|> first; Qwen3's ByteLevel adds nothing. paceline's
// Tokenizer::encode never adds them (the chat template writes them itself); /tokenize and
// /detokenize need them to answer as vLLM does.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline {

struct SpecialTokensAround {
  std::vector<int32_t> prefix;  // before the sequence's tokens
  std::vector<int32_t> suffix;  // after them
};

// From a tokenizer.json document: null and ByteLevel add nothing; TemplateProcessing's "single"
// template gives its SpecialToken pieces before and after sequence A; BertProcessing and
// RobertaProcessing give cls first and sep last; Sequence combines its processors. Throws
// paceline::Error naming `where` and the processor's type for any other kind.
SpecialTokensAround special_tokens_around(const nlohmann::json& tokenizer_json,
                                          const std::string& where);
// The same for a tokenizer.json file (or a folder holding one).
SpecialTokensAround special_tokens_around_file(const std::string& tokenizer_json_path);

}  // namespace paceline
