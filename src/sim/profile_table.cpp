#include "sim/profile_table.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "base/error.h"

namespace paceline::sim {

namespace {

ForwardKind parse_kind(const std::string& name, const std::string& where) {
  if (auto kind = forward_kind_from_name(name)) return *kind;
  fail("{}: unknown kind '{}' (prefill, decode or mixed)", where, name);
}

int64_t count(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 0) {
    fail("{}: '{}' must be a non-negative integer", where, key);
  }
  return j[key].get<int64_t>();
}

// Hat-function weights of `x` over `knots`: F(x) = sum of weight * value. Below the first knot F
// is flat; past the last it continues the last segment's slope.
std::vector<std::pair<size_t, double>> hat(const std::vector<double>& knots, double x) {
  const size_t k = knots.size();
  if (k == 1 || x <= knots.front()) return {{0, 1.0}};
  size_t i = 0;
  while (i + 2 < k && x > knots[i + 1]) ++i;
  const double w = (x - knots[i]) / (knots[i + 1] - knots[i]);
  return {{i, 1.0 - w}, {i + 1, w}};
}

// Solves the square system m * x = rhs in place by Gaussian elimination with partial pivoting.
std::vector<double> solve(std::vector<std::vector<double>> m, std::vector<double> rhs) {
  const size_t n = rhs.size();
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r) {
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    }
    std::swap(m[c], m[pivot]);
    std::swap(rhs[c], rhs[pivot]);
    if (m[c][c] == 0) continue;  // a column nobody uses: its unknown stays 0
    for (size_t r = c + 1; r < n; ++r) {
      const double f = m[r][c] / m[c][c];
      if (f == 0) continue;
      for (size_t j = c; j < n; ++j) m[r][j] -= f * m[c][j];
      rhs[r] -= f * rhs[c];
    }
  }
  std::vector<double> x(n, 0.0);
  for (size_t c = n; c-- > 0;) {
    if (m[c][c] == 0) continue;
    double s = rhs[c];
    for (size_t j = c + 1; j < n; ++j) s -= m[c][j] * x[j];
    x[c] = s / m[c][c];
  }
  return x;
}

struct Sample {
  double rows, context, attention, logits, time_us;
  double scale_us = 0;  // the residual's denominator: the time itself, then the fit's prediction
};

// Weighted least squares (weights 1/time: relative error) over the knots' values and the linear
// terms still in `use`.
KindFit fit_once(const std::vector<Sample>& samples, const std::vector<double>& knots,
                 const std::vector<bool>& use) {
  const size_t k = knots.size(), n = k + 3;
  std::vector<std::vector<double>> ata(n, std::vector<double>(n, 0.0));
  std::vector<double> atb(n, 0.0);
  std::vector<double> scale(3, 1.0);  // columns scaled to about 1 for conditioning
  for (const Sample& s : samples) {
    scale[0] = std::max(scale[0], s.context);
    scale[1] = std::max(scale[1], s.attention);
    scale[2] = std::max(scale[2], s.logits);
  }
  for (const Sample& s : samples) {
    std::vector<double> row(n, 0.0);
    for (auto [i, w] : hat(knots, s.rows)) row[i] = w;
    const double extra[3] = {s.context, s.attention, s.logits};
    for (size_t j = 0; j < 3; ++j) row[k + j] = use[j] ? extra[j] / scale[j] : 0.0;
    const double w2 = 1.0 / (s.scale_us * s.scale_us);
    for (size_t a = 0; a < n; ++a) {
      if (row[a] == 0) continue;
      for (size_t b = 0; b < n; ++b) ata[a][b] += w2 * row[a] * row[b];
      atb[a] += w2 * row[a] * s.time_us;
    }
  }
  // The ridge falls on the linear terms only: a term that the curve F can stand in for (a
  // constant LM-head row count, a decode's logit rows) is left to F.
  double trace = 0;
  for (size_t i = 0; i < n; ++i) trace += ata[i][i];
  for (size_t j = k; j < n; ++j) ata[j][j] += 1e-6 * trace / static_cast<double>(n);
  const std::vector<double> x = solve(ata, atb);

  KindFit fit;
  fit.knots = knots;
  fit.values_us.assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(k));
  fit.per_context_us = x[k] / scale[0];
  fit.per_attention_us = x[k + 1] / scale[1];
  fit.per_logit_row_us = x[k + 2] / scale[2];
  fit.num_points = static_cast<int64_t>(samples.size());
  return fit;
}

constexpr size_t kMaxKnots = 64;  // a step log has thousands of points

double relative_error(const KindFit& fit, const Sample& s) {
  return fit.predict_us(s.rows, s.context, s.attention, s.logits) / s.time_us - 1.0;
}

