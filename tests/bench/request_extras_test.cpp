// What a user adds to every request: -H/--header parsing and --extra-body merged into the bodies
// the client builds, on both endpoints.
#include <gtest/gtest.h>

#include "base/error.h"
#include "bench/http_transport.h"
#include "bench/request_extras.h"

namespace paceline::bench {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HeaderFlag, SplitsAtTheFirstColonAndTrimsTheValue) {
  HttpHeader h = parse_header_flag("X-Request-Tag:  bench: run 3 ");
  EXPECT_EQ(h.name, "X-Request-Tag");
  EXPECT_EQ(h.value, "bench: run 3");
  EXPECT_EQ(parse_header_flag("X-Empty:").value, "");
}

TEST(HeaderFlag, RefusesWhatWouldBreakTheRequest) {
  EXPECT_EQ(error_of([] { parse_header_flag("Authorization Bearer k"); }),
            "--header 'Authorization Bearer k': expected 'Name: value'");
  EXPECT_EQ(error_of([] { parse_header_flag("Bad Name: v"); }),
            "--header 'Bad Name: v': 'Bad Name' is not a header name (letters, digits and "
            "!#$%&'*+-.^_`|~ only)");
  EXPECT_EQ(error_of([] { parse_header_flag("X-A: one\r\nX-B: two"); }),
            "--header 'X-A': the value holds a line break");
  EXPECT_EQ(error_of([] { parse_header_flag("content-length: 5"); }),
            "--header 'content-length: 5': the client sets content-length itself");
}

TEST(ExtraBody, MustBeOneJsonObject) {
  EXPECT_NE(error_of([] { ExtraBody("{\"temperature\": "); }).find("--extra-body: not valid JSON"),
            std::string::npos);
  EXPECT_EQ(error_of([] { ExtraBody("[1]"); }),
            "--extra-body: expected a JSON object such as '{\"temperature\": 0}', found array");
}

RequestSpec small_spec() {
  RequestSpec spec;
  spec.model = "m";
  spec.isl = 64;
  spec.osl = 8;
  spec.block_size = 64;
  spec.marker = "[rid:000000000001]\n\n";
  return spec;
}

TEST(ExtraBody, NewFieldsAreAddedToBothEndpoints) {
  HttpTransportOptions options;
  options.extra_body = ExtraBody(R"({"temperature": 0.5, "seed": 7, "chat_template_kwargs": {}})");
  for (Endpoint e : {Endpoint::kChat, Endpoint::kCompletions}) {
    options.endpoint = e;
    nlohmann::json body = nlohmann::json::parse(request_body(small_spec(), options));
    EXPECT_EQ(body["temperature"], 0.5);
    EXPECT_EQ(body["seed"], 7);
    EXPECT_TRUE(body["chat_template_kwargs"].is_object());
    EXPECT_EQ(body["max_tokens"], 8);  // the client's own fields stay
    EXPECT_EQ(body["stream"], true);
  }
}

TEST(ExtraBody, ReplacesTheClientsFieldsAndMergesObjectsKeyByKey) {
  HttpTransportOptions options;
  options.extra_body = ExtraBody(
      R"({"max_tokens": 3, "ignore_eos": false, "stream_options": {"continuous_usage_stats": true}})");
  nlohmann::json body = nlohmann::json::parse(request_body(small_spec(), options));
  EXPECT_EQ(body["max_tokens"], 3);
  EXPECT_EQ(body["max_completion_tokens"], 8);
  EXPECT_EQ(body["ignore_eos"], false);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);  // kept: objects merge
  EXPECT_EQ(body["stream_options"]["continuous_usage_stats"], true);
  EXPECT_EQ(body["messages"][0]["role"], "user");
}

}  // namespace
}  // namespace paceline::bench
