// The decode attention's split plan, the PACELINE_DECODE_SPLITS override and the
// PACELINE_DECODE_PREFETCH switch
// (src/exec/cuda/decode_split_plan.h).
#include "exec/cuda/decode_split_plan.h"

#include <gtest/gtest.h>

#include <string>

namespace paceline::cuda {
namespace {

TEST(DecodeSplitPlan, ShortContextsArePiecesOfTheLeastChunk) {
  // 1,024 keys at >= 128 a piece: eight pieces of 128.
  const DecodeSplitPlan p = decode_split_plan(1024, {16, 128});
  EXPECT_EQ(p.count, 8);
  EXPECT_EQ(p.chunk, 128);
  // Fewer keys than a piece: one piece of whole 64-key rounds.
  const DecodeSplitPlan one = decode_split_plan(100, {16, 128});
  EXPECT_EQ(one.count, 1);
  EXPECT_EQ(one.chunk, 128);
  EXPECT_EQ(decode_split_plan(0, {16, 128}).count, 0);
}

TEST(DecodeSplitPlan, LongContextsAreCutIntoTheMostPiecesAndCoverEveryKey) {
  for (const DecodeSplits s : {DecodeSplits{16, 128}, DecodeSplits{64, 256}, DecodeSplits{128, 128}}) {
    for (const int ctx : {1, 63, 64, 65, 1000, 4097, 32768, 33000, 131071, 131072}) {
      const DecodeSplitPlan p = decode_split_plan(ctx, s);
      EXPECT_GE(p.count, 1);
      EXPECT_LE(p.count, s.max_splits);
      EXPECT_EQ(p.chunk % 64, 0);
      EXPECT_GE(p.count * p.chunk, ctx) << ctx;          // every key is in a piece
      EXPECT_LT((p.count - 1) * p.chunk, ctx) << ctx;    // and every piece has keys
    }
  }
  EXPECT_EQ(decode_split_plan(131072, {64, 256}).count, 64);
  EXPECT_EQ(decode_split_plan(131072, {64, 256}).chunk, 2048);
}

TEST(DecodeSplits, UnsetOrEmptyGivesThePlanOfTheCacheType) {
  std::string error;
  const auto bf16 = decode_splits_from(nullptr, false, &error);
  const auto fp8 = decode_splits_from(nullptr, true, &error);
  ASSERT_TRUE(bf16 && fp8);
  EXPECT_EQ(bf16->max_splits, kDecodePlanBf16.max_splits);
  EXPECT_EQ(bf16->min_chunk, kDecodePlanBf16.min_chunk);
  EXPECT_EQ(fp8->max_splits, kDecodePlanFp8.max_splits);
  EXPECT_EQ(fp8->min_chunk, kDecodePlanFp8.min_chunk);
  EXPECT_EQ(fp8->long_chunk, kDecodePlanFp8.long_chunk);
  const auto empty = decode_splits_from("", true, &error);  // VAR= as unset
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->long_chunk, kDecodePlanFp8.long_chunk);
  EXPECT_TRUE(error.empty());
}

TEST(DecodeSplits, AValueNamesTheMostPiecesAndTheLeastChunk) {
  std::string error;
  const auto s = decode_splits_from("64,256", true, &error);
  ASSERT_TRUE(s.has_value()) << error;
  EXPECT_EQ(s->max_splits, 64);
  EXPECT_EQ(s->min_chunk, 256);
}

TEST(DecodeSplits, FourValuesAddTheLongRegime) {
  std::string error;
  const auto s = decode_splits_from("32,128,16,1024", false, &error);
  ASSERT_TRUE(s.has_value()) << error;
  EXPECT_EQ(s->max_splits, 32);
  EXPECT_EQ(s->min_chunk, 128);
  EXPECT_EQ(s->short_splits, 16);
  EXPECT_EQ(s->long_chunk, 1024);
}

TEST(DecodeSplitPlan, TheLongRegimeKeepsShortContextsAndAddsPiecesPastIt) {
  const DecodeSplits s{32, 128, 16, 1024};
  EXPECT_EQ(decode_split_plan(1024, s).count, 8);    // as {16, 128}: pieces of 128
  EXPECT_EQ(decode_split_plan(8192, s).count, 16);   // as {16, 128}: pieces of 512
  EXPECT_EQ(decode_split_plan(16384, s).count, 16);  // 16 long chunks: still 16
  EXPECT_EQ(decode_split_plan(24576, s).count, 24);  // a piece per 1,024 keys
  EXPECT_EQ(decode_split_plan(32768, s).count, 32);
  EXPECT_EQ(decode_split_plan(131072, s).count, 32);  // at most 32
  EXPECT_EQ(decode_split_plan(131072, s).chunk, 4096);
}

TEST(DecodeSplitPlan, TheFp8PlanIsSession21sUpTo32kThenUpTo48Pieces) {
  // Up to 32k keys the plan of session 21 ({32, 128, 16, 1024}), piece for piece.
  for (const int ctx : {1, 1024, 8192, 16384, 20000, 24576, 32768}) {
    const DecodeSplitPlan now = decode_split_plan(ctx, kDecodePlanFp8);
    const DecodeSplitPlan before = decode_split_plan(ctx, {32, 128, 16, 1024});
    EXPECT_EQ(now.count, before.count) << ctx;
    EXPECT_EQ(now.chunk, before.chunk) << ctx;
  }
  EXPECT_EQ(decode_split_plan(32768, kDecodePlanFp8).count, 32);
  EXPECT_EQ(decode_split_plan(40960, kDecodePlanFp8).count, 40);  // a piece per 1,024 keys
  // At most 48: 64k keys in 48 pieces would be 1,366 keys, rounded to 1,408 (whole 64-key
  // rounds), which 47 pieces cover.
  EXPECT_EQ(decode_split_plan(65536, kDecodePlanFp8).count, 47);
  // 128k at 48 pieces: with 8 KV heads, 384 items a row (the grid is 3 blocks x 132 SMs).
  EXPECT_EQ(decode_split_plan(131071, kDecodePlanFp8).count, 48);
  EXPECT_EQ(decode_split_plan(131071, kDecodePlanFp8).chunk, 2752);
  // bf16 keeps at most 16 pieces.
  EXPECT_EQ(decode_split_plan(131071, kDecodePlanBf16).count, 16);
}

TEST(DecodeSplits, MalformedValuesAreErrorsThatQuoteThem) {
  for (const char* bad : {"64", "64,", "x,128", "0,128", "257,128", "16,8", "16,128,1",
                          "16,128x", "-4,128", "16, 128", "32,128,16", "32,128,0,1024",
                          "32,128,33,1024", "32,128,16,64", "32,128,16,1024,1",
                          "32,128,16,9999999"}) {
    std::string error;
    EXPECT_FALSE(decode_splits_from(bad, false, &error).has_value()) << bad;
    EXPECT_NE(error.find(std::string("\"") + bad + "\""), std::string::npos) << error;
  }
}

TEST(DecodePrefetch, UnsetOrEmptyGivesTheDefaultAndZeroOrOneChoose) {
  std::string error;
  EXPECT_EQ(decode_prefetch_from(nullptr, &error), kDecodePrefetch);
  EXPECT_EQ(decode_prefetch_from("", &error), kDecodePrefetch);
  EXPECT_EQ(decode_prefetch_from("0", &error), false);
  EXPECT_EQ(decode_prefetch_from("1", &error), true);
  EXPECT_TRUE(error.empty());
}

TEST(DecodePrefetch, AnyOtherValueIsAnErrorThatQuotesIt) {
  for (const char* bad : {"yes", "2", "01", "1 ", " 1", "true", "-1"}) {
    std::string error;
    EXPECT_FALSE(decode_prefetch_from(bad, &error).has_value()) << bad;
    EXPECT_NE(error.find(std::string("PACELINE_DECODE_PREFETCH=\"") + bad + "\""),
              std::string::npos)
        << error;
  }
}

// The kernel's other switches (PACELINE_DECODE_FP8_BULK, PACELINE_DECODE_FP8_TABLE_LEAD,
// PACELINE_DECODE_Q_NEXT) read as the prefetch's: unset or empty the default, 0 or 1, an error
// naming the variable otherwise.
TEST(DecodeFp8Switches, UnsetGivesTheDefaultZeroOrOneChooseAndTheErrorNamesTheVariable) {
  using Parse = std::optional<bool> (*)(const char*, std::string*);
  const struct {
    Parse parse;
    bool fallback;
    const char* name;
  } switches[] = {
      {decode_fp8_bulk_from, kDecodeFp8Bulk, "PACELINE_DECODE_FP8_BULK"},
      {decode_fp8_table_lead_from, kDecodeFp8TableLead, "PACELINE_DECODE_FP8_TABLE_LEAD"},
      {decode_q_next_from, kDecodeQNext, "PACELINE_DECODE_Q_NEXT"}};
  for (const auto& s : switches) {
    std::string error;
    EXPECT_EQ(s.parse(nullptr, &error), s.fallback) << s.name;
    EXPECT_EQ(s.parse("", &error), s.fallback) << s.name;
    EXPECT_EQ(s.parse("0", &error), false) << s.name;
    EXPECT_EQ(s.parse("1", &error), true) << s.name;
    EXPECT_TRUE(error.empty()) << error;
    EXPECT_FALSE(s.parse("on", &error).has_value()) << s.name;
    EXPECT_NE(error.find(std::string(s.name) + "=\"on\""), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace paceline::cuda
