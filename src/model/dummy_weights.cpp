// make_dummy_weights: random weights of the right shapes for any config, like vLLM's
// --load-format dummy, to run and benchmark a model without its checkpoint.
//
// Values: a counter-based generator (the splitmix64 output function applied to key + index), so
// each element is computed alone: no sequential state, the same bits for any thread count, and
// a GPU kernel can fill its own memory identically. The distributions keep activations sane:
//  - linear weights [out, in]: uniform in +-1/sqrt(in) (PyTorch's nn.Linear default), so each
//    projection keeps its output variance at a third of its input's;
//  - embeddings: uniform with standard deviation 0.02 (Hugging Face's initializer_range), which
//    RMSNorm rescales before the first layer sees them;
//  - RMSNorm weights (input/post-attention/final norms, Qwen3 q_norm/k_norm): 1 +- 0.05.
// Tensors are generated on first get(): a large config costs memory only for what is used, and
// each tensor is written once, straight into its final dtype.
#include "model/dummy_weights.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "model/float16.h"
#include "model/weights.h"

namespace paceline {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // splitmix64's increment

uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_range(const DummyInit& init, DType dtype, void* out, int64_t begin, int64_t end) {
  switch (dtype) {
    case DType::kF32: {
      auto* dst = static_cast<float*>(out);
      for (int64_t i = begin; i < end; ++i) dst[i] = dummy_value(init, static_cast<uint64_t>(i));
      return;
    }
    case DType::kF16: {
      auto* dst = static_cast<uint16_t*>(out);
      for (int64_t i = begin; i < end; ++i) {
        dst[i] = f32_to_f16(dummy_value(init, static_cast<uint64_t>(i)));
      }
      return;
    }
    case DType::kBF16: {
      auto* dst = static_cast<uint16_t*>(out);
      for (int64_t i = begin; i < end; ++i) {
        dst[i] = f32_to_bf16(dummy_value(init, static_cast<uint64_t>(i)));
      }
      return;
    }
  }
}

// Splits a tensor over threads; each element depends only on its index, so the split does not
// change a single bit.
void fill(const DummyInit& init, DType dtype, void* out, int64_t numel) {
  constexpr int64_t kPerThread = int64_t{1} << 20;
  int64_t threads = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()),
                                      (numel + kPerThread - 1) / kPerThread);
  if (threads <= 1) {
    fill_range(init, dtype, out, 0, numel);
    return;
  }
  std::vector<std::thread> pool;
  int64_t chunk = (numel + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    int64_t begin = t * chunk, end = std::min(numel, begin + chunk);
    if (begin < end) pool.emplace_back(fill_range, std::cref(init), dtype, out, begin, end);
  }
  for (std::thread& thread : pool) thread.join();
}

class DummyWeights final : public Weights {
 public:
  DummyWeights(const ModelConfig& config, uint64_t seed, DType dtype) {
    for (ExpectedTensor& expected : expected_tensors(config)) {
      auto slot = std::make_unique<Slot>();
      slot->init = dummy_init(expected.name, expected.shape, seed);
      slot->view.dtype = dtype;
      slot->view.shape = std::move(expected.shape);
      index_.emplace(std::move(expected.name), slots_.size());
      slots_.push_back(std::move(slot));
    }
  }

  const TensorView& get(const std::string& name) const override {
    auto it = index_.find(name);
    if (it == index_.end()) fail("dummy weights: no tensor '{}' in this model", name);
    Slot& slot = *slots_[it->second];
    std::call_once(slot.once, [&slot] {
      int64_t bytes = slot.view.nbytes();
      slot.storage.reset(new unsigned char[static_cast<size_t>(std::max<int64_t>(bytes, 1))]);
      fill(slot.init, slot.view.dtype, slot.storage.get(), slot.view.numel());
      slot.view.data = slot.storage.get();
    });
    return slot.view;
  }

  bool has(const std::string& name) const override { return index_.count(name) != 0; }

 private:
  struct Slot {
    DummyInit init;
    TensorView view;  // data stays null until the first get()
    std::once_flag once;
    std::unique_ptr<unsigned char[]> storage;
  };
  std::vector<std::unique_ptr<Slot>> slots_;
  std::map<std::string, size_t> index_;
};

}  // namespace

uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char ch : text) {
    hash ^= static_cast<unsigned char>(ch);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

DummyInit dummy_init(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed) {
  DummyInit init;
  init.key = splitmix64_mix(splitmix64_mix(seed) ^ fnv1a64(name));
  if (std::string_view(name).ends_with("norm.weight")) {
    init.center = 1.0f;
    init.half_width = 0.05f;
  } else if (std::string_view(name).ends_with("embed_tokens.weight")) {
    init.half_width = 0.02f * std::sqrt(3.0f);  // standard deviation 0.02
  } else {
    int64_t fan_in = shape.empty() ? 1 : std::max<int64_t>(shape.back(), 1);
    init.half_width = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
  }
  return init;
}

// Doubles make this exact in every compiler and on every device: r has 24 bits and step the 24
// of a float, so r * step is exact and a fused multiply-add gives the same double as a separate
// multiply and add. Then one rounding to float.
float dummy_value(const DummyInit& init, uint64_t index) {
  uint64_t bits = splitmix64_mix(init.key + (index + 1) * kGolden);
  auto r = static_cast<int64_t>(bits >> 40) - (int64_t{1} << 23);  // uniform in [-2^23, 2^23)
  double step = static_cast<double>(init.half_width) * 0x1p-23;
  return static_cast<float>(static_cast<double>(init.center) + static_cast<double>(r) * step);
}

std::unique_ptr<Weights> make_dummy_weights(const ModelConfig& config, uint64_t seed, DType dtype) {
  return std::make_unique<DummyWeights>(config, seed, dtype);
}

}  // namespace paceline
