#pragma once
// The id of one HTTP exchange, as vLLM and most proxies use it: the client's X-Request-Id when it
// sent a usable one, else a fresh random one. Every response echoes it in X-Request-Id, and the
// server's log lines about the request name it, so a client's report can be matched to the log.
#include <string>
#include <string_view>

namespace paceline {

inline constexpr size_t kMaxRequestIdBytes = 256;

// 32 lower-case hex digits from a per-thread generator seeded by std::random_device.
std::string generate_request_id();
// `sent` when it is 1 to kMaxRequestIdBytes visible ASCII characters (no space, no control), else
// a generated id: an id that is logged and echoed must not be able to forge log lines or headers.
std::string request_id_for(std::string_view sent);

}  // namespace paceline
