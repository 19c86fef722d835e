#include "server/request_id.h"

#include <cstdint>
#include <random>

namespace paceline {

std::string generate_request_id() {
  thread_local std::mt19937_64 rng = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  for (size_t half = 0; half < 2; ++half) {
    uint64_t bits = rng();
    for (size_t i = 0; i < 16; ++i, bits >>= 4) id[half * 16 + i] = kHex[bits & 0xf];
  }
  return id;
}

std::string request_id_for(std::string_view sent) {
  if (sent.empty() || sent.size() > kMaxRequestIdBytes) return generate_request_id();
  for (char c : sent) {
    if (c <= ' ' || c > '~') return generate_request_id();
  }
  return std::string(sent);
}

}  // namespace paceline
