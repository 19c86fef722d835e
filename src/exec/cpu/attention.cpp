#include "exec/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace paceline {
namespace {

float dot(const float* a, const float* b, int64_t n) {
  // Eight partial sums let the compiler vectorize without reassociation flags.
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float sum = 0.0f;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (float v : acc) sum += v;
  return sum;
}

// One query head of one token against positions [0, last_pos] of its sequence.
void attend_one(const float* query, const PagedKvCache& cache, int64_t layer,
                std::span<const int32_t> block_table, int64_t last_pos, int64_t kv_offset,
                int64_t head_dim, float scale, std::vector<float>& scores, float* out) {
  int64_t num_positions = last_pos + 1;
  int64_t block_size = cache.shape().block_size;
  scores.resize(static_cast<size_t>(num_positions));

  float max_score = -INFINITY;
  for (int64_t p = 0; p < num_positions; ++p) {
    const float* key = cache.key(layer, cache.slot(block_table, p)) + kv_offset;
    float s = dot(query, key, head_dim) * scale;
    scores[p] = s;
    max_score = std::max(max_score, s);
  }
  float denom = 0.0f;
  for (int64_t p = 0; p < num_positions; ++p) {
    scores[p] = std::exp(scores[p] - max_score);
    denom += scores[p];
  }
  std::fill(out, out + head_dim, 0.0f);
  for (int64_t block = 0; block * block_size < num_positions; ++block) {
    int64_t first = block * block_size;
    int64_t count = std::min(block_size, num_positions - first);
    int64_t base_slot = static_cast<int64_t>(block_table[block]) * block_size;
    for (int64_t j = 0; j < count; ++j) {
      const float* value = cache.value(layer, base_slot + j) + kv_offset;
      float w = scores[first + j] / denom;
      for (int64_t d = 0; d < head_dim; ++d) out[d] += w * value[d];
    }
  }
}

}  // namespace

void paged_attention(const float* q, int64_t q_stride, const PagedKvCache& cache, int64_t layer,
                     std::span<const AttentionSeq> seqs, AttentionShape shape, float* out,
                     ThreadPool& pool) {
  int64_t num_rows = 0;
  for (const auto& s : seqs) num_rows = std::max(num_rows, s.first_row + s.num_tokens);
  std::vector<int32_t> seq_of_row(static_cast<size_t>(num_rows), -1);
  for (size_t i = 0; i < seqs.size(); ++i) {
    for (int64_t t = 0; t < seqs[i].num_tokens; ++t) {
      seq_of_row[seqs[i].first_row + t] = static_cast<int32_t>(i);
    }
  }

  int64_t group = shape.num_heads / shape.num_kv_heads;
  int64_t q_width = shape.num_heads * shape.head_dim;
  float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
  pool.parallel_for(num_rows * shape.num_heads, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t item = begin; item < end; ++item) {
      int64_t row = item / shape.num_heads;
      int64_t head = item % shape.num_heads;
      int32_t s = seq_of_row[row];
      if (s < 0) continue;
      const AttentionSeq& seq = seqs[s];
      int64_t last_pos = seq.start_pos + (row - seq.first_row);
      attend_one(q + row * q_stride + head * shape.head_dim, cache, layer, seq.block_table,
                 last_pos, (shape.first_kv_head + head / group) * shape.head_dim,
                 shape.head_dim, scale, scores,
                 out + row * q_width + head * shape.head_dim);
    }
  });
}

}  // namespace paceline
