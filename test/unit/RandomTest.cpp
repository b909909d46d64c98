//===- RandomTest.cpp - counter-based pseudo-random weights ---------------===//

#include "tfm/runtime/Random.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace tfm::rt;

namespace {

std::vector<float> uniform(size_t count, float bound, uint64_t seed,
                           uint64_t first = 0) {
  std::vector<float> out(count);
  fillUniform(out.data(), count, bound, seed, first);
  return out;
}

std::vector<float> normal(size_t count, float stddev, uint64_t seed,
                          uint64_t first = 0) {
  std::vector<float> out(count);
  fillNormal(out.data(), count, stddev, seed, first);
  return out;
}

bool sameBits(const float *a, const float *b, size_t count) {
  return std::memcmp(a, b, count * sizeof(float)) == 0;
}

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

TEST(Random, RandomBitsIsSplitMix64AtAnIndex) {
  // The reference stream of splitmix64 from seed 1234567.
  const uint64_t expected[] = {6457827717110365317ull, 3203168211198807973ull,
                               9817491932198370423ull, 4593380528125082431ull,
                               16408922859458223821ull};
  SplitMix64 rng(1234567);
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(randomBits(1234567, i), expected[i]) << i;
    EXPECT_EQ(rng.next(), expected[i]) << i;
  }
  // Any index directly, without the ones before it.
  SplitMix64 walk(42);
  for (uint64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(walk.next(), randomBits(42, i)) << i;
}

TEST(Random, SameSeedSameNumbersOtherSeedOthers) {
  for (auto fill : {uniform, normal}) {
    std::vector<float> a = fill(1001, 0.5f, 7, 0), b = fill(1001, 0.5f, 7, 0),
                       c = fill(1001, 0.5f, 8, 0);
    EXPECT_TRUE(sameBits(a.data(), b.data(), a.size()));
    size_t equal = 0;
    for (size_t i = 0; i < a.size(); ++i)
      equal += a[i] == c[i];
    EXPECT_LT(equal, 5u);
  }
}

// Any piece of a stream, at any offset (even or odd, inside a block of
// pairs or across blocks), gives the same numbers as the whole stream.
TEST(Random, PiecesOfAStreamMatchTheWhole) {
  const size_t total = 3000;
  const uint64_t seed = seedForName("layers.3.linear2.weight");
  for (bool isNormal : {false, true}) {
    std::vector<float> whole =
        isNormal ? normal(total, 1.5f, seed) : uniform(total, 0.3f, seed);
    for (size_t piece : {1, 2, 3, 5, 64, 255, 511, 512, 513, 1025}) {
      std::vector<float> pieces(total);
      for (size_t first = 0; first < total; first += piece) {
        size_t count = std::min(piece, total - first);
        if (isNormal)
          fillNormal(&pieces[first], count, 1.5f, seed, first);
        else
          fillUniform(&pieces[first], count, 0.3f, seed, first);
      }
      EXPECT_TRUE(sameBits(whole.data(), pieces.data(), total))
          << (isNormal ? "normal" : "uniform") << ", pieces of " << piece;
    }
    // And from far into the stream, the same as a longer fill.
    std::vector<float> tail = isNormal ? normal(7, 1.5f, seed, 12345677)
                                       : uniform(7, 0.3f, seed, 12345677);
    std::vector<float> longer = isNormal ? normal(10, 1.5f, seed, 12345674)
                                         : uniform(10, 0.3f, seed, 12345674);
    EXPECT_TRUE(sameBits(tail.data(), longer.data() + 3, 7));
  }
}

// The numbers are part of what a run without --weights computes: they must
// not change between builds or machines (float arithmetic only, no libm,
// no fused multiply-adds). A change here changes every random-weight run.
TEST(Random, PinnedValues) {
  // Also what a double-precision evaluation of the same formulas gives
  // (0.133123040, 0.070384502, ...; -0.900736260, 0.570099299, ...).
  std::vector<float> u = uniform(4, 1.0f, 1), n = normal(4, 1.0f, 1);
  const uint32_t expectedUniform[] = {0x3e085168, 0x3d9025c0, 0x3efbae34,
                                      0xbe5388a0};
  const uint32_t expectedNormal[] = {0xbf6696a6, 0x3f11f207, 0xbdd55461,
                                     0x3f424171};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(bitsOf(u[i]), expectedUniform[i]) << i << ": " << u[i];
    EXPECT_EQ(bitsOf(n[i]), expectedNormal[i]) << i << ": " << n[i];
  }
}

