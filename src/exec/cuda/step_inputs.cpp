#include "exec/cuda/step_inputs.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/gemm.h"

namespace paceline::cuda {
namespace {

// Appends one sequence's rows and block table (not its logit rows); returns its first row.
int add_sequence(const ScheduledSeq& s, const StepLimits& lim, HostStep& h) {
  const auto n = static_cast<int64_t>(s.tokens.size());
  if (s.start_pos < 0) fail("request {}: start_pos {} is negative", s.request_id, s.start_pos);
  if (s.num_logits < 0 || s.num_logits > n) {
    fail("request {}: num_logits {} for {} tokens", s.request_id, s.num_logits, n);
  }
  const int64_t positions = s.start_pos + n;
  const int64_t needed = (positions + lim.block_size - 1) / lim.block_size;
  if (static_cast<int64_t>(s.block_table.size()) < needed) {
    fail("request {}: block table of {} blocks does not cover {} positions", s.request_id,
         s.block_table.size(), positions);
  }
  if (positions > INT32_MAX) fail("request {}: {} positions exceed int32", s.request_id, positions);
  const auto seq = static_cast<int32_t>(h.seq_block_offset.size());
  h.seq_block_offset.push_back(static_cast<int32_t>(h.blocks.size()));
  for (int64_t b = 0; b < needed; ++b) {
    const int32_t id = s.block_table[static_cast<size_t>(b)];
    if (id < 0 || id >= lim.num_blocks) {
      fail("request {}: block id {} is outside the cache of {} blocks", s.request_id, id,
           lim.num_blocks);
    }
    h.blocks.push_back(id);
  }
  const int first_row = h.rows();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t token = s.tokens[static_cast<size_t>(i)];
    if (token < 0 || token >= lim.vocab_size) {
      fail("request {}: token {} is outside the vocabulary of {}", s.request_id, token,
           lim.vocab_size);
    }
    const int64_t pos = s.start_pos + i;
    h.tokens.push_back(token);
    h.positions.push_back(static_cast<int32_t>(pos));
    h.slots.push_back(int64_t{s.block_table[static_cast<size_t>(pos / lim.block_size)]} *
                          lim.block_size +
                      pos % lim.block_size);
    h.row_seq.push_back(seq);
  }
  return first_row;
}

void add_logit_rows(const ScheduledSeq& s, int first_row, HostStep& h) {
  const auto n = static_cast<int64_t>(s.tokens.size());
  for (int64_t i = n - s.num_logits; i < n; ++i) {
    h.logit_rows.push_back(static_cast<int32_t>(first_row + i));
  }
}

}  // namespace

HostStep host_step_from_plan(const StepPlan& plan, const StepLimits& lim) {
  HostStep h;
  std::vector<int> first_rows(plan.seqs.size(), -1);
  // Pass 0 lays out the one-token sequences (the GEMMs' decode rows), pass 1 the others.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      const ScheduledSeq& s = plan.seqs[i];
      const auto n = static_cast<int>(s.tokens.size());
      if ((n == 1) != (pass == 0)) continue;
      const int first_row = first_rows[i] = add_sequence(s, lim, h);
      const auto seq = static_cast<int32_t>(h.seq_block_offset.size() - 1);
      if (n <= lim.max_decode_tokens) {
        for (int r = 0; r < n; ++r) h.decode_rows.push_back(first_row + r);
      } else {
        for (int t = 0; t < n; t += lim.prefill_tile_rows) {
          h.tiles.insert(h.tiles.end(),
                         {seq, first_row + t, std::min(lim.prefill_tile_rows, n - t)});
        }
      }
    }
    if (pass == 0) h.small_gemm_rows = h.rows();
  }
  for (size_t i = 0; i < plan.seqs.size(); ++i) add_logit_rows(plan.seqs[i], first_rows[i], h);
  return h;
}