// One weighted fit with every price >= 0: a linear term priced below zero is dropped and the fit
// repeated; then F is made non-decreasing (more rows never cost less time).
KindFit fit_nonnegative(const std::vector<Sample>& samples, const std::vector<double>& knots) {
  std::vector<bool> use(3, true);
  KindFit fit;
  for (;;) {
    fit = fit_once(samples, knots, use);
    const double terms[3] = {fit.per_context_us, fit.per_attention_us, fit.per_logit_row_us};
    size_t worst = 3;
    for (size_t j = 0; j < 3; ++j) {
      if (use[j] && terms[j] < 0 && (worst == 3 || terms[j] < terms[worst])) worst = j;
    }
    if (worst == 3) break;
    use[worst] = false;
  }
  // Non-decreasing by pooling adjacent violators (weighted by how much each knot's value rests
  // on the points): a running maximum would ride up on the noise of single steps.
  std::vector<double> weight(knots.size(), 0.0);
  for (const Sample& s : samples) {
    for (auto [i, w] : hat(knots, s.rows)) weight[i] += w / (s.scale_us * s.scale_us);
  }
  struct Pool {
    double value, weight;
    size_t count;
  };
  std::vector<Pool> pools;
  for (size_t i = 0; i < knots.size(); ++i) {
    pools.push_back({fit.values_us[i], std::max(weight[i], 1e-300), 1});
    while (pools.size() > 1 && pools[pools.size() - 2].value > pools.back().value) {
      const Pool b = pools.back();
      pools.pop_back();
      Pool& a = pools.back();
      a.value = (a.value * a.weight + b.value * b.weight) / (a.weight + b.weight);
      a.weight += b.weight;
      a.count += b.count;
    }
  }
  size_t i = 0;
  for (const Pool& p : pools) {
    for (size_t n = 0; n < p.count; ++n) fit.values_us[i++] = std::max(0.0, p.value);
  }
  return fit;
}

KindFit fit_kind(std::vector<Sample> samples, int points_per_knot) {
  if (samples.empty()) return {};
  // Knots at quantiles of the points' row counts: the first, the last and evenly spaced ones
  // between, at most one per `points_per_knot` points, so that the linear terms stay identifiable
  // (a knot per point would let F explain everything) and noisy single steps cannot bend F.
  std::vector<double> rows;
  for (const Sample& s : samples) rows.push_back(s.rows);
  std::sort(rows.begin(), rows.end());
  std::vector<double> knots = rows;
  knots.erase(std::unique(knots.begin(), knots.end()), knots.end());
  const size_t most = std::min<size_t>(
      kMaxKnots, std::max<size_t>(2, samples.size() / static_cast<size_t>(points_per_knot)));
  if (knots.size() > most) {
    knots.clear();
    for (size_t i = 0; i < most; ++i) knots.push_back(rows[i * (rows.size() - 1) / (most - 1)]);
    knots.erase(std::unique(knots.begin(), knots.end()), knots.end());
  }
  // Relative error, first against the measured times, then twice against the fit's own
  // predictions (iteratively reweighted): dividing by the measurement alone favours the fast
  // measurements of a noisy step, and the fit would predict below the mean. The reweighted
  // rounds leave out points more than max(4 rms, 50%) above or below the last fit (a step the
  // OS stalled), which would otherwise weigh with the square of their excess.
  for (Sample& s : samples) s.scale_us = s.time_us;
  KindFit fit = fit_nonnegative(samples, knots);
  const auto rms_error = [&](const KindFit& f) {
    double sq = 0;
    for (const Sample& s : samples) sq += relative_error(f, s) * relative_error(f, s);
    return std::sqrt(sq / static_cast<double>(samples.size()));
  };
  for (int round = 0; round < 2; ++round) {
    const double limit = std::max(4 * rms_error(fit), 0.5);
    std::vector<Sample> kept;
    for (Sample s : samples) {
      const double predicted = fit.predict_us(s.rows, s.context, s.attention, s.logits);
      if (std::abs(s.time_us / std::max(predicted, 1e-9) - 1.0) > limit) continue;
      s.scale_us = std::max(predicted, 0.05 * s.time_us);
      kept.push_back(s);
    }
    if (kept.size() < 2) break;
    fit = fit_nonnegative(kept, knots);
  }
  fit.num_points = static_cast<int64_t>(samples.size());
  fit.rms_relative_error = rms_error(fit);  // over every point, the ones left out included
  return fit;
}

}  // namespace

StepWork point_work(const ProfilePoint& p) {
  StepWork w;
  w.kind = p.kind;
  w.num_seqs = p.batch;
  w.tokens = p.tokens;
  w.context = p.context;
  w.attention = p.attention;
  w.logit_rows = p.logit_rows;
  return w;
}

