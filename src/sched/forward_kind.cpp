#include "sched/step_plan.h"

namespace paceline {

const char* forward_kind_name(ForwardKind kind) {
  switch (kind) {
    case ForwardKind::kPrefill:
      return "prefill";
    case ForwardKind::kDecode:
      return "decode";
    case ForwardKind::kMixed:
      return "mixed";
  }
  return "unknown";
}

std::optional<ForwardKind> forward_kind_from_name(std::string_view name) {
  if (name == "prefill") return ForwardKind::kPrefill;
  if (name == "decode") return ForwardKind::kDecode;
  if (name == "mixed") return ForwardKind::kMixed;
  return std::nullopt;
}

}  // namespace paceline