HostStep host_step_padded(const StepPlan& plan, const StepLimits& lim, int padded) {
  HostStep h;
  for (const ScheduledSeq& s : plan.seqs) add_logit_rows(s, add_sequence(s, lim, h), h);
  while (h.rows() < padded) {
    h.tokens.push_back(0);
    h.positions.push_back(-1);
    h.slots.push_back(-1);
    h.row_seq.push_back(static_cast<int32_t>(h.seq_block_offset.size()));
    h.seq_block_offset.push_back(static_cast<int32_t>(h.blocks.size()));
    h.logit_rows.push_back(h.rows() - 1);
  }
  for (int r = 0; r < padded; ++r) h.decode_rows.push_back(r);
  h.small_gemm_rows = padded;
  return h;
}

void StepBuffers::layout(int cap_rows, int64_t cap_blocks) {
  cap_rows_ = cap_rows;
  cap_blocks_ = cap_blocks;
  const auto rows = static_cast<size_t>(cap_rows);
  auto align = [](size_t v) { return (v + 255) / 256 * 256; };
  size_t at = 0;
  off_slots_ = at, at = align(at + rows * 8);
  off_tokens_ = at, at = align(at + rows * 4);
  off_positions_ = at, at = align(at + rows * 4);
  off_row_seq_ = at, at = align(at + rows * 4);
  off_seq_block_offset_ = at, at = align(at + rows * 4);
  off_logit_rows_ = at, at = align(at + rows * 4);
  off_decode_rows_ = at, at = align(at + rows * 4);
  off_tiles_ = at, at = align(at + rows * 12);
  off_blocks_ = at, at = align(at + static_cast<size_t>(cap_blocks) * 4);
  total_ = at;
  device_.reserve(total_);
  host_.reserve(total_);
}

void StepBuffers::init(int cap_rows, int64_t cap_blocks) {
  layout(cap_rows, cap_blocks);
}

bool StepBuffers::upload(const HostStep& step, cudaStream_t stream) {
  bool moved = false;
  if (step.rows() > cap_rows_ || static_cast<int64_t>(step.blocks.size()) > cap_blocks_) {
    const void* before = device_.as<void>();
    layout(std::max(step.rows(), cap_rows_ * 2),
           std::max<int64_t>(step.blocks.size(), cap_blocks_ * 2));
    moved = device_.as<void>() != before;
  }
  copy(step, stream);
  return moved;
}

void StepBuffers::upload_fixed(const HostStep& step, cudaStream_t stream) {
  if (step.rows() > cap_rows_ || static_cast<int64_t>(step.blocks.size()) > cap_blocks_) {
    fail("step of {} rows and {} blocks does not fit buffers of {} rows and {} blocks", step.rows(),
         step.blocks.size(), cap_rows_, cap_blocks_);
  }
  copy(step, stream);
}

void StepBuffers::copy(const HostStep& h, cudaStream_t stream) {
  small_gemm_rows_ = h.small_gemm_rows;
  char* base = host_.as<char>();
  auto put = [&](size_t off, const auto& v) {
    if (!v.empty()) std::memcpy(base + off, v.data(), v.size() * sizeof(v[0]));
  };
  put(off_slots_, h.slots);
  put(off_tokens_, h.tokens);
  put(off_positions_, h.positions);
  put(off_row_seq_, h.row_seq);
  put(off_seq_block_offset_, h.seq_block_offset);
  put(off_logit_rows_, h.logit_rows);
  put(off_decode_rows_, h.decode_rows);
  put(off_tiles_, h.tiles);
  put(off_blocks_, h.blocks);
  const size_t bytes = off_blocks_ + h.blocks.size() * 4;
  PACELINE_CUDA_CHECK(
      cudaMemcpyAsync(device_.as<char>(), base, bytes, cudaMemcpyHostToDevice, stream));
}

RowInputs StepBuffers::row_inputs() const {
  RowInputs in;
  in.tokens = ptr<int32_t>(off_tokens_);
  in.positions = ptr<int32_t>(off_positions_);
  in.slots = ptr<int64_t>(off_slots_);
  in.row_seq = ptr<int32_t>(off_row_seq_);
  in.seq_block_offset = ptr<int32_t>(off_seq_block_offset_);
  in.blocks = ptr<int32_t>(off_blocks_);
  return in;
}

}  // namespace paceline::cuda
