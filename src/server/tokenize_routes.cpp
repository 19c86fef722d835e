// POST /tokenize and POST /detokenize, vLLM's shapes (server/tokenize_request.h). Both run on
// RequestWorkers: a 30 MB prompt takes seconds to tokenize, which the I/O thread must not spend.
#include <fmt/format.h>

#include "server/api_guard.h"
#include "server/openai_service.h"
#include "server/tokenize_request.h"

namespace paceline {

void OpenAiService::install_tokenize_routes(HttpServer& server) {
  server.route("POST", "/tokenize",
               [this](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
                 offload(req, std::move(w), &OpenAiService::tokenize);
               });
  server.route("POST", "/detokenize",
               [this](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
                 offload(req, std::move(w), &OpenAiService::detokenize);
               });
}

const SpecialTokensAround& OpenAiService::special_tokens_around() const {
  std::call_once(special_once_, [this] {
    try {
      special_ = special_tokens_around_file(tokenizer_.source());
    } catch (const Error& e) {
      special_error_ = e.what();
    }
  });
  if (!special_) {
    throw_api_error(invalid_request_error(
        fmt::format("add_special_tokens cannot be applied: {}; send \"add_special_tokens\": false",
                    special_error_),
        "add_special_tokens"));
  }
  return *special_;
}

void OpenAiService::tokenize(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  guarded(req, *w, [&] {
    TokenizeRequest r = parse_tokenize_request(req.body, req.header("content-type"));
    check_model(r.model);
    const std::string text = r.prompt ? *r.prompt : render_chat(*r.chat, r.add_generation_prompt);
    std::vector<int32_t> tokens;
    if (r.add_special_tokens) {
      const SpecialTokensAround& special = special_tokens_around();
      tokens = special.prefix;
      std::vector<int32_t> body = tokenizer_.encode(text);
      tokens.insert(tokens.end(), body.begin(), body.end());
      tokens.insert(tokens.end(), special.suffix.begin(), special.suffix.end());
    } else {
      tokens = tokenizer_.encode(text);
    }
    std::vector<std::string> strs;
    if (r.return_token_strs) {
      strs.reserve(tokens.size());
      for (int32_t id : tokens) strs.push_back(tokenizer_.id_to_token(id));
    }
    w->send(200, "application/json",
            tokenize_response_json(tokens, options_.max_model_len,
                                   r.return_token_strs ? &strs : nullptr));
  });
}

void OpenAiService::detokenize(const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
  guarded(req, *w, [&] {
    DetokenizeRequest r = parse_detokenize_request(req.body, req.header("content-type"));
    check_model(r.model);
    for (size_t i = 0; i < r.tokens.size(); ++i) {
      if (r.tokens[i] >= tokenizer_.vocab_size()) {
        throw_api_error(invalid_request_error(
            fmt::format("Token id {} is out of vocabulary (the tokenizer has {} ids).", r.tokens[i],
                        tokenizer_.vocab_size()),
            fmt::format("tokens[{}]", i)));
      }
    }
    w->send(200, "application/json", detokenize_response_json(tokenizer_.decode(r.tokens)));
  });
}

}  // namespace paceline
