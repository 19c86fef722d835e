// The kernel timeline's arithmetic (exec/kernel_timeline.h): steps cut from the records, a step's
// span, running and idle time, per kernel its launches, run time and the idle time before it, and
// the names a table shows.
#include "exec/kernel_timeline.h"

#include <gtest/gtest.h>

namespace paceline {
namespace {

KernelRecord k(const char* name, uint64_t start_us, uint64_t end_us) {
  return {name, start_us * 1000, end_us * 1000};
}

const KernelTimelineRow* row(const KernelTimelineSummary& s, const std::string& name) {
  for (const KernelTimelineRow& r : s.rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(KernelTimeline, EqualRunsOfLaunchesAreTheSteps) {
  // Two steps of norm (10 us), gemm (40 us) after a 5 us gap, norm (10 us) after 2 us; the
  // records out of order, the steps 1 ms apart.
  const std::vector<KernelRecord> records = {k("gemm", 1015, 1055), k("norm", 0, 10),
                                             k("gemm", 15, 55),     k("norm", 57, 67),
                                             k("norm", 1000, 1010), k("norm", 1057, 1067)};
  const KernelTimelineSummary s = summarize_kernel_timeline(records, 2);
  EXPECT_EQ(s.steps, 2);
  EXPECT_DOUBLE_EQ(s.launches_per_step, 3.0);
  EXPECT_DOUBLE_EQ(s.span_us_per_step, 67.0);
  EXPECT_DOUBLE_EQ(s.busy_us_per_step, 60.0);
  EXPECT_DOUBLE_EQ(s.idle_us_per_step, 7.0);  // not the 933 us between the steps
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].name, "gemm");  // 40 + 5 us a step, ahead of norm's 20 + 2
  EXPECT_DOUBLE_EQ(s.rows[0].launches_per_step, 1.0);
  EXPECT_DOUBLE_EQ(s.rows[0].busy_us_per_step, 40.0);
  EXPECT_DOUBLE_EQ(s.rows[0].idle_before_us_per_step, 5.0);
  EXPECT_EQ(s.rows[1].name, "norm");
  EXPECT_DOUBLE_EQ(s.rows[1].launches_per_step, 2.0);
  EXPECT_DOUBLE_EQ(s.rows[1].busy_us_per_step, 20.0);
  EXPECT_DOUBLE_EQ(s.rows[1].idle_before_us_per_step, 2.0);  // the step's first norm has none
}

TEST(KernelTimeline, OverlappingKernelsRunOnceAndWaitForNothing) {
  // A kernel launched ahead of the end of the one before it (programmatic dependent launch):
  // the time both run counts once, and the second has no idle time before it; a third starts
  // 3 us after the later end of the two.
  const KernelTimelineSummary s =
      summarize_kernel_timeline({k("a", 0, 20), k("b", 15, 30), k("c", 33, 40)}, 1);
  EXPECT_DOUBLE_EQ(s.span_us_per_step, 40.0);
  EXPECT_DOUBLE_EQ(s.busy_us_per_step, 37.0);
  EXPECT_DOUBLE_EQ(s.idle_us_per_step, 3.0);
  EXPECT_DOUBLE_EQ(row(s, "b")->idle_before_us_per_step, 0.0);
  EXPECT_DOUBLE_EQ(row(s, "b")->busy_us_per_step, 15.0);
  EXPECT_DOUBLE_EQ(row(s, "c")->idle_before_us_per_step, 3.0);
}

TEST(KernelTimeline, UnevenStepsAreCutAtTheLongestGaps) {
  // Five launches in two steps (a step that also launched a copy kernel): the 500 us gap is the
  // boundary, not the 8 us one inside the first step.
  const KernelTimelineSummary s = summarize_kernel_timeline(
      {k("x", 0, 10), k("y", 18, 20), k("copy", 20, 22), k("x", 522, 532), k("y", 532, 534)}, 2);
  EXPECT_DOUBLE_EQ(s.launches_per_step, 2.5);
  EXPECT_DOUBLE_EQ(s.span_us_per_step, (22.0 + 12.0) / 2);
  EXPECT_DOUBLE_EQ(s.idle_us_per_step, 4.0);  // the 8 us gap, over two steps
  EXPECT_DOUBLE_EQ(row(s, "y")->idle_before_us_per_step, 4.0);
  EXPECT_DOUBLE_EQ(row(s, "x")->idle_before_us_per_step, 0.0);
}

TEST(KernelTimeline, NoRecordsOrNoStepsGiveAnEmptySummary) {
  EXPECT_TRUE(summarize_kernel_timeline({}, 3).rows.empty());
  EXPECT_TRUE(summarize_kernel_timeline({k("x", 0, 1)}, 0).rows.empty());
  const std::string md = kernel_timeline_markdown(summarize_kernel_timeline({}, 3), "decode");
  EXPECT_NE(md.find("### decode"), std::string::npos);
  EXPECT_NE(md.find("No kernel ran"), std::string::npos);
}

TEST(KernelTimeline, NamesAreDemangledWithoutNamespacesOrParameters) {
  EXPECT_EQ(short_kernel_name("_ZN8paceline4cuda12_GLOBAL__N_115rms_norm_kernelILi4EEEvPKfi"),
            "rms_norm_kernel<4>");
  EXPECT_EQ(short_kernel_name(
                "_ZN8paceline4cuda12_GLOBAL__N_113sample_kernelILi8EEEvPKflPKNS0_9SampleRowEdiPi"),
            "sample_kernel<8>");
  // cuBLAS's kernels are not C++ names: kept whole.
  EXPECT_EQ(short_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"),
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64");
  EXPECT_EQ(short_kernel_name("_Znot_a_mangled_name"), "_Znot_a_mangled_name");
}

TEST(KernelTimeline, MarkdownTableHasARowPerKernelWithItsShare) {
  const KernelTimelineSummary s =
      summarize_kernel_timeline({k("gemm", 0, 30), k("norm|fused", 40, 50)}, 1);
  const std::string md = kernel_timeline_markdown(s, "decode batch 1");
  EXPECT_NE(md.find("### decode batch 1"), std::string::npos);
  EXPECT_NE(md.find("A step (the mean of 1): 50.0 µs"), std::string::npos) << md;
  EXPECT_NE(md.find("| `gemm` | 1.0 | 30.0 | 0.0 | 60.0% |"), std::string::npos) << md;
  // A '|' in a name is escaped so that the table keeps its columns.
  EXPECT_NE(md.find("| `norm\\|fused` | 1.0 | 10.0 | 10.0 | 40.0% |"), std::string::npos) << md;
}

}  // namespace
}  // namespace paceline
