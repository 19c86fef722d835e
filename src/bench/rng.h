#pragma once
// Seeded randomness for the benchmark. SplitMix64 is a few lines and gives the same numbers on
// every platform and standard library (std:: distributions do not), so a seed names one exact run.
#include <cstdint>
#include <string_view>

namespace paceline::bench {

// One SplitMix64 step as a pure function: a good 64-bit mixer for deriving seeds from keys.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Combines a seed with one more key, order-sensitive: mix_keys(mix_keys(s, a), b).
inline uint64_t mix_keys(uint64_t seed, uint64_t key) {
  return mix64(seed ^ mix64(key));
}

// FNV-1a, to turn a string key (a session id, a marker) into 64 bits.
inline uint64_t hash_string(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1), from the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform in [0, n) for n > 0; the modulo bias is below 2^-40 for any n a benchmark uses.
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t state_;
};

}  // namespace paceline::bench
