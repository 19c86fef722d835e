// gate_up_proj's rows on the GPU in turns of gate and up (src/exec/cuda/gate_up_layout.h).
#include "exec/cuda/gate_up_layout.h"

#include <gtest/gtest.h>

namespace paceline::cuda {
namespace {

TensorSlice rows_of(const char* name, int64_t total, int64_t row0, int64_t rows, int64_t cols) {
  TensorSlice s;
  s.name = name;
  s.total_rows = total;
  s.total_cols = cols;
  s.row0 = row0;
  s.rows = rows;
  s.cols = cols;
  return s;
}

TEST(GateUpLayout, GateAndUpRowsTakeTurns) {
  // A rank's share of a 256-column MLP split in two: rows [128, 256) of gate and of up.
  const std::vector<TensorSlice> halves = {rows_of("gate", 256, 128, 128, 48),
                                           rows_of("up", 256, 128, 128, 48)};
  const std::vector<TensorSlice> turns = gate_up_in_turns(halves, 64);
  ASSERT_EQ(turns.size(), 4u);
  const char* names[] = {"gate", "up", "gate", "up"};
  const int64_t first_rows[] = {128, 128, 192, 192};
  for (size_t i = 0; i < turns.size(); ++i) {
    EXPECT_EQ(turns[i].name, names[i]) << i;
    EXPECT_EQ(turns[i].row0, first_rows[i]) << i;
    EXPECT_EQ(turns[i].rows, 64) << i;
    EXPECT_EQ(turns[i].cols, 48) << i;
    EXPECT_EQ(turns[i].total_rows, 256) << i;
  }
}

TEST(GateUpLayout, RowsNotAMultipleOfTheTurnStayInHalves) {
  const std::vector<TensorSlice> halves = {rows_of("gate", 80, 0, 80, 48),
                                           rows_of("up", 80, 0, 80, 48)};
  EXPECT_TRUE(gate_up_in_turns(halves, 64).empty());
  EXPECT_FALSE(gate_up_in_turns(halves, 16).empty());
  EXPECT_TRUE(gate_up_in_turns(halves, 0).empty());
  EXPECT_TRUE(gate_up_in_turns({halves[0]}, 16).empty());  // not a gate and an up
  std::vector<TensorSlice> uneven = halves;
  uneven[1].rows = 64;
  EXPECT_TRUE(gate_up_in_turns(uneven, 16).empty());
}

}  // namespace
}  // namespace paceline::cuda