ProfilePoint work_point(const StepWork& w, double time_us) {
  ProfilePoint p;
  p.kind = w.kind;
  p.batch = w.num_seqs;
  p.tokens = w.tokens;
  p.context = w.context;
  p.attention = w.attention;
  p.logit_rows = w.logit_rows;
  p.time_us = time_us;
  return p;
}

double KindFit::predict_us(double rows, double context, double attention, double logit_rows) const {
  double f = 0;
  if (knots.size() > 1 && rows > knots.back()) {
    // Past the last knot: the last segment's slope, never negative.
    const size_t k = knots.size();
    const double slope = (values_us[k - 1] - values_us[k - 2]) / (knots[k - 1] - knots[k - 2]);
    f = values_us[k - 1] + std::max(0.0, slope) * (rows - knots[k - 1]);
  } else {
    for (auto [i, w] : hat(knots, rows)) f += w * values_us[i];
  }
  return f + per_context_us * context + per_attention_us * attention +
         per_logit_row_us * logit_rows;
}

nlohmann::json profile_table_to_json(const ProfileTable& t) {
  nlohmann::json points = nlohmann::json::array();
  for (const ProfilePoint& p : t.points) {
    points.push_back({{"kind", forward_kind_name(p.kind)},
                      {"batch", p.batch},
                      {"tokens", p.tokens},
                      {"context", p.context},
                      {"attention", p.attention},
                      {"logit_rows", p.logit_rows},
                      {"padding_rows", p.padding_rows},
                      {"time_us", std::round(p.time_us * 1000) / 1000}});
    if (p.t_us >= 0) points.back()["t_us"] = std::round(p.t_us * 1000) / 1000;
  }
  return {{"type", "measured"},
          {"device", t.device},
          {"model", t.model},
          {"executor", t.executor},
          {"kv_cache_bytes", t.kv_cache_bytes},
          {"kv_element_bytes", t.kv_element_bytes},
          {"block_size", t.block_size},
          {"tensor_parallel_size", t.tensor_parallel_size},
          {"graph_padding", t.graph_padding},
          {"eager_overhead_us", t.eager_overhead_us},
          {"repeats", t.repeats},
          {"points_per_knot", t.points_per_knot},
          {"time_ordered", t.time_ordered},
          {"notes", t.notes},
          {"points", points}};
}

ProfileTable profile_table_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || j.value("type", "") != "measured") {
    fail("{}: not a measured profile (\"type\": \"measured\")", where);
  }
  ProfileTable t;
  try {
    t.device = j.value("device", "");
    t.model = j.value("model", "");
    t.executor = j.value("executor", "");
    t.kv_cache_bytes = j.value("kv_cache_bytes", int64_t{0});
    t.kv_element_bytes = j.value("kv_element_bytes", int64_t{4});
    t.block_size = j.value("block_size", int64_t{16});
    t.tensor_parallel_size = j.value("tensor_parallel_size", 1);
    t.graph_padding = j.value("graph_padding", false);
    t.eager_overhead_us = j.value("eager_overhead_us", 0.0);
    t.repeats = j.value("repeats", 1);
    t.points_per_knot = j.value("points_per_knot", 2);
    t.time_ordered = j.value("time_ordered", false);
    t.notes = j.value("notes", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    fail("{}: {}", where, e.what());
  }
  if (t.kv_element_bytes < 1) fail("{}: kv_element_bytes must be at least 1", where);
  if (t.tensor_parallel_size < 1) fail("{}: tensor_parallel_size must be at least 1", where);
  if (!j.contains("points") || !j["points"].is_array()) fail("{}: 'points' must be a list", where);
  for (size_t i = 0; i < j["points"].size(); ++i) {
    const nlohmann::json& p = j["points"][i];
    const std::string at = fmt::format("{}: points[{}]", where, i);
    if (!p.is_object()) fail("{} must be an object", at);
    ProfilePoint pt;
    pt.kind = parse_kind(p.value("kind", ""), at);
    pt.batch = count(p, "batch", at);
    pt.tokens = count(p, "tokens", at);
    pt.context = count(p, "context", at);
    pt.attention = count(p, "attention", at);
    pt.logit_rows = count(p, "logit_rows", at);
    pt.padding_rows = p.contains("padding_rows") ? count(p, "padding_rows", at) : 0;
    if (!p.contains("time_us") || !p["time_us"].is_number() || !(p["time_us"].get<double>() > 0)) {
      fail("{}: 'time_us' must be a positive number", at);
    }
    pt.time_us = p["time_us"].get<double>();
    if (pt.batch < 1 || pt.tokens < pt.batch) fail("{}: needs 1 <= batch <= tokens", at);
    if (p.contains("t_us")) {
      if (!p["t_us"].is_number() || !(p["t_us"].get<double>() >= 0)) {
        fail("{}: 't_us' must be a number >= 0", at);
      }
      pt.t_us = p["t_us"].get<double>();
    }
    if (t.time_ordered && pt.t_us < 0) fail("{}: a time-ordered profile needs 't_us'", at);
    if (t.time_ordered && !t.points.empty() && pt.t_us < t.points.back().t_us) {
      fail("{}: 't_us' goes back in time in a time-ordered profile", at);
    }
    t.points.push_back(pt);
  }
  return t;
}

