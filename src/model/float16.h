#pragma once
// IEEE half (f16) and bfloat16 <-> float32, bit-exact: subnormals, infinities and NaNs survive.
// float32 -> 16 bits rounds to nearest, ties to even, as PyTorch does. Inline: weight loading and
// the CPU kernels convert every element.
#include <cstdint>
#include <cstring>

namespace paceline {
namespace float16_detail {

inline uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace float16_detail

inline float f16_to_f32(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f)
    return float16_detail::float_of(sign | 0x7f800000 | (mantissa << 13));  // inf, NaN
  if (exponent != 0)
    return float16_detail::float_of(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return float16_detail::float_of(sign);
  // Subnormal: mantissa * 2^-24. Shift the leading one up to the implicit-bit position, and
  // lower the exponent by one for each shift.
  uint32_t exp32 = 113;  // float exponent field of 2^-14, the smallest normal f16
  while ((mantissa & 0x400) == 0) {
    mantissa <<= 1;
    --exp32;
  }
  return float16_detail::float_of(sign | (exp32 << 23) | ((mantissa & 0x3ff) << 13));
}

inline float bf16_to_f32(uint16_t bits) {
  return float16_detail::float_of(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t f32_to_f16(float value) {
  uint32_t bits = float16_detail::bits_of(value);
  auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) {  // NaN: keep the top payload bits, force quiet so it stays NaN
    return static_cast<uint16_t>(sign | 0x7e00 | ((magnitude >> 13) & 0x3ff));
  }
  // 65520 (halfway between 65504, the largest f16, and 65536) and above round to infinity.
  if (magnitude >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);
  uint32_t exponent = magnitude >> 23;
  uint32_t mantissa = magnitude & 0x7fffff;
  if (exponent >= 113) {  // normal f16: drop 13 mantissa bits, rounding half to even
    uint32_t half = ((exponent - 112) << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // a carry may reach inf: right
    return static_cast<uint16_t>(sign | half);
  }
  // Subnormal f16 or zero: round(value * 2^24) in units of 2^-24. Below 2^-25 (exponent < 102)
  // that is zero; 2^-25 itself is a tie that goes to even, zero, in the general path below.
  if (exponent < 102) return sign;
  uint32_t full = mantissa | 0x800000;  // implicit leading one; exponent >= 102 here
  uint32_t shift = 126 - exponent;      // 14 .. 24
  uint32_t half = full >> shift;
  uint32_t rest = full & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1))) ++half;  // may become the smallest normal
  return static_cast<uint16_t>(sign | half);
}

inline uint16_t f32_to_bf16(float value) {
  uint32_t bits = float16_detail::bits_of(value);
  if ((bits & 0x7fffffff) > 0x7f800000) {  // NaN: truncate and force quiet so it stays NaN
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  }
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);  // half to even; may carry into inf: right
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace paceline
