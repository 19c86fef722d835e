#pragma once
// A measured profile: step times of one executor for one model at chosen shapes, and the fit the
// simulator predicts from. `paceline profile` writes it; `paceline sim --profile FILE` reads it.
//
// File (JSON): {"type": "measured", "device": "cpu", "model": "qwen3-tiny", "executor": ...,
// "kv_cache_bytes": ..., "kv_element_bytes": 4, "block_size": 16, "graph_padding": false,
// "eager_overhead_us": 0, "time_ordered": false, "points": [{"kind": "decode", "batch": 8,
// "tokens": 8, "context": 8200, "attention": 8200, "logit_rows": 8, "time_us": 1234.5}, ...]}.
// A time-ordered profile (a step log's) gives every point its start time, "t_us", ascending.
//
// The fit, per forward kind: time = F(rows) + a * context + b * attention + c * logit_rows, where
// F is piecewise linear through knots at quantiles of the measured row counts, at most one per
// `points_per_knot` points (the GEMM-shaped part, whatever its curve) and a, b, c >= 0 price the
// KV read, the attention arithmetic and the LM head. It is a least-squares fit of relative error,
// reweighted by the fit's own predictions so that noisy steps are fitted at their mean. Rows are the step's
// tokens, or its padded tokens when decode steps replay CUDA graphs (graph_padding). A mixed step
// uses the mixed fit when the table has mixed points, else the prefill fit. A table of many
// single steps (a step log) gets at most 64 knots.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cost_model.h"

namespace paceline::sim {

struct ProfilePoint {
  ForwardKind kind = ForwardKind::kDecode;
  int64_t batch = 0;  // sequences
  int64_t tokens = 0;
  int64_t context = 0;
  int64_t attention = 0;
  int64_t logit_rows = 0;
  double time_us = 0;  // median of the repeats
  // Rows a CUDA graph computed for nothing (a padded decode from a step log); they cost like
  // real rows in the linear layers and the LM head.
  int64_t padding_rows = 0;
  // When the step started on the server's clock, in a time-ordered table (a step log); -1: not
  // known.
  double t_us = -1;
};

// The features of a point as the cost model sees them (graph padding does not apply).
StepWork point_work(const ProfilePoint& point);
// A point with a step's features and its measured time (no padding rows; the caller adds them
// where graphs padded the step).
ProfilePoint work_point(const StepWork& work, double time_us);

struct ProfileTable {
  std::string device;    // "cpu", "h200", ...
  std::string model;     // the model config's name
  std::string executor;  // how it was measured, e.g. "cpu, 2 threads"
  int64_t kv_cache_bytes = 0;
  int64_t kv_element_bytes = 4;
  int64_t block_size = 16;
  // GPUs (ranks) of the replica that was measured (JSON "tensor_parallel_size"; absent: 1).
  // `sim --tensor-parallel-size N` takes only a table of the same N; kv_cache_bytes is the
  // whole replica's.
  int tensor_parallel_size = 1;
  bool graph_padding = false;    // decode steps run their padded CUDA-graph batch
  double eager_overhead_us = 0;  // added to a decode step without a graph (graph_padding only)
  int repeats = 1;
  // Points per knot of F at least (2 for a grid of medians; a step log's single, noisy steps
  // need more so that F follows the trend, not the noise).
  int points_per_knot = 2;
  // The points are single steps in the order a server executed them, each with its start time
  // (a step log), so their scatter around the fit can be replayed in time (step_noise.h).
  bool time_ordered = false;
  std::vector<std::string> notes;
  std::vector<ProfilePoint> points;
};

nlohmann::json profile_table_to_json(const ProfileTable& table);
ProfileTable profile_table_from_json(const nlohmann::json& j, const std::string& where);

// One forward kind's fitted curve.
struct KindFit {
  std::vector<double> knots;      // row counts, ascending
  std::vector<double> values_us;  // F at each knot, non-decreasing
  double per_context_us = 0;
  double per_attention_us = 0;
  double per_logit_row_us = 0;
  int64_t num_points = 0;
  double rms_relative_error = 0;  // of the fit on its own points

  bool empty() const { return knots.empty(); }
  double predict_us(double rows, double context, double attention, double logit_rows) const;
};

struct TableFit {
  KindFit prefill, decode, mixed;
};

// Throws paceline::Error when the table has no prefill or no decode point.
TableFit fit_profile_table(const ProfileTable& table);

class TableCostModel final : public CostModel {
 public:
  explicit TableCostModel(ProfileTable table);

  int64_t step_time_ns(const StepWork& work) const override;
  std::string describe() const override;
  bool extrapolates(const StepWork& work) const override;
  // For a time-ordered table: each point's time over the fit's prediction, per kind, at the
  // point's start time, every point included (the ones the fit left out as stalls happened too);
  // a mixed step without a mixed fit takes the prefill series, as it takes the prefill fit.
  const StepTimeSeries* step_time_series(ForwardKind kind) const override;
  const TableFit& fit() const { return fit_; }
  const ProfileTable& table() const { return table_; }

 private:
  ProfileTable table_;
  TableFit fit_;
  StepTimeSeries series_[kNumForwardKinds];
};

}  // namespace paceline::sim