TableFit fit_profile_table(const ProfileTable& t) {
  std::map<ForwardKind, std::vector<Sample>> by_kind;
  for (const ProfilePoint& p : t.points) {
    by_kind[p.kind].push_back({static_cast<double>(p.tokens + p.padding_rows),
                               static_cast<double>(p.context), static_cast<double>(p.attention),
                               static_cast<double>(p.logit_rows + p.padding_rows), p.time_us});
  }
  TableFit fit;
  const int per_knot = std::max(2, t.points_per_knot);
  fit.prefill = fit_kind(by_kind[ForwardKind::kPrefill], per_knot);
  fit.decode = fit_kind(by_kind[ForwardKind::kDecode], per_knot);
  fit.mixed = fit_kind(by_kind[ForwardKind::kMixed], per_knot);
  if (fit.prefill.empty() || fit.decode.empty()) {
    fail("profile of {} on {}: needs prefill and decode points", t.model, t.device);
  }
  return fit;
}

namespace {

const KindFit& fit_for(const TableFit& fits, ForwardKind kind) {
  if (kind == ForwardKind::kDecode) return fits.decode;
  if (kind == ForwardKind::kMixed && !fits.mixed.empty()) return fits.mixed;
  return fits.prefill;
}

}  // namespace

TableCostModel::TableCostModel(ProfileTable table)
    : table_(std::move(table)), fit_(fit_profile_table(table_)) {
  if (!table_.time_ordered || table_.points.empty()) return;
  double start = table_.points.front().t_us, end = start, last = start;
  for (const ProfilePoint& p : table_.points) {
    if (p.t_us < last) fail("profile of {}: a time-ordered point goes back in time", table_.model);
    last = p.t_us;
    if (p.t_us < 0) fail("profile of {}: a time-ordered point without a start time", table_.model);
    // The point as the fit saw it (its padding rows priced like real rows).
    const double predicted = fit_for(fit_, p.kind).predict_us(
        static_cast<double>(p.tokens + p.padding_rows), static_cast<double>(p.context),
        static_cast<double>(p.attention), static_cast<double>(p.logit_rows + p.padding_rows));
    StepTimeSeries& s = series_[forward_kind_index(p.kind)];
    s.t_us.push_back(p.t_us);
    s.ratio.push_back(p.time_us / std::max(predicted, 1e-3));
    start = std::min(start, p.t_us);
    end = std::max(end, p.t_us + p.time_us);
  }
  for (StepTimeSeries& s : series_) {
    s.start_us = start;
    s.span_us = end - start;
  }
}

const StepTimeSeries* TableCostModel::step_time_series(ForwardKind kind) const {
  if (!table_.time_ordered) return nullptr;
  if (kind == ForwardKind::kMixed && fit_.mixed.empty()) kind = ForwardKind::kPrefill;
  const StepTimeSeries& s = series_[forward_kind_index(kind)];
  return s.t_us.empty() || !(s.span_us > 0) ? nullptr : &s;
}

bool TableCostModel::extrapolates(const StepWork& w) const {
  if (w.num_seqs == 0) return false;
  const bool padded = table_.graph_padding && w.kind == ForwardKind::kDecode;
  const double rows = static_cast<double>(w.tokens + (padded ? w.padding_rows : 0));
  return rows > fit_for(fit_, w.kind).knots.back();
}

int64_t TableCostModel::step_time_ns(const StepWork& w) const {
  if (w.num_seqs == 0) return 0;
  const KindFit* fit = &fit_for(fit_, w.kind);
  const bool padded = table_.graph_padding && w.kind == ForwardKind::kDecode;
  const int64_t padding = padded ? w.padding_rows : 0;
  double us = fit->predict_us(static_cast<double>(w.tokens + padding),
                              static_cast<double>(w.context), static_cast<double>(w.attention),
                              static_cast<double>(w.logit_rows + padding));
  if (padded && w.graph_batch == 0) us += table_.eager_overhead_us;
  return std::max<int64_t>(1, std::llround(us * 1000));
}

std::string TableCostModel::describe() const {
  return fmt::format("measured {} on {} ({} points; fit rms error prefill {:.1f}%, decode {:.1f}%)",
                     table_.model, table_.executor.empty() ? table_.device : table_.executor,
                     table_.points.size(), fit_.prefill.rms_relative_error * 100,
                     fit_.decode.rms_relative_error * 100);
}

}  // namespace paceline::sim
