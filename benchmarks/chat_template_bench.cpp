// Chat-template rendering time per request: the Jinja interpreter on the longest fixture
// conversations of the Qwen3 template (an agentic session with tools and tool calls) and the
// Llama-3.1 one, templates parsed once as the server parses them. Single thread.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/chat_template.h"

namespace {

using Json = nlohmann::ordered_json;

const std::string kSource = PACELINE_SOURCE_DIR;

Json fixture_case(const std::string& file, const std::string& name) {
  std::ifstream in(kSource + "/tests/fixtures/" + file);
  for (const Json& c : Json::parse(in)) {
    if (c["name"] == name) return c;
  }
  throw std::runtime_error("no case " + name + " in " + file);
}

void render_case(benchmark::State& state, const char* tokenizer, const char* file, const char* name) {
  const auto chat = *paceline::ChatTemplate::from_tokenizer_folder(kSource + "/third_party/" + tokenizer);
  const Json c = fixture_case(file, name);
  const Json tools = c.contains("tools") ? c["tools"] : Json();
  paceline::ChatTemplateOptions options;
  options.add_generation_prompt = c.value("add_generation_prompt", true);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = chat.render(c["messages"], tools, options);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["messages"] = static_cast<double>(c["messages"].size());
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_RenderQwen3AgenticLong(benchmark::State& state) {
  render_case(state, "qwen3-tokenizer", "chat_template/cases.json", "agentic_long");
}
void BM_RenderLlama31ToolRoundTrip(benchmark::State& state) {
  render_case(state, "llama3_1-tokenizer", "chat_template/llama3_1/cases.json", "tool_round_trip");
}

BENCHMARK(BM_RenderQwen3AgenticLong)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RenderLlama31ToolRoundTrip)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
