#include "sched/request.h"

#include <gtest/gtest.h>

namespace paceline {
namespace {

Request make(RequestParams params) {
  return Request(1, {10, 11, 12}, std::move(params), 0);
}

TEST(Request, KeepsPromptAndOutputInOneTokenList) {
  RequestParams p;
  p.max_tokens = 4;
  Request r = make(p);
  r.append_output(20);
  EXPECT_EQ(r.num_tokens(), 4);
  EXPECT_EQ(std::vector<int32_t>(r.prompt().begin(), r.prompt().end()),
            (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(std::vector<int32_t>(r.output().begin(), r.output().end()), (std::vector<int32_t>{20}));
}

TEST(RequestStop, MaxTokensEndsWithLength) {
  RequestParams p;
  p.max_tokens = 2;
  Request r = make(p);
  EXPECT_FALSE(r.append_output(5));
  EXPECT_TRUE(r.append_output(5));
  EXPECT_EQ(r.status, RequestStatus::kFinished);
  EXPECT_EQ(r.finish_reason, FinishReason::kLength);
}

TEST(RequestStop, EosEndsWithStopAndIsKept) {
  RequestParams p;
  p.eos_token_ids = {2};
  Request r = make(p);
  EXPECT_TRUE(r.append_output(2));
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r.stop_token_id, 2);
  EXPECT_EQ(r.num_output_tokens(), 1);
}

TEST(RequestStop, IgnoreEosRunsOnToMaxTokens) {
  RequestParams p;
  p.max_tokens = 3;
  p.eos_token_ids = {2};
  p.ignore_eos = true;
  Request r = make(p);
  EXPECT_FALSE(r.append_output(2));
  EXPECT_FALSE(r.append_output(2));
  EXPECT_TRUE(r.append_output(2));
  EXPECT_EQ(r.finish_reason, FinishReason::kLength);
}

TEST(RequestStop, StopTokenIdsStopEvenWithIgnoreEos) {
  RequestParams p;
  p.ignore_eos = true;
  p.stop_token_ids = {9};
  Request r = make(p);
  EXPECT_FALSE(r.append_output(8));
  EXPECT_TRUE(r.append_output(9));
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r.stop_token_id, 9);
}

TEST(RequestStop, MinTokensHoldsOffEosAndStopTokens) {
  RequestParams p;
  p.min_tokens = 3;
  p.eos_token_ids = {2};
  p.stop_token_ids = {9};
  Request r = make(p);
  EXPECT_FALSE(r.append_output(2));
  EXPECT_FALSE(r.append_output(9));
  EXPECT_TRUE(r.append_output(2));  // the third output token may stop it
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
}

TEST(RequestStop, AStopTokenAtMaxTokensCountsAsStop) {
  RequestParams p;
  p.max_tokens = 1;
  p.eos_token_ids = {2};
  Request r = make(p);
  EXPECT_TRUE(r.append_output(2));
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
}

TEST(Request, UsageReportsPromptCompletionAndCachedTokens) {
  Request r = make({});
  r.num_cached_tokens = 2;
  r.append_output(5);
  Usage u = r.usage();
  EXPECT_EQ(u.prompt_tokens, 3);
  EXPECT_EQ(u.completion_tokens, 1);
  EXPECT_EQ(u.cached_tokens, 2);
}

TEST(Request, NamesItsStatesAndReasons) {
  EXPECT_EQ(finish_reason_name(FinishReason::kStop), "stop");
  EXPECT_EQ(finish_reason_name(FinishReason::kLength), "length");
  EXPECT_EQ(finish_reason_name(FinishReason::kAbort), "abort");
  EXPECT_EQ(request_status_name(RequestStatus::kPreempted), "preempted");
}

}  // namespace
}  // namespace paceline
