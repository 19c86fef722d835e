#include "sched/scheduler_config.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "fake_executor.h"

namespace paceline {
namespace {

using testing::small_config;

TEST(SchedulerConfig, DefaultsAreTheDocumentedOnes) {
  SchedulerConfig c;
  EXPECT_EQ(c.max_num_seqs, 256);
  EXPECT_EQ(c.max_num_batched_tokens, 16384);
  EXPECT_EQ(c.block_size, 16);
  EXPECT_TRUE(c.enable_prefix_caching);
  EXPECT_EQ(c.schedule, ScheduleKind::kSeparate);
  EXPECT_EQ(c.long_prefill_token_threshold, 0);
}

TEST(SchedulerConfig, ParsesScheduleKinds) {
  EXPECT_EQ(parse_schedule_kind("separate"), ScheduleKind::kSeparate);
  EXPECT_EQ(parse_schedule_kind("mixed"), ScheduleKind::kMixed);
  EXPECT_EQ(schedule_kind_name(ScheduleKind::kMixed), "mixed");
  EXPECT_THROW(parse_schedule_kind("interleaved"), Error);
}

TEST(SchedulerConfig, RequiresModelLengthAndKvBlocks) {
  SchedulerConfig c;
  EXPECT_THROW(c.validate(), Error);
  c.max_model_len = 4096;
  EXPECT_THROW(c.validate(), Error);
  c.num_kv_blocks = 100;
  EXPECT_NO_THROW(c.validate());
}

TEST(SchedulerConfig, RejectsValuesOutOfRange) {
  auto bad = [](auto mutate) {
    SchedulerConfig c = small_config();
    mutate(c);
    EXPECT_THROW(c.validate(), Error);
  };
  bad([](SchedulerConfig& c) { c.max_num_seqs = 0; });
  bad([](SchedulerConfig& c) { c.max_num_batched_tokens = 0; });
  bad([](SchedulerConfig& c) { c.block_size = 0; });
  bad([](SchedulerConfig& c) { c.long_prefill_token_threshold = -1; });
  bad([](SchedulerConfig& c) { c.kv_offloading_max_blocks_per_step = -1; });
  bad([](SchedulerConfig& c) {
    c.enable_chunked_prefill = false;
    c.max_num_batched_tokens = c.max_model_len - 1;
  });
  bad([](SchedulerConfig& c) {
    c.max_num_batched_tokens = 3;
    c.speculative.speculative_tokens = 3;
    c.speculative.acceptance_length = 2.0;
  });
}

TEST(SchedulerConfig, TheSchedulerValidatesItsConfig) {
  SchedulerConfig c = small_config();
  c.max_num_seqs = 0;
  VirtualClock clock;
  EXPECT_THROW(Scheduler(c, clock), Error);
}

TEST(SchedulerConfig, FlagErrorsNameTheFlag) {
  SchedulerConfig c = small_config();
  c.block_size = 0;
  try {
    c.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--block-size"), std::string::npos);
  }
}

}  // namespace
}  // namespace paceline
