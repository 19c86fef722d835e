#pragma once
// Inputs of the decode attention kernels for tests/cuda: decode rows with their own contexts and
// block tables, uploaded as the step's RowInputs, and a cheap random number stream.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include <cuda_bf16.h>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/kernels.h"

namespace paceline::testing {

template <typename T>
cuda::DeviceBuffer upload(const std::vector<T>& v) {
  cuda::DeviceBuffer b(std::max<size_t>(1, v.size()) * sizeof(T));
  if (!v.empty()) {
    PACELINE_CUDA_CHECK(cudaMemcpy(b.as<void>(), v.data(), v.size() * sizeof(T),
                                   cudaMemcpyHostToDevice));
  }
  return b;
}

template <typename T>
std::vector<T> download(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  PACELINE_CUDA_CHECK(cudaMemcpy(v.data(), b.as<void>(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// splitmix64: fast enough to fill gigabytes on the host.
struct FastRandom {
  uint64_t state;
  explicit FastRandom(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }  // [-1, 1)
};

inline uint16_t bf16_bits(float f) {
  __nv_bfloat16 h = __float2bfloat16(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

inline float bf16_value(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// An e4m3 byte's value (OCP "fn": bias 7, no infinities), for building FP8 caches on the host.
inline double e4m3_value(uint8_t b) {
  const int sign = b >> 7, exp = (b >> 3) & 15, man = b & 7;
  const double mag = exp == 0 ? man / 8.0 * std::ldexp(1.0, -6) : (1 + man / 8.0) * std::ldexp(1.0, exp - 7);
  return sign ? -mag : mag;
}

// An FP8 cache of random e4m3 bytes of magnitude below 2 (exponent field 0..7), as many as k
// holds, with k and v overwritten by the same values widened to bf16 (exact: every e4m3 value is
// a bf16 value).
inline void random_fp8_cache(uint64_t seed, std::vector<uint16_t>& k, std::vector<uint16_t>& v,
                             std::vector<uint8_t>& k8, std::vector<uint8_t>& v8) {
  FastRandom rng(seed);
  auto pick = [&] {
    const uint64_t r = rng.next();
    return static_cast<uint8_t>((r & 0x80u) | ((r >> 8) & 7u) << 3 | ((r >> 16) & 7u));
  };
  k8.resize(k.size());
  v8.resize(v.size());
  for (size_t i = 0; i < k8.size(); ++i) {
    k8[i] = pick();
    v8[i] = pick();
    k[i] = bf16_bits(static_cast<float>(e4m3_value(k8[i])));
    v[i] = bf16_bits(static_cast<float>(e4m3_value(v8[i])));
  }
}

// The cache of one layer over FP8 K and V on the device; num_slots 0: its size not said (the
// prefill attention then copies by cp.async instead of bulk copies).
inline cuda::LayerCache fp8_layer_cache(const cuda::DeviceBuffer& k8, const cuda::DeviceBuffer& v8,
                                        int block_size, int64_t num_slots = 0) {
  cuda::LayerCache cache;
  cache.block_size = block_size;
  cache.k8 = k8.as<uint8_t>();
  cache.v8 = v8.as<uint8_t>();
  cache.num_slots = num_slots;
  return cache;
}

// How many elements of two outputs differ in any bit.
inline size_t count_differing(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  size_t n = a.size() == b.size() ? 0 : std::max(a.size(), b.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += a[i] != b[i] ? 1 : 0;
  return n;
}

// An output's bits in 64 (FNV-1a over the elements): benches print it so that two builds meant
// to give the same bits can be compared in one run.
inline uint64_t bits_hash(const std::vector<uint16_t>& a) {
  uint64_t h = 1469598103934665603ull;
  for (const uint16_t x : a) {
    h = (h ^ (x & 0xffu)) * 1099511628211ull;
    h = (h ^ (x >> 8)) * 1099511628211ull;
  }
  return h;
}

// Decode rows, one sequence each: row i has context ctx[i] (0: a padding row, position -1) and
// block table tables[i]; `rows` lists them all in order.
struct DecodeRows {
  cuda::DeviceBuffer positions, row_seq, seq_block_offset, blocks, slots, tokens, rows;
  int num_rows = 0;

  DecodeRows(const std::vector<int>& ctx, const std::vector<std::vector<int32_t>>& tables) {
    std::vector<int32_t> pos, seq, offset, flat, list;
    std::vector<int64_t> slot;
    for (size_t i = 0; i < ctx.size(); ++i) {
      pos.push_back(ctx[i] - 1);
      seq.push_back(static_cast<int32_t>(i));
      offset.push_back(static_cast<int32_t>(flat.size()));
      flat.insert(flat.end(), tables[i].begin(), tables[i].end());
      list.push_back(static_cast<int32_t>(i));
      slot.push_back(-1);
    }
    num_rows = static_cast<int>(ctx.size());
    positions = upload(pos);
    row_seq = upload(seq);
    seq_block_offset = upload(offset);
    blocks = upload(flat);
    slots = upload(slot);
    tokens = upload(std::vector<int32_t>(ctx.size(), 0));
    rows = upload(list);
  }

  cuda::RowInputs in() const {
    cuda::RowInputs r;
    r.tokens = tokens.as<int32_t>();
    r.positions = positions.as<int32_t>();
    r.slots = slots.as<int64_t>();
    r.row_seq = row_seq.as<int32_t>();
    r.seq_block_offset = seq_block_offset.as<int32_t>();
    r.blocks = blocks.as<int32_t>();
    return r;
  }
};

// Block tables for contexts ctx over a cache of num_blocks blocks, drawn from a shuffled order so
// that no table is contiguous; returns false when the cache is too small.
inline bool shuffled_tables(const std::vector<int>& ctx, int block_size, int64_t num_blocks,
                            uint64_t seed, std::vector<std::vector<int32_t>>& tables) {
  std::vector<int32_t> order(static_cast<size_t>(num_blocks));
  std::iota(order.begin(), order.end(), 0);
  FastRandom rng(seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
  size_t at = 0;
  tables.assign(ctx.size(), {});
  for (size_t r = 0; r < ctx.size(); ++r) {
    const int64_t need = (ctx[r] + block_size - 1) / block_size;
    if (at + static_cast<size_t>(need) > order.size()) return false;
    tables[r].assign(order.begin() + static_cast<int64_t>(at),
                     order.begin() + static_cast<int64_t>(at + need));
    at += static_cast<size_t>(need);
  }
  return true;
}

}  // namespace paceline::testing
