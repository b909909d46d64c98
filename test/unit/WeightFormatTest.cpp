//===- WeightFormatTest.cpp - --weight-dtype's rounding, against second forms
//
// Each conversion is checked against a form written another way: bf16 and
// f16 as the nearest of every value the format has (found by search over
// the format's own encodings, distances in double), int8 against the
// properties that define it.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/WeightFormat.h"
#include "tfm/runtime/HalfFloat.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace tfm::rt;

namespace {

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

/// The nearest of the finite, sorted, non-negative `grid` values to |x|
/// (ties to the one whose encoding is even), with x's sign; infinity past
/// the last value's half step.
float nearestOf(const std::vector<std::pair<float, uint32_t>> &grid,
                double overflowAt, float x) {
  double m = std::fabs(double(x));
  if (m >= overflowAt)
    return std::copysign(INFINITY, x);
  auto hi = std::lower_bound(grid.begin(), grid.end(), m,
                             [](const std::pair<float, uint32_t> &g, double v) {
                               return g.first < v;
                             });
  if (hi == grid.end())
    --hi;
  auto lo = hi == grid.begin() ? hi : hi - 1;
  double dl = m - double(lo->first), dh = double(hi->first) - m;
  if (dl < 0)
    dl = -dl;
  const auto &pick = dl < dh   ? *lo
                     : dh < dl ? *hi
                               : (lo->second % 2 ? *hi : *lo);
  return std::copysign(pick.first, x);
}

std::vector<std::pair<float, uint32_t>> halfGrid() {
  std::vector<std::pair<float, uint32_t>> grid;
  for (uint32_t h = 0; h < 0x7c00; ++h) // every finite non-negative half
    grid.push_back({halfToFloat(uint16_t(h)), h});
  return grid;
}

std::vector<float> testValues() {
  std::vector<float> values = {
      0.0f,      -0.0f,          1.0f,           -1.0f,    65504.0f,
      65519.99f, 65520.0f,       -65520.0f,      1e-8f,    -3e-8f,
      2.98e-8f,  5.96e-8f,       6.1e-5f,        6.09e-5f, 0.333333f,
      1e30f,     1.00048828125f, 1.00146484375f, 3.0e-38f, 1.0e-44f};
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    // Spread over exponents, and exact ties: mantissas ending in a 1
    // followed by zeros at the cut.
    float v = fromBits(uint32_t(rng()));
    if (std::isfinite(v))
      values.push_back(v);
    // f16's cut is 13 bits below a normal float's mantissa, bf16's 16.
    values.push_back(fromBits((uint32_t(rng()) & 0xbfffe000u) | 0x1000u));
    values.push_back(fromBits((uint32_t(rng()) & 0xbfff0000u) | 0x8000u));
  }
  return values;
}

TEST(WeightFormat, Float16IsTheNearestHalfTiesToEven) {
  auto grid = halfGrid();
  // Half of the step above the largest half: ties there go to the even
  // (infinite) side.
  double overflowAt = 65504.0 + 16.0;
  for (float x : testValues()) {
    float expected = nearestOf(grid, overflowAt, x);
    float got = roundToHalf(x);
    ASSERT_EQ(bitsOf(got), bitsOf(expected))
        << "x = " << x << " (bits " << std::hex << bitsOf(x) << ")";
  }
  EXPECT_TRUE(std::isnan(roundToHalf(NAN)));
  EXPECT_EQ(roundToHalf(INFINITY), INFINITY);
}

TEST(WeightFormat, BFloat16IsTheNearestTiesToEven) {
  for (float x : testValues()) {
    // The two bf16 neighbours of x: truncated, and one bf16 step away from
    // zero; the nearer by exact (double) distance, ties to an even top half.
    uint32_t down = bitsOf(x) & 0xffff0000u, up = down + 0x10000u;
    double d0 = std::fabs(double(x) - double(fromBits(down)));
    // Past the largest bf16 the step up is infinity, at 2^128 for IEEE's
    // rounding.
    double upValue = std::isinf(fromBits(up))
                         ? std::copysign(std::ldexp(1.0, 128), double(x))
                         : double(fromBits(up));
    double d1 = std::fabs(upValue - double(x));
    uint32_t pick = d0 < d1   ? down
                    : d1 < d0 ? up
                              : ((down >> 16) % 2 ? up : down);
    ASSERT_EQ(bitsOf(roundToBFloat16(x)), pick)
        << "x = " << x << " (bits " << std::hex << bitsOf(x) << ")";
  }
  EXPECT_TRUE(std::isnan(roundToBFloat16(NAN)));
  EXPECT_TRUE(std::isnan(roundToBFloat16(fromBits(0x7f800001u))));
  EXPECT_EQ(roundToBFloat16(INFINITY), INFINITY);
}

