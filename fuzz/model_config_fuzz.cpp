// libFuzzer target over config.json loading. Properties: a config either loads or throws
// paceline::Error (never a JSON library exception, never undefined behaviour, which UBSan turns
// into a crash); an accepted config's derived sizes (parameters, KV bytes per token, every
// expected tensor's shape) are positive and computed without overflow.
// Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "fuzz/fuzz_check.h"
#include "model/config.h"
#include "model/weights.h"

namespace {

using namespace paceline;
using paceline::fuzz::require;

void check_config(const ModelConfig& config) {
  require(config.num_parameters() > 0, "no parameters");
  require(config.kv_bytes_per_token(2) > 0, "no KV bytes per token");
  require(config.max_position_embeddings > 0, "no context length");
  for (const ExpectedTensor& tensor : expected_tensors(config)) {
    int64_t numel = 1;
    for (int64_t dim : tensor.shape) {
      require(dim > 0, "a tensor dimension is not positive");
      require(!__builtin_mul_overflow(numel, dim, &numel), "a tensor's size overflows int64");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  ModelConfig config;
  try {
    config = model_config_from_json(text, "config.json");
  } catch (const Error&) {
    return 0;
  }
  check_config(config);
  return 0;
}
