#pragma once
// nginx's consistent hash (`hash KEY consistent`, ngx_http_upstream_hash_module), as a ring the
// simulator routes sessions with, so that it predicts which replica each session lands on behind
// a real nginx, the imbalance of a real ring included.
//
// The facts it follows (nginx 1.22's module; none of its code): every server of weight 1 puts
// 160 points on a ring of 32-bit values. A server is named as its `server` line writes it
// ("127.0.0.1:8001"); the name splits at its last ':' when only digits follow, and the points
// hash on a CRC-32 begun over the host, one zero byte and the port, continued for point j by
// the 4 bytes (little-endian) of point j - 1's hash (0 for the first), then finished. The points
// are sorted, and of equal hashes the first is kept. A request goes to the first point at or
// after the CRC-32 of its key, wrapping past the last to the first. An empty key goes round
// robin, as does an upstream of one server.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paceline::sim {

// CRC-32 (IEEE 802.3, reflected, the one zlib and nginx use) of `bytes`, continuing `crc` (the
// state before finishing: start from kCrc32Init, finish by inverting).
inline constexpr uint32_t kCrc32Init = 0xffffffffu;
uint32_t crc32_update(uint32_t crc, std::string_view bytes);
inline uint32_t crc32(std::string_view bytes) {
  return ~crc32_update(kCrc32Init, bytes);
}

class ConsistentHashRing {
 public:
  static constexpr int kPointsPerWeight = 160;
  // `servers` as nginx's `server` lines name them, each of weight 1; at least one.
  explicit ConsistentHashRing(std::vector<std::string> servers);

  // The index in `servers` of the server a non-empty key goes to.
  int server_of(std::string_view key) const;
  // The share of the ring (of all 2^32 keys) each server owns: a real ring's imbalance.
  std::vector<double> shares() const;
  const std::vector<std::string>& servers() const { return servers_; }

 private:
  struct Point {
    uint32_t hash;
    int server;
  };
  std::vector<std::string> servers_;
  std::vector<Point> points_;  // ascending hash, no two equal
};

// The names scripts/serve_replicas gives its N replicas behind nginx listening on `port`:
// 127.0.0.1:port+1, ..., 127.0.0.1:port+N.
std::vector<std::string> serve_replicas_servers(int n, int port = 8000);

}  // namespace paceline::sim