TEST(WeightFormat, Int8BlocksOf32ColumnsOfEachRow) {
  // Rows of 70 columns: blocks of 32, 32 and a last one of 6; the second
  // row's middle block all zeros.
  const int64_t rows = 3, cols = 70;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> w(rows * cols);
  for (float &v : w)
    v = dist(rng);
  std::fill(w.begin() + cols + 32, w.begin() + cols + 64, 0.0f);
  // A value exactly half way between two steps of its block: 127 * s is
  // the block's max (4.0 at column 0 of row 2), s = 4/127; 2.5 s rounds to
  // 2 s (even), 3.5 s to 4 s.
  float s = 4.0f / 127.0f;
  w[2 * cols + 0] = 4.0f;
  for (int c = 1; c < 32; ++c)
    w[2 * cols + c] = 0.0f;
  w[2 * cols + 1] = 2.5f * s;
  w[2 * cols + 2] = -3.5f * s;
  std::vector<float> original = w;
  size_t at = 0;
  ASSERT_TRUE(convertWeight(w.data(), rows, cols, WeightFormat::Int8, &at));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c0 = 0; c0 < cols; c0 += 32) {
      int64_t width = std::min<int64_t>(32, cols - c0);
      float largest = 0.0f;
      for (int64_t c = 0; c < width; ++c)
        largest = std::max(largest, std::fabs(original[r * cols + c0 + c]));
      float scale = largest / 127.0f;
      for (int64_t c = 0; c < width; ++c) {
        float v = w[r * cols + c0 + c], o = original[r * cols + c0 + c];
        if (scale == 0.0f) {
          EXPECT_EQ(v, 0.0f);
          continue;
        }
        // The value is an integer multiple q of the scale, |q| <= 127, and
        // the nearest one to the original.
        float q = std::nearbyint(v / scale);
        EXPECT_EQ(q * scale, v) << r << "," << c0 + c;
        EXPECT_LE(std::fabs(q), 127.0f);
        EXPECT_LE(std::fabs(double(o) - double(v)), 0.5 * scale * (1 + 1e-6))
            << r << "," << c0 + c;
      }
      // The block's largest magnitude is kept as 127 steps.
      if (largest > 0.0f) {
        auto it = std::max_element(
            original.begin() + r * cols + c0,
            original.begin() + r * cols + c0 + width,
            [](float a, float b) { return std::fabs(a) < std::fabs(b); });
        EXPECT_EQ(std::fabs(w[it - original.begin()]), 127.0f * scale);
      }
    }
  EXPECT_EQ(w[2 * cols + 1], 2.0f * s);
  EXPECT_EQ(w[2 * cols + 2], -4.0f * s);
}

TEST(WeightFormat, Int8ValuesAreHeldToAnInt8) {
  // A block whose largest magnitude is subnormal: its scale (largest / 127)
  // is inexact, and the largest value over it can round past 127.
  float largest = 0.0f;
  float scale = 0.0f;
  bool pastRange = false;
  for (uint32_t bits = 1; bits < 0x00800000u && !pastRange; ++bits) {
    largest = fromBits(bits);
    scale = int8BlockScale(&largest, 1);
    pastRange = scale > 0.0f && std::nearbyint(largest / scale) > 127.0f;
  }
  ASSERT_TRUE(pastRange) << "no subnormal maximum rounds past 127 here";
  EXPECT_EQ(int8Value(largest, scale), 127);
  EXPECT_EQ(int8Value(-largest, scale), -127);
  // The rule on ordinary values, a zero scale and a NaN.
  const float block[] = {1.0f, -0.5f, 0.25f};
  EXPECT_EQ(int8BlockScale(block, 3), 1.0f / 127.0f);
  EXPECT_EQ(int8Value(-0.5f, 1.0f / 127.0f), -64); // 63.5 to even
  EXPECT_EQ(int8Value(3.0f, 0.0f), 0);
  EXPECT_EQ(int8Value(NAN, 1.0f), 0);
}

TEST(WeightFormat, Int8PackingFindsTheScaleAgain) {
  // Blocks converted by the load's rule, then taken apart as an int8
  // panel's packing does: the scale found and the q's it gives multiply
  // back to every converted value, bit for bit. Magnitudes from subnormal
  // to large, blocks of 1 to 32 values, some with zeros.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t n = 1 + int64_t(rng() % 32);
    std::vector<float> w(n);
    const int exponent = int(rng() % 200) - 140;
    for (float &v : w) {
      v = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng),
                     exponent);
      if (rng() % 7 == 0)
        v = 0.0f;
    }
    size_t at = 0;
    ASSERT_TRUE(convertWeight(w.data(), 1, n, WeightFormat::Int8, &at));
    const float scale = int8ScaleOfConverted(w.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(float(int8Value(w[i], scale)) * scale, w[i])
          << "trial " << trial << " value " << i << " scale " << scale;
  }
}

TEST(WeightFormat, Float16OverflowStopsAtTheValue) {
  std::vector<float> w = {1.0f, 2.0f, 70000.0f, 3.0f};
  size_t at = 99;
  EXPECT_FALSE(convertWeight(w.data(), 2, 2, WeightFormat::F16, &at));
  EXPECT_EQ(at, 2u);
  EXPECT_EQ(w[2], 70000.0f); // left as it was, for the message
}

TEST(WeightFormat, SixteenBitEncodingsRoundTripEveryValue) {
  // Every finite half and bf16 value (of both signs), widened and encoded
  // again, gives its own bits; a value between two encodes as the nearer.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00u) == 0x7c00u)
      continue; // infinities and NaNs
    ASSERT_EQ(halfBits(halfToFloat(uint16_t(h))), h) << std::hex << h;
    float b = fromBits(h << 16);
    if (std::isfinite(b))
      ASSERT_EQ(bfloat16Bits(b), h) << std::hex << h;
  }
  EXPECT_EQ(halfBits(1.0f + 1.0f / 4096), 0x3c00u); // nearer 1 than 1 + 2^-10
  EXPECT_EQ(halfBits(70000.0f), 0x7c00u);
  EXPECT_EQ(halfBits(-INFINITY), 0xfc00u);
  EXPECT_EQ(bfloat16Bits(1.00390625f), 0x3f80u); // a tie: to even
}

} // namespace
