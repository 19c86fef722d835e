#pragma once
// A prefill attention problem for tests/cuda: sequences with cached prefixes and chunks of rows,
// random q, K and V over shuffled block tables, the tiles the kernels take, a double-precision
// reference (also on e4m3 operands, for the FP8 kernel), and the buffers of a launch.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "decode_test_util.h"
#include "exec/cuda/kernels.h"

namespace paceline::testing {

// x rounded to e4m3 (nearest, saturating at +-448), as the kernels' conversions do.
inline double e4m3_round(float x) {
  return e4m3_value(static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)));
}

// Every bf16 value rounded to e4m3, by its bits: the e4m3 reference reads K and V through this
// table. (Converting on every use, __nv_cvt_float_to_fp8's host emulation and two ldexp per
// product, made one reference of the Qwen3-8B case take about 30 s on a host core, and the FP8
// test about 3 minutes: it looked like a hang.)
inline const std::vector<double>& e4m3_of_bf16() {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (uint32_t b = 0; b < 65536; ++b) t[b] = e4m3_round(bf16_value(static_cast<uint16_t>(b)));
    return t;
  }();
  return table;
}

// q as the FP8 kernel multiplies it: times 448 / amax in float, rounded to e4m3, and the scale
// undone (the kernel undoes it on the scores).
inline void e4m3_scaled(std::vector<double>& q) {
  float amax = 0.0f;
  for (double x : q) amax = std::max(amax, std::fabs(static_cast<float>(x)));
  if (amax == 0.0f) return;
  const float inv = 448.0f / amax;
  for (double& x : q) x = e4m3_round(static_cast<float>(x) * inv) * (static_cast<double>(amax) / 448.0);
}

struct Chunk {
  int cached = 0;  // keys already in the cache before the chunk
  int rows = 0;    // rows computed this step
};

struct PrefillProblem {
  cuda::AttentionShape shape;
  int block_size = 16;
  std::vector<Chunk> seqs;
  std::vector<std::vector<int32_t>> tables;
  std::vector<uint16_t> k, v;  // bf16, head-major blocks (cuda::kv_row)
  std::vector<float> qkv;      // [rows][q + 2 kv]
  std::vector<int32_t> positions, row_seq, seq_offset, blocks;
  int64_t num_blocks = 0;
  int num_rows = 0;

  int width() const { return (shape.num_heads + 2 * shape.num_kv_heads) * shape.head_dim; }
  int kv_size() const { return shape.num_kv_heads * shape.head_dim; }

  PrefillProblem(cuda::AttentionShape s, int bs, std::vector<Chunk> chunks, uint64_t seed)
      : shape(s), block_size(bs), seqs(std::move(chunks)) {
    std::vector<int> ctx;
    for (const Chunk& c : seqs) {
      ctx.push_back(c.cached + c.rows);
      num_blocks += (c.cached + c.rows + bs - 1) / bs;
    }
    num_blocks += 3;
    EXPECT_TRUE(shuffled_tables(ctx, bs, num_blocks, seed, tables));
    for (size_t i = 0; i < seqs.size(); ++i) {
      seq_offset.push_back(static_cast<int32_t>(blocks.size()));
      blocks.insert(blocks.end(), tables[i].begin(), tables[i].end());
      for (int r = 0; r < seqs[i].rows; ++r) {
        positions.push_back(seqs[i].cached + r);
        row_seq.push_back(static_cast<int32_t>(i));
      }
    }
    num_rows = static_cast<int>(positions.size());
    FastRandom rng(seed * 7 + 1);
    const size_t elems = static_cast<size_t>(num_blocks) * bs * kv_size();
    k.resize(elems);
    v.resize(elems);
    for (size_t i = 0; i < elems; ++i) k[i] = bf16_bits(rng.uniform());
    for (size_t i = 0; i < elems; ++i) v[i] = bf16_bits(rng.uniform());
    qkv.resize(static_cast<size_t>(num_rows) * width());
    for (float& x : qkv) x = 6.0f * rng.uniform();  // scores with a spread of a few units
  }

