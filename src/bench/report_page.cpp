#include "bench/report_page.h"

#include <cmath>

#include <fmt/format.h>

#include "bench/svg_chart.h"

namespace paceline::bench {

namespace {

const char* kPageStyle = R"(<style>
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;
  max-width:1100px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:28px 0 8px}
table{border-collapse:collapse;margin:8px 0 16px}
th,td{border:1px solid #ddd;padding:4px 10px}th{background:#f4f4f4}
td:not(:first-child),th:not(:first-child){text-align:right}
.banner{padding:8px 12px;border-radius:4px;margin:8px 0}
.invalid{background:#fde2e1;border:1px solid #e0a3a0}
.warning{background:#fff4d6;border:1px solid #e5c770}
.note{background:#e3effc;border:1px solid #9bbfe6}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.chart{max-width:100%;height:auto;border:1px solid #eee;background:#fff}
code{background:#f4f4f4;padding:0 3px}
</style>
)";

}  // namespace

std::string html_page(std::string_view title, std::string_view body_html) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{0}</title>\n{1}</head>\n<body>\n<h1>{0}</h1>\n{2}</body>\n</html>\n",
      xml_escape(title), kPageStyle, body_html);
}

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table>\n<thead><tr>";
  for (const std::string& h : header) out += "<th>" + xml_escape(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const std::string& cell : row) out += "<td>" + cell + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string html_banner(std::string_view kind, std::string_view text) {
  return fmt::format("<p class=\"banner {}\">{}</p>\n", xml_escape(kind), xml_escape(text));
}

std::string format_number(double v, int decimals) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, decimals) : "n/a";
}

std::string format_percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.1f}%", fraction * 100.0) : "n/a";
}

}  // namespace paceline::bench
