#pragma once
// How make_dummy_weights fills a tensor, exposed so that another device can generate the same
// bits in place: every element is a pure function of (seed, tensor name, element index).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paceline {

// FNV-1a, 64 bit: a fixed hash of tensor names, the same on every platform.
uint64_t fnv1a64(std::string_view text);

// Element i of a dummy tensor is center + half_width * u, u uniform in [-1, 1) on a 2^-23 grid.
struct DummyInit {
  uint64_t key = 0;  // from seed and name; selects the tensor's stream of random numbers
  float center = 0.0f;
  float half_width = 0.0f;
};
// The init of one tensor, from its Hugging Face name and shape ([out, in] for linear layers).
DummyInit dummy_init(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed);

// Element `index` of the tensor described by `init`, as float32 (before rounding to the dtype).
float dummy_value(const DummyInit& init, uint64_t index);

}  // namespace paceline
