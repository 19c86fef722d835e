// nginx's consistent hash ring (`hash $http_x_session_id consistent`), which the simulator's
// session router follows. That it puts sessions where a real nginx does is checked against a
// real nginx in tests/replicas/serve_replicas_test.sh; here, its parts and its properties.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "sim/consistent_hash_ring.h"

namespace paceline::sim {
namespace {

// Session keys as the bench makes them: "<session>-<12 hex digits of the play's marker>".
std::string key_of(int i) {
  return "session-" + std::to_string(i) + "-00000000000" + std::to_string(i % 10);
}

TEST(ConsistentHashRing, Crc32IsZlibs) {
  EXPECT_EQ(crc32("123456789"), 0xcbf43926u);  // the check value of CRC-32/ISO-HDLC
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("a"), 0xe8b7be43u);
  // Continuing a CRC over two pieces is the CRC of the whole.
  EXPECT_EQ(~crc32_update(crc32_update(kCrc32Init, "1234"), "56789"), crc32("123456789"));
}

TEST(ConsistentHashRing, ServeReplicasNamesItsReplicasAsItsNginxConfigDoes) {
  EXPECT_EQ(serve_replicas_servers(3),
            (std::vector<std::string>{"127.0.0.1:8001", "127.0.0.1:8002", "127.0.0.1:8003"}));
  EXPECT_EQ(serve_replicas_servers(1, 20000), std::vector<std::string>{"127.0.0.1:20001"});
}

TEST(ConsistentHashRing, SharesAreTheFractionsOfKeysEachServerGets) {
  const ConsistentHashRing ring(serve_replicas_servers(3));
  const std::vector<double> shares = ring.shares();
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_NEAR(shares[0] + shares[1] + shares[2], 1.0, 1e-9);
  std::vector<int> got(3, 0);
  constexpr int kKeys = 30000;
  for (int i = 0; i < kKeys; ++i) ++got[static_cast<size_t>(ring.server_of(key_of(i)))];
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_NEAR(static_cast<double>(got[s]) / kKeys, shares[s], 0.015) << s;
    EXPECT_GT(shares[s], 0.2) << s;  // 160 points each: uneven, but no server starves
  }
}

// The point of a consistent ring: a server added takes keys only for itself; none move between
// the servers that were there.
TEST(ConsistentHashRing, AddingAServerMovesKeysOnlyToIt) {
  const ConsistentHashRing two(serve_replicas_servers(2));
  const ConsistentHashRing three(serve_replicas_servers(3));
  int moved = 0;
  for (int i = 0; i < 5000; ++i) {
    const int before = two.server_of(key_of(i)), after = three.server_of(key_of(i));
    if (before != after) {
      EXPECT_EQ(after, 2) << key_of(i);
      ++moved;
    }
  }
  EXPECT_GT(moved, 1000);  // about a third
  EXPECT_LT(moved, 2500);
}

TEST(ConsistentHashRing, ThePortIsPartOfTheServersPlace) {
  // Same hosts, other ports: another ring, so most keys are placed differently.
  const ConsistentHashRing a({"127.0.0.1:8001", "127.0.0.1:8002"});
  const ConsistentHashRing b({"127.0.0.1:9001", "127.0.0.1:9002"});
  int differ = 0;
  for (int i = 0; i < 2000; ++i) differ += a.server_of(key_of(i)) != b.server_of(key_of(i));
  EXPECT_GT(differ, 400);
  EXPECT_THROW(ConsistentHashRing({}), Error);
}

}  // namespace
}  // namespace paceline::sim
