#include "sim/consistent_hash_ring.h"

#include <algorithm>
#include <array>

#include "base/error.h"

namespace paceline::sim {
namespace {

std::array<uint32_t, 256> make_crc32_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

const std::array<uint32_t, 256> kCrc32Table = make_crc32_table();

// "host:port" splits at the last ':' when only digits (at least one) follow; else all is host.
std::pair<std::string_view, std::string_view> host_and_port(std::string_view name) {
  const size_t colon = name.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == name.size()) return {name, {}};
  const std::string_view port = name.substr(colon + 1);
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return {name, {}};
  }
  return {name.substr(0, colon), port};
}

}  // namespace

uint32_t crc32_update(uint32_t crc, std::string_view bytes) {
  for (unsigned char b : bytes) crc = kCrc32Table[(crc ^ b) & 0xff] ^ (crc >> 8);
  return crc;
}

ConsistentHashRing::ConsistentHashRing(std::vector<std::string> servers)
    : servers_(std::move(servers)) {
  if (servers_.empty()) fail("a consistent hash ring needs at least one server");
  for (size_t s = 0; s < servers_.size(); ++s) {
    const auto [host, port] = host_and_port(servers_[s]);
    uint32_t base = crc32_update(kCrc32Init, host);
    base = crc32_update(base, std::string_view("\0", 1));
    base = crc32_update(base, port);
    uint32_t prev = 0;
    for (int j = 0; j < kPointsPerWeight; ++j) {
      const char le[4] = {static_cast<char>(prev & 0xff), static_cast<char>((prev >> 8) & 0xff),
                          static_cast<char>((prev >> 16) & 0xff),
                          static_cast<char>((prev >> 24) & 0xff)};
      const uint32_t hash = ~crc32_update(base, std::string_view(le, 4));
      points_.push_back({hash, static_cast<int>(s)});
      prev = hash;
    }
  }
  std::stable_sort(points_.begin(), points_.end(),
                   [](const Point& a, const Point& b) { return a.hash < b.hash; });
  points_.erase(std::unique(points_.begin(), points_.end(),
                            [](const Point& a, const Point& b) { return a.hash == b.hash; }),
                points_.end());
}

int ConsistentHashRing::server_of(std::string_view key) const {
  const uint32_t h = crc32(key);
  auto it = std::lower_bound(points_.begin(), points_.end(), h,
                             [](const Point& p, uint32_t v) { return p.hash < v; });
  if (it == points_.end()) it = points_.begin();
  return it->server;
}

// A point owns the keys after the point before it, up to and including its own hash; the first
// point also owns the keys past the last.
std::vector<double> ConsistentHashRing::shares() const {
  std::vector<double> share(servers_.size(), 0.0);
  constexpr double kRing = 4294967296.0;
  for (size_t i = 0; i < points_.size(); ++i) {
    const double from = i == 0 ? static_cast<double>(points_.back().hash) - kRing
                               : static_cast<double>(points_[i - 1].hash);
    share[static_cast<size_t>(points_[i].server)] +=
        (static_cast<double>(points_[i].hash) - from) / kRing;
  }
  return share;
}

std::vector<std::string> serve_replicas_servers(int n, int port) {
  std::vector<std::string> names;
  for (int k = 0; k < n; ++k) names.push_back("127.0.0.1:" + std::to_string(port + 1 + k));
  return names;
}

}  // namespace paceline::sim