  // Tiles of at most n consecutive rows of one sequence: [seq, first row, count].
  std::vector<int32_t> tiles(int n) const {
    std::vector<int32_t> t;
    int first = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      for (int r = 0; r < seqs[i].rows; r += n) {
        t.insert(t.end(), {static_cast<int32_t>(i), first + r, std::min(n, seqs[i].rows - r)});
      }
      first += seqs[i].rows;
    }
    return t;
  }

  // out[head][d] of row r, in double: causal over keys 0..positions[r] of its sequence. e4m3:
  // on the operands the FP8 kernel multiplies (q scaled per head to e4m3's range and rounded,
  // K and V rounded to e4m3), so that what is left is the rounding of P and of the output.
  std::vector<double> reference(int r, bool e4m3 = false) const {
    const int hd = shape.head_dim, group = shape.num_heads / shape.num_kv_heads;
    const std::vector<int32_t>& table = tables[row_seq[r]];
    const int keys = positions[r] + 1;
    std::vector<double> out(static_cast<size_t>(shape.num_heads) * hd, 0.0), s(keys);
    auto at = [&](int key, int kvh) {  // the head-major blocks (cuda::kv_row)
      return static_cast<size_t>(cuda::kv_row(table[key / block_size], key % block_size, kvh,
                                              shape.num_kv_heads, block_size) *
                                 hd);
    };
    for (int h = 0; h < shape.num_heads; ++h) {
      std::vector<double> q(qkv.begin() + static_cast<ptrdiff_t>(r) * width() + h * hd,
                            qkv.begin() + static_cast<ptrdiff_t>(r) * width() + (h + 1) * hd);
      if (e4m3) e4m3_scaled(q);
      const int kvh = h / group;
      const std::vector<double>& rounded = e4m3_of_bf16();
      auto kv_value = [&](uint16_t bits) {
        return e4m3 ? rounded[bits] : static_cast<double>(bf16_value(bits));
      };
      double mx = -INFINITY;
      for (int key = 0; key < keys; ++key) {
        const uint16_t* kp = &k[at(key, kvh)];
        double dot = 0;
        for (int d = 0; d < hd; ++d) dot += q[d] * kv_value(kp[d]);
        s[key] = dot / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, s[key]);
      }
      double sum = 0;
      for (int key = 0; key < keys; ++key) sum += (s[key] = std::exp(s[key] - mx));
      for (int key = 0; key < keys; ++key) {
        const uint16_t* vp = &v[at(key, kvh)];
        for (int d = 0; d < hd; ++d) out[h * hd + d] += s[key] / sum * kv_value(vp[d]);
      }
    }
    return out;
  }

  // reference(r, e4m3) of every row, the rows spread over the host's cores.
  std::vector<std::vector<double>> references(bool e4m3 = false) const {
    std::vector<std::vector<double>> all(static_cast<size_t>(num_rows));
    const int n = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t) {
      threads.emplace_back([&, t] {
        for (int r = t; r < num_rows; r += n) all[r] = reference(r, e4m3);
      });
    }
    for (std::thread& t : threads) t.join();
    return all;
  }
};

struct PrefillOnDevice {
  const PrefillProblem& p;
  cuda::DeviceBuffer k, v, qkv, positions, row_seq, seq_offset, blocks, out, tiles;

  explicit PrefillOnDevice(const PrefillProblem& pr)
      : p(pr),
        k(upload(pr.k)),
        v(upload(pr.v)),
        qkv(upload(pr.qkv)),
        positions(upload(pr.positions)),
        row_seq(upload(pr.row_seq)),
        seq_offset(upload(pr.seq_offset)),
        blocks(upload(pr.blocks)),
        out(static_cast<size_t>(pr.num_rows) * pr.shape.num_heads * pr.shape.head_dim * 2) {}

