#pragma once
// The frame shared by the HTML reports: one self-contained page (inline CSS, no scripts, no
// external resources, so it opens the same from a mail attachment or a CI artifact), tables,
// banners and number formatting.
#include <string>
#include <string_view>
#include <vector>

namespace paceline::bench {

// A whole page: doctype, inline style, `title` as <title> and <h1>, then `body_html`.
std::string html_page(std::string_view title, std::string_view body_html);

// A table; `header` is text (escaped here), each cell of `rows` is HTML (escape text with
// xml_escape). Columns after the first are right-aligned: they hold numbers.
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);

// A highlighted paragraph: kind "invalid" (red), "warning" (amber) or "note" (blue). `text` is
// escaped here.
std::string html_banner(std::string_view kind, std::string_view text);

// `v` with `decimals` digits after the point; "n/a" when it is not finite.
std::string format_number(double v, int decimals);
// A fraction as a percentage with one decimal ("93.4%"); "n/a" when not finite.
std::string format_percent(double fraction);

}  // namespace paceline::bench
