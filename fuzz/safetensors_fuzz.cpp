// libFuzzer target over the safetensors reader: the input is a whole file image. Properties:
// parsing either succeeds or throws paceline::Error, and every view of an accepted file lies
// inside the image (each element is read, so AddressSanitizer sees any view that does not).
// Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "fuzz/fuzz_check.h"
#include "model/safetensors.h"

namespace {

using namespace paceline;
using paceline::fuzz::require;

void check_view(const TensorView& view, const uint8_t* begin, const uint8_t* end) {
  const auto* data = static_cast<const uint8_t*>(view.data);
  int64_t nbytes = view.nbytes();
  require(nbytes >= 0, "negative tensor size");
  if (nbytes == 0) return;
  require(data >= begin && data <= end && nbytes <= end - data, "a view leaves the file");
  std::vector<float> values(static_cast<size_t>(view.numel()));
  view.to_f32(values.data());
  volatile float sink = view.at(view.numel() - 1);
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto tensors = safetensors_parse(data, size, "fuzz.safetensors");
    for (const auto& [name, view] : tensors) check_view(view, data, data + size);
  } catch (const Error&) {
  }
  return 0;
}
