// logit_bias, min_p and the three penalties as both endpoints read them: vLLM's and OpenAI's
// ranges, logit_bias keys that are token ids, and a 400 naming the field (and the bad key).
#include <string>

#include <gtest/gtest.h>

#include "server/openai_error.h"
#include "server/openai_request.h"

namespace paceline {
namespace {

constexpr const char* kJson = "application/json";

SamplingParams chat(const std::string& extra) {
  return parse_chat_completion_request(
             R"({"messages":[{"role":"user","content":"hi"}])" + extra + "}", kJson)
      .options.sampling;
}

SamplingParams completion(const std::string& extra) {
  return parse_completion_request(R"({"prompt":"hi")" + extra + "}", kJson).options.sampling;
}

ApiError error_of(const std::string& extra) {
  try {
    chat(extra);
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << "no error for " << extra;
  return {};
}

TEST(LogitsFields, AbsentFieldsAreNeutral) {
  SamplingParams p = chat("");
  EXPECT_EQ(p.min_p, 0.0);
  EXPECT_EQ(p.presence_penalty, 0.0);
  EXPECT_EQ(p.frequency_penalty, 0.0);
  EXPECT_EQ(p.repetition_penalty, 1.0);
  EXPECT_EQ(p.logit_bias, nullptr);
  EXPECT_FALSE(p.adjusts_logits());
  EXPECT_FALSE(
      chat(R"(,"logit_bias":{},"presence_penalty":0,"repetition_penalty":1)").adjusts_logits());
}

TEST(LogitsFields, EveryFieldIsReadOnBothEndpoints) {
  const std::string fields =
      R"(,"min_p":0.1,"presence_penalty":1.5,"frequency_penalty":-0.5,"repetition_penalty":1.2,)"
      R"("logit_bias":{"50256":-100,"7":2.5,"11":100})";
  for (const SamplingParams& p : {chat(fields), completion(fields)}) {
    EXPECT_EQ(p.min_p, 0.1);
    EXPECT_EQ(p.presence_penalty, 1.5);
    EXPECT_EQ(p.frequency_penalty, -0.5);
    EXPECT_EQ(p.repetition_penalty, 1.2);
    EXPECT_TRUE(p.has_penalties());
    ASSERT_NE(p.logit_bias, nullptr);
    ASSERT_EQ(p.logit_bias->size(), 3u);  // sorted by token
    EXPECT_EQ((*p.logit_bias)[0].token, 7);
    EXPECT_EQ((*p.logit_bias)[0].bias, 2.5f);
    EXPECT_EQ((*p.logit_bias)[1].token, 11);
    EXPECT_EQ((*p.logit_bias)[2].token, 50256);
    EXPECT_EQ((*p.logit_bias)[2].bias, -100.0f);
  }
}

TEST(LogitsFields, OutOfRangeValuesAre400NamingTheField) {
  for (const auto& [extra, param] : std::vector<std::pair<std::string, std::string>>{
           {R"(,"min_p":-0.1)", "min_p"},
           {R"(,"min_p":1.5)", "min_p"},
           {R"(,"presence_penalty":2.5)", "presence_penalty"},
           {R"(,"frequency_penalty":-2.01)", "frequency_penalty"},
           {R"(,"repetition_penalty":0)", "repetition_penalty"},
           {R"(,"repetition_penalty":-1)", "repetition_penalty"},
           {R"(,"repetition_penalty":1e-300)", "repetition_penalty"},  // 0 as a float
           {R"(,"repetition_penalty":1e300)", "repetition_penalty"},
           {R"(,"presence_penalty":"high")", "presence_penalty"},
           {R"(,"logit_bias":[1,2])", "logit_bias"},
           {R"(,"logit_bias":{"5":100.5})", "logit_bias"},
           {R"(,"logit_bias":{"5":"up"})", "logit_bias"},
       }) {
    ApiError e = error_of(extra);
    EXPECT_EQ(e.status, 400) << extra;
    EXPECT_EQ(e.param, param) << extra;
  }
  EXPECT_NE(error_of(R"(,"repetition_penalty":0)").message.find("[1e-06, 1000000]"),
            std::string::npos)
      << error_of(R"(,"repetition_penalty":0)").message;
  EXPECT_EQ(chat(R"(,"repetition_penalty":1e6)").repetition_penalty, 1e6);
  EXPECT_NE(error_of(R"(,"presence_penalty":3)").message.find("[-2, 2]"), std::string::npos);
}

TEST(LogitsFields, BadLogitBiasKeysAreNamed) {
  for (const std::string key : {"abc", "-1", "1.5", "", "99999999999", " 7"}) {
    ApiError e = error_of(R"(,"logit_bias":{")" + key + R"(":1})");
    EXPECT_EQ(e.status, 400) << key;
    EXPECT_EQ(e.param, "logit_bias") << key;
    EXPECT_NE(e.message.find("'" + key + "'"), std::string::npos) << e.message;
  }
  // Two spellings of one token.
  EXPECT_NE(error_of(R"(,"logit_bias":{"7":1,"07":2})").message.find("twice"), std::string::npos);
}

TEST(LogitsFields, LogitBiasKeysOutsideTheVocabularyAre400) {
  SamplingParams p = chat(R"(,"logit_bias":{"151935":1,"151936":1})");
  try {
    check_logit_bias(p, 151936);
    ADD_FAILURE() << "no error";
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().param, "logit_bias");
    EXPECT_NE(e.error().message.find("'151936'"), std::string::npos) << e.error().message;
  }
  EXPECT_NO_THROW(check_logit_bias(chat(R"(,"logit_bias":{"151935":1})"), 151936));
}

}  // namespace
}  // namespace paceline