TEST(Random, UniformStaysInRangeAndIsFlat) {
  const size_t count = size_t(1) << 21;
  const float bound = 0.0441941738f; // 1/sqrt(512), as nn.Linear uses
  std::vector<float> u = uniform(count, bound, seedForName("u"));
  double sum = 0, squares = 0, low = bound, high = -bound;
  std::vector<int> bins(64);
  for (float x : u) {
    ASSERT_GE(x, -bound);
    ASSERT_LE(x, bound);
    sum += x;
    squares += double(x) * x;
    low = std::min(low, double(x));
    high = std::max(high, double(x));
    bins[std::min(63, int((x + bound) / (2 * bound) * 64))]++;
  }
  double mean = sum / count, variance = squares / count - mean * mean;
  // Standard errors: bound/sqrt(3 count) = 1.8e-5 for the mean, 0.06% of
  // the variance bound^2 / 3; these bounds are 5-8 of them.
  EXPECT_NEAR(mean, 0.0, 1e-4);
  EXPECT_NEAR(variance / (bound * bound / 3), 1.0, 0.005);
  EXPECT_LT(low, -bound * 0.9999);
  EXPECT_GT(high, bound * 0.9999);
  // 32768 expected per bin, standard deviation 180.
  for (int b = 0; b < 64; ++b)
    EXPECT_NEAR(bins[b], 32768, 1200) << "bin " << b;
}

TEST(Random, NormalHasTheMomentsAndTailsOfAGaussian) {
  const size_t count = size_t(1) << 21;
  const float stddev = 2.0f;
  std::vector<float> n = normal(count, stddev, seedForName("embed.weight"));
  double sum = 0, squares = 0, fourth = 0, product = 0, evenSquares = 0;
  size_t beyond[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < count; ++i) {
    double x = n[i];
    ASSERT_TRUE(std::isfinite(n[i]));
    // The largest radius Box-Muller reaches here is sqrt(2 * 32 ln 2).
    ASSERT_LT(std::fabs(x), 6.7 * stddev);
    sum += x;
    squares += x * x;
    fourth += x * x * x * x;
    if (i % 2 == 0) {
      product += x * n[i + 1];
      evenSquares += x * x;
    }
    for (int k = 1; k <= 3; ++k)
      beyond[k] += std::fabs(x) > k * stddev;
  }
  double mean = sum / count, variance = squares / count - mean * mean;
  double var = stddev * stddev;
  // Standard errors: 1.4e-3 for the mean, 0.1% of the variance, 0.0034 for
  // the kurtosis; each bound is 5-7 of them.
  EXPECT_NEAR(mean, 0.0, 0.008);
  EXPECT_NEAR(variance / var, 1.0, 0.006);
  EXPECT_NEAR(fourth / count / (variance * variance), 3.0, 0.02);
  // Both halves of a Box-Muller pair: the same variance, uncorrelated.
  EXPECT_NEAR(evenSquares / (count / 2) / var, 1.0, 0.009);
  EXPECT_NEAR(product / (count / 2) / var, 0.0, 0.007);
  // P(|x| > k sigma) for k = 1, 2, 3.
  EXPECT_NEAR(double(beyond[1]) / count, 0.317311, 0.0017);
  EXPECT_NEAR(double(beyond[2]) / count, 0.045500, 0.0008);
  EXPECT_NEAR(double(beyond[3]) / count, 0.002700, 0.0002);
}

} // namespace
