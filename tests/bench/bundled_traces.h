#pragma once
// The traces in ../shared/traces, read in place and parsed once per test binary.
#include <string>
#include <vector>

#include "bench/agentx_trace.h"

namespace paceline::bench::test_util {

inline const std::string kTracesDir = PACELINE_SOURCE_DIR "/../shared/traces";

inline const std::vector<AgentxSession>& bundled_agentx_sessions() {
  static const std::vector<AgentxSession> sessions = load_agentx(kTracesDir + "/agentx");
  return sessions;
}

}  // namespace paceline::bench::test_util
