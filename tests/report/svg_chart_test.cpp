// The SVG charts: round ticks, escaped text, no data drawn as such, series styles.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/svg_chart.h"
#include "html_check.h"

namespace paceline::bench {
namespace {

using namespace test_util;

TEST(NiceTicks, RoundStepsCoveringTheRange) {
  EXPECT_EQ(nice_ticks(0, 97, 6), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(nice_ticks(0, 1, 6), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  std::vector<double> t = nice_ticks(12, 1234, 6);
  EXPECT_LE(t.front(), 12);
  EXPECT_GE(t.back(), 1234);
  EXPECT_LE(t.size(), 8u);
}

TEST(XmlEscape, AllFiveCharacters) {
  EXPECT_EQ(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(RenderSvg, SeriesAndLabels) {
  Chart c;
  c.title = "TTFT <p90>";
  c.x.label = "x";
  c.y.label = "y";
  c.series.push_back(
      {"line", "#123456", SeriesStyle::kLine, 2, false, false, {{0, 0, ""}, {1, 2, ""}}});
  c.series.push_back(
      {"cdf", "#654321", SeriesStyle::kStep, 2, false, false, {{0, 0, ""}, {1, 1, ""}}});
  c.series.push_back({"pts",
                      "#abcdef",
                      SeriesStyle::kPoints,
                      2,
                      false,
                      true,
                      {{0.5, 1, "c16"}, {NAN, 1, "skip"}}});
  std::string svg = render_svg(c);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(tag_nesting_error(svg), "");
  EXPECT_NE(svg.find("TTFT &lt;p90&gt;"), std::string::npos);
  EXPECT_EQ(count_of(svg, "<polyline"), 2u);
  EXPECT_EQ(count_of(svg, "<circle"), 1u);  // the NaN point is skipped
  EXPECT_NE(svg.find(">c16</text>"), std::string::npos);
  EXPECT_EQ(svg.find("no data"), std::string::npos);
}

TEST(RenderSvg, NoDataSaysSo) {
  Chart c;
  c.title = "empty";
  std::string svg = render_svg(c);
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(tag_nesting_error(svg), "");
}

}  // namespace
}  // namespace paceline::bench
