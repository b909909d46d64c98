//===- HalfFloat.h - 16-bit floats widened to float32 -----------*- C++ -*-===//

#ifndef TFM_RUNTIME_HALFFLOAT_H
#define TFM_RUNTIME_HALFFLOAT_H

#include <cstdint>
#include <cstring>

namespace tfm::rt {

/// IEEE binary16, exactly (every half value is a float value), including
/// subnormals, infinities and NaNs.
inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    // Subnormal: mantissa * 2^-24, exact in float.
    float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31)
    bits = sign | 0x7f800000u | (mantissa << 13);
  else
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

/// bfloat16 is the top half of a float32.
inline float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

} // namespace tfm::rt

#endif // TFM_RUNTIME_HALFFLOAT_H
