//===- WeightFormat.cpp - GEMM weights rounded to 16 or 8 bits ------------===//

#include "tfm/runtime/WeightFormat.h"
#include "tfm/runtime/HalfFloat.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tfm::rt {

float roundToBFloat16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if (std::isnan(x))
    bits |= 0x00400000u; // quiet, and never rounded into an infinity
  else
    bits += 0x7fffu + ((bits >> 16) & 1u); // to nearest, ties to even
  bits &= 0xffff0000u;
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

float roundToHalf(float x) {
  if (std::isnan(x) || std::isinf(x))
    return x;
  float magnitude = std::fabs(x);
  // Half values near `magnitude` are multiples of 2^(e - 10), e its binary
  // exponent (at least -14: below it the subnormals' fixed step 2^-24).
  // Scaling to that step and rounding with the current (nearest-even) mode
  // is exact: the scale is a power of two.
  int exponent = std::max(std::ilogb(magnitude), -14);
  if (magnitude == 0.0f)
    return x;
  float step = std::ldexp(1.0f, exponent - 10);
  float rounded = std::nearbyint(magnitude / step) * step;
  if (rounded > 65504.0f)
    rounded = INFINITY;
  return std::copysign(rounded, x);
}

uint16_t bfloat16Bits(float x) {
  float rounded = roundToBFloat16(x);
  uint32_t bits;
  std::memcpy(&bits, &rounded, sizeof(bits));
  return uint16_t(bits >> 16);
}

uint16_t halfBits(float x) {
  float rounded = roundToHalf(x);
  uint16_t sign = std::signbit(rounded) ? 0x8000u : 0u;
  float magnitude = std::fabs(rounded);
  if (std::isnan(rounded))
    return uint16_t(sign | 0x7e00u);
  if (std::isinf(rounded))
    return uint16_t(sign | 0x7c00u);
  if (magnitude < 6.103515625e-05f) // below the smallest normal: 2^-24 steps
    return uint16_t(sign | uint16_t(magnitude * 16777216.0f));
  int exponent = std::ilogb(magnitude);                            // -14..15
  float mantissa = std::ldexp(magnitude, 10 - exponent) - 1024.0f; // exact
  return uint16_t(sign | uint16_t((exponent + 15) << 10) | uint16_t(mantissa));
}

float int8BlockScale(const float *x, int64_t n) {
  float largest = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    largest = std::max(largest, std::fabs(x[i]));
  return largest / 127.0f;
}

int8_t int8Value(float x, float scale) {
  float q = scale == 0.0f ? 0.0f : std::nearbyint(x / scale);
  // An int8 holds +-127 at most: a block whose largest magnitude is
  // subnormal has an inexact scale, and x / scale may round to 128; a NaN
  // has no int8 value at all.
  if (std::isnan(q))
    return 0;
  return int8_t(std::clamp(q, -127.0f, 127.0f));
}

float int8ScaleOfConverted(const float *converted, int64_t n) {
  // The largest value is 127 s rounded, so max / 127 is s or within an ulp
  // or two of it; the first candidate outward from there that gives every
  // value back is the scale the values were made with, as far as they can
  // tell.
  const float first = int8BlockScale(converted, n);
  if (first == 0.0f || !std::isfinite(first))
    return first;
  auto givesBack = [&](float scale) {
    for (int64_t i = 0; i < n; ++i)
      if (float(int8Value(converted[i], scale)) * scale != converted[i])
        return false;
    return true;
  };
  float below = first, above = first;
  for (int step = 0; step <= 2; ++step) {
    if (givesBack(below))
      return below;
    if (givesBack(above))
      return above;
    below = std::nextafter(below, 0.0f);
    above = std::nextafter(above, INFINITY);
  }
  return first;
}

bool convertWeight(float *w, int64_t rows, int64_t cols, WeightFormat format,
                   size_t *at) {
  size_t n = size_t(rows) * size_t(cols);
  switch (format) {
  case WeightFormat::F32:
    return true;
  case WeightFormat::BF16:
    for (size_t i = 0; i < n; ++i)
      w[i] = roundToBFloat16(w[i]);
    return true;
  case WeightFormat::F16:
    for (size_t i = 0; i < n; ++i) {
      float rounded = roundToHalf(w[i]);
      if (std::isinf(rounded)) {
        *at = i;
        return false;
      }
      w[i] = rounded;
    }
    return true;
  case WeightFormat::Int8:
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c0 = 0; c0 < cols; c0 += kInt8Block) {
        float *block = w + r * cols + c0;
        int64_t width = std::min(kInt8Block, cols - c0);
        float scale = int8BlockScale(block, width);
        for (int64_t c = 0; c < width; ++c)
          block[c] = float(int8Value(block[c], scale)) * scale;
      }
    return true;
  }
  return true;
}

} // namespace tfm::rt
