// parallel_tool_calls: false keeps the first tool call the model wrote and drops the others, in
// the JSON body and in the stream. The model's text goes straight into OpenAiStream::on_event,
// as the engine would deliver it (the engine is built but never started).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "engine/engine.h"
#include "exec/null_executor.h"
#include "model/tokenizer.h"
#include "server/openai_stream.h"

namespace paceline {
namespace {

using nlohmann::json;

const char* kTwoCalls =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

struct RecordingWriter final : ResponseWriter {
  std::string body;
  std::vector<std::string> events;
  void send(int, const std::string&, std::string b,
            const std::map<std::string, std::string>&) override {
    body = std::move(b);
  }
  void start_sse(const std::map<std::string, std::string>&) override {}
  void sse_event(const std::string& payload) override { events.push_back(payload); }
  void end() override {}
  void on_disconnect(std::function<void()>) override {}
  bool closed() const override { return false; }
};

class ParallelToolCalls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokenizer_ = new Tokenizer(
        Tokenizer::from_file(std::string(PACELINE_SOURCE_DIR) + "/third_party/qwen3-tokenizer"));
  }
  static void TearDownTestSuite() { delete tokenizer_; }

  // The tool calls the response sent, by name, in order.
  std::vector<std::string> answer(bool stream, bool parallel) {
    const std::vector<int64_t> eos = {151645};
    SchedulerConfig config;
    config.max_model_len = 256;
    Engine engine(
        config, std::make_unique<NullExecutor>(KvCacheShape{64, 16}, tokenizer_->vocab_size(), eos),
        clock_);
    auto writer = std::make_shared<RecordingWriter>();
    OpenAiStreamOptions options;
    options.stream = stream;
    options.parse_tool_calls = true;
    options.parallel_tool_calls = parallel;
    auto s = std::make_shared<OpenAiStream>(options, ResponseMeta{"chatcmpl-x", "m", 0},
                                            *tokenizer_, writer, engine);
    TokenEvent ev;
    ev.token_ids = tokenizer_->encode(kTwoCalls);
    ev.finished = true;
    ev.finish_reason = FinishReason::kStop;
    s->on_event(0, ev);
    std::vector<std::string> names;
    if (!stream) {
      const json body = json::parse(writer->body);
      for (const json& call : body["choices"][0]["message"]["tool_calls"]) {
        names.push_back(call["function"]["name"]);
      }
      return names;
    }
    for (const std::string& e : writer->events) {
      if (e == "[DONE]") continue;
      json chunk = json::parse(e);
      if (chunk["choices"].empty()) continue;
      for (const json& call : chunk["choices"][0]["delta"].value("tool_calls", json::array())) {
        names.push_back(call["function"]["name"]);
      }
    }
    return names;
  }

  SteadyClock clock_;
  static Tokenizer* tokenizer_;
};
Tokenizer* ParallelToolCalls::tokenizer_ = nullptr;

TEST_F(ParallelToolCalls, TrueKeepsEveryCall) {
  const std::vector<std::string> both = {"get_weather", "get_time"};
  EXPECT_EQ(answer(/*stream=*/false, /*parallel=*/true), both);
  EXPECT_EQ(answer(/*stream=*/true, /*parallel=*/true), both);
}

TEST_F(ParallelToolCalls, FalseKeepsOnlyTheFirst) {
  const std::vector<std::string> first = {"get_weather"};
  EXPECT_EQ(answer(/*stream=*/false, /*parallel=*/false), first);
  EXPECT_EQ(answer(/*stream=*/true, /*parallel=*/false), first);
}

}  // namespace
}  // namespace paceline
