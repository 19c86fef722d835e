#pragma once
// One token's change to one row of logits, as the host and the GPU both apply it: the same
// float32 operations in the same order, so both executors draw from the same processed logits.
// Plain data and no standard headers: the CUDA kernels include it.
#include <cstdint>

#if defined(__CUDACC__)
#define PACELINE_HOST_DEVICE __host__ __device__
#else
#define PACELINE_HOST_DEVICE
#endif

namespace paceline {

struct LogitAdjustment {
  int32_t row = 0;  // which row of a batch of logits (the CUDA executor's); 0 for one row
  int32_t token = 0;
  float bias = 0.0f;        // logit_bias
  float repetition = 1.0f;  // repetition_penalty when the token is in the prompt or output, else 1
  float offset = 0.0f;      // frequency_penalty * count + presence_penalty, count in the output
};

// vLLM's order: bias, then the repetition penalty (divides a positive logit, multiplies a
// negative one), then the frequency and presence penalties. On the GPU the operations are the
// rounded intrinsics, which nvcc never fuses into an FMA, so that they round as the host's do.
PACELINE_HOST_DEVICE inline float adjusted_logit(float logit, const LogitAdjustment& a) {
#if defined(__CUDA_ARCH__)
  float v = __fadd_rn(logit, a.bias);
  if (a.repetition != 1.0f) v = v > 0.0f ? __fdiv_rn(v, a.repetition) : __fmul_rn(v, a.repetition);
  return __fsub_rn(v, a.offset);
#else
  float v = logit + a.bias;
  if (a.repetition != 1.0f) v = v > 0.0f ? v / a.repetition : v * a.repetition;
  return v - a.offset;
#endif
}

}  // namespace paceline
