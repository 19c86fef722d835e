// Loading that tells the truth (issue 16, item 2), through the real binary: a folder without
// weights is an error that says how to ask for dummy weights; a tokenizer that does not fit the
// model (more tokens than the vocabulary, or an eos_token_id that is an ordinary word to it) is an
// error at startup; an eos_token_id outside the vocabulary is a warning, as Transformers loads it.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../bench_e2e/bench_process.h"
#include "../serve/server_process.h"
#include "model/tokenizer.h"
#include "model_folder.h"

namespace paceline::testing {
namespace {

using ::testing::HasSubstr;

constexpr std::chrono::seconds kStartupLimit(60);

ProcessResult run(const ModelFolder& folder, const std::vector<std::string>& args) {
  return run_paceline(args, folder.path() / "stdout.txt", {}, {}, kStartupLimit);
}

TEST(Loading, AutoOnAFolderWithoutWeightsSaysHowToAskForDummyWeights) {
  ModelFolder folder("no-weights");
  folder.write_config("configs/models/qwen3-tiny.json");
  ProcessResult r = run(folder, {"serve", "--model", folder.str(), "--port", "0"});
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.errors, HasSubstr("the folder has no weights"));
  EXPECT_THAT(r.errors, HasSubstr("pass --load-format dummy"));
  // The advice works: the same folder serves with dummy weights.
  ServerProcess server({"--load-format", "dummy"}, folder.str());
  EXPECT_EQ(http(server.port(), "GET", "/health").status, 200);
}

TEST(Loading, VocabularySmallerThanTheTokenizersIsAnErrorAtStartup) {
  ModelFolder scratch("small-vocab");
  // 512 tokens of vocabulary, real weights, and (by default) the Qwen3 tokenizer's 151,669 ids.
  const std::string model = (kSourceDir / "tests/fixtures/models/qwen3-tiny-random").string();
  ProcessResult r = run(scratch, {"serve", "--model", model, "--port", "0"});
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.errors, HasSubstr("has 151669 tokens but the model qwen3-tiny-random only 512"));
  EXPECT_THAT(r.errors, HasSubstr("--tokenizer"));
}

TEST(Loading, EosTokenThatIsAnOrdinaryWordToTheTokenizerIsAnErrorAtStartup) {
  const Tokenizer qwen3 = Tokenizer::from_file((kSourceDir / "third_party/qwen3-tokenizer").string());
  const std::vector<int32_t> hello = qwen3.encode("Hello");
  ASSERT_EQ(hello.size(), 1u);
  ModelFolder folder("eos-word");
  folder.write_config("configs/models/qwen3-tiny.json", {{"eos_token_id", hello[0]}});
  ProcessResult r = run(folder, {"generate", "--model", (folder.path() / "config.json").string(), "--device",
                                 "null", "--max-tokens", "1", "-p", "hi"});
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.errors, HasSubstr("eos_token_id " + std::to_string(hello[0]) +
                                  ", which the tokenizer (" ));
  EXPECT_THAT(r.errors, HasSubstr("reads as the ordinary token 'Hello'"));
}

TEST(Loading, EosTokenIdOutsideTheVocabularyIsAWarning) {
  ModelFolder folder("eos-outside");
  folder.write_config("configs/models/qwen3-tiny.json", {{"eos_token_id", {151645, 160000}}});
  ProcessResult r = run(folder, {"generate", "--model", (folder.path() / "config.json").string(), "--device",
                                 "null", "--max-tokens", "2", "-p", "hi"});
  EXPECT_EQ(r.status, 0) << r.errors;
  EXPECT_THAT(r.errors, HasSubstr("'eos_token_id' holds 160000, outside the vocabulary (vocab_size=151936)"));
  EXPECT_THAT(r.output, HasSubstr("finish_reason=length"));
}

}  // namespace
}  // namespace paceline::testing