  cuda::RowInputs in() const {
    cuda::RowInputs r;
    r.positions = positions.as<int32_t>();
    r.row_seq = row_seq.as<int32_t>();
    r.seq_block_offset = seq_offset.as<int32_t>();
    r.blocks = blocks.as<int32_t>();
    return r;
  }

  // The bf16 cache (k, v); with its size, so that the wgmma kernel may copy it in bulk.
  cuda::LayerCache bf16_cache(bool sized = true) const {
    cuda::LayerCache c{k.as<cuda::bf16>(), v.as<cuda::bf16>(), p.block_size};
    if (sized) c.num_slots = p.num_blocks * p.block_size;
    return c;
  }

  // Attention over tiles of at most tile_rows rows (0: the kernel's own size), into `out`
  // poisoned beforehand; cache: the sized bf16 cache unless given.
  // precision: the kernel launch_attention_prefill chooses for it; only: the tiles of that
  // sequence alone (-1: all).
  std::vector<uint16_t> run(int tile_rows = 0, const cuda::LayerCache* given = nullptr,
                            cuda::PrefillPrecision precision = cuda::PrefillPrecision::bf16,
                            int only = -1) {
    const int n = tile_rows > 0 ? tile_rows : cuda::prefill_tile_rows(p.shape, precision);
    std::vector<int32_t> t = p.tiles(n);
    if (only >= 0) {
      std::vector<int32_t> kept;
      for (size_t i = 0; i < t.size(); i += 3) {
        if (t[i] == only) kept.insert(kept.end(), t.begin() + i, t.begin() + i + 3);
      }
      t = kept;
    }
    tiles = upload(t);
    PACELINE_CUDA_CHECK(cudaMemset(out.as<void>(), 0xff, out.bytes()));
    const cuda::LayerCache cache = given != nullptr ? *given : bf16_cache();
    PACELINE_CUDA_CHECK(cuda::launch_attention_prefill(qkv.as<float>(), tiles.as<int32_t>(),
                                                       static_cast<int>(t.size() / 3), p.shape,
                                                       in(), cache, out.as<cuda::bf16>(), nullptr,
                                                       precision));
    PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
    return download<uint16_t>(out, out.bytes() / 2);
  }
};

// Rows' relative errors against the reference (e4m3: on the FP8 kernel's operands), each checked
// against tolerance; the worst and the root mean square over rows.
struct RowErrors {
  double worst = 0;
  double rms = 0;
};

// refs: p.references(e4m3), computed once for several outputs.
inline RowErrors row_errors(const PrefillProblem& p, const std::vector<std::vector<double>>& refs,
                            const std::vector<uint16_t>& got, double tolerance) {
  const size_t per_row = static_cast<size_t>(p.shape.num_heads) * p.shape.head_dim;
  double worst = 0, sum_sq = 0;
  for (int r = 0; r < p.num_rows; ++r) {
    const std::vector<double>& ref = refs[r];
    double diff = 0, norm = 0;
    bool finite = true;
    for (size_t i = 0; i < per_row; ++i) {
      const double g = bf16_value(got[r * per_row + i]);
      finite = finite && std::isfinite(g);
      diff += (g - ref[i]) * (g - ref[i]);
      norm += ref[i] * ref[i];
    }
    const double e = std::sqrt(diff / norm);
    EXPECT_TRUE(finite) << "row " << r << " (position " << p.positions[r] << ") was not written";
    EXPECT_LE(e, tolerance) << "row " << r << ", position " << p.positions[r];
    worst = std::max(worst, e);
    sum_sq += e * e;
  }
  return {worst, std::sqrt(sum_sq / std::max(1, p.num_rows))};
}

inline RowErrors row_errors(const PrefillProblem& p, const std::vector<uint16_t>& got,
                            double tolerance, bool e4m3 = false) {
  return row_errors(p, p.references(e4m3), got, tolerance);
}

inline double check_against_reference(const PrefillProblem& p, const std::vector<uint16_t>& got) {
  return row_errors(p, got, kBf16Tolerance).worst;
}

}  // namespace paceline::testing
