#pragma once
// The traces in ../shared/traces, read in place and parsed once per test binary.
#include <string>
#include <vector>

#include "bench/agentx_trace.h"

namespace paceline::bench::test_util {

inline const std::string kTracesDir = PACELINE_SOURCE_DIR "/../shared/traces";

inline const std::vector<AgentxSession>& bundled_agentx_sessions() {
  // Strict: a file the reader would skip fails every test that reads the corpus.
  static const std::vector<AgentxSession> sessions =
      load_agentx(kTracesDir + "/agentx", /*strict=*/true);
  return sessions;
}

}  // namespace paceline::bench::test_util
