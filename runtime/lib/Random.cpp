//===- Random.cpp - deterministic pseudo-random weights and inputs --------===//
//
// Weights are generated in blocks: one loop computes the 64-bit random
// words, a second turns them into floats; both vectorize. The logarithm,
// sine and cosine of Box-Muller are short polynomials on float here rather
// than libm's, so that the numbers do not depend on the C library, and
// contraction into fused multiply-adds is off so that they do not depend on
// the target either.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/Random.h"

#include <algorithm>
#include <cmath>
#include <cstring>

// (An explicit -ffp-contract=fast would still override this for clang.)
#ifdef __clang__
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace tfm::rt {

namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline uint32_t floatToBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// Pairs (random words) converted per block: small enough for the
/// intermediate arrays to stay in L1.
constexpr size_t kBlock = 256;

/// Two U(-bound, bound) floats from the top and the bottom 24 bits of one
/// word: k * 2^-23 - 1 is exact for k < 2^24, so it lies in [-1, 1) and the
/// product with `bound` in [-bound, bound].
void uniformPairs(float *out, size_t pairs, uint64_t firstPair, uint64_t seed,
                  float bound) {
  int32_t high[kBlock], low[kBlock];
  for (size_t done = 0; done < pairs; done += kBlock) {
    size_t n = std::min(kBlock, pairs - done);
    uint64_t state = seed + (firstPair + done) * kGolden;
    for (size_t k = 0; k < n; ++k) {
      uint64_t bits = mix(state += kGolden);
      high[k] = int32_t(bits >> 40);
      low[k] = int32_t((bits >> 8) & 0xffffff);
    }
    float *o = out + 2 * done;
    for (size_t k = 0; k < n; ++k) {
      o[2 * k] = (float(high[k]) * 0x1p-23f - 1.0f) * bound;
      o[2 * k + 1] = (float(low[k]) * 0x1p-23f - 1.0f) * bound;
    }
  }
}

/// Box-Muller: two N(0, stddev^2) floats from one word. Its top 31 bits
/// give u in (0, 1] (the radius sqrt(-2 ln u) reaches 6.6), 24 of the
/// bottom bits the angle: 2 for the quadrant and 22 for y in
/// (-pi/4, pi/4), where the Taylor series below are accurate to float
/// precision. (The angle q pi/2 + y covers the circle as uniformly as the
/// usual 2 pi v, only rotated by pi/4, which changes no distribution.)
void normalPairs(float *out, size_t pairs, uint64_t firstPair, uint64_t seed,
                 float stddev) {
  int32_t radiusBits[kBlock], angleBits[kBlock];
  for (size_t done = 0; done < pairs; done += kBlock) {
    size_t n = std::min(kBlock, pairs - done);
    uint64_t state = seed + (firstPair + done) * kGolden;
    for (size_t k = 0; k < n; ++k) {
      uint64_t bits = mix(state += kGolden);
      radiusBits[k] = int32_t(bits >> 33);
      angleBits[k] = int32_t((bits >> 8) & 0xffffff);
    }
    float *o = out + 2 * done;
    for (size_t k = 0; k < n; ++k) {
      // ln u = e ln 2 + ln m with m in [sqrt(1/2), sqrt(2)), and
      // ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172.
      float u = (float(radiusBits[k]) + 0.5f) * 0x1p-31f;
      uint32_t ub = floatToBits(u);
      int32_t e = int32_t(ub >> 23) - 127;
      float m = bitsToFloat((ub & 0x7fffff) | 0x3f800000);
      bool big = m > 1.41421356f;
      m = big ? m * 0.5f : m;
      e = big ? e + 1 : e;
      float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
      float lnM =
          2.0f * s *
          (1.0f + s2 * (1.0f / 3 +
                        s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9)))));
      float lnU = float(e) * 0.693147181f + lnM;
      float radius = std::sqrt(std::max(-2.0f * lnU, 0.0f)) * stddev;

      int32_t a = angleBits[k];
      int32_t q = a >> 22;
      float y = (float(a & 0x3fffff) - 2097151.5f) * (1.57079633f * 0x1p-22f);
      float y2 = y * y;
      float sinY =
          y * (1.0f - y2 * (1.0f / 6 -
                            y2 * (1.0f / 120 -
                                  y2 * (1.0f / 5040 - y2 * (1.0f / 362880)))));
      float cosY =
          1.0f -
          y2 * (0.5f - y2 * (1.0f / 24 -
                             y2 * (1.0f / 720 - y2 * (1.0f / 40320 -
                                                      y2 * (1.0f / 3628800)))));
      // Rotate (cos y, sin y) by q quarter turns.
      bool swap = q & 1;
      float c = swap ? sinY : cosY;
      float sn = swap ? cosY : sinY;
      uint32_t negateC = uint32_t((q ^ (q >> 1)) & 1) << 31;
      uint32_t negateS = uint32_t(q >> 1) << 31;
      o[2 * k] = radius * bitsToFloat(floatToBits(c) ^ negateC);
      o[2 * k + 1] = radius * bitsToFloat(floatToBits(sn) ^ negateS);
    }
  }
}

using PairFill = void (*)(float *out, size_t pairs, uint64_t firstPair,
                          uint64_t seed, float scale);

/// Elements [first, first + count) of a stream made of pairs: whole pairs
/// straight into `out`, a half pair at either end through a scratch pair.
void fillFromPairs(PairFill fill, float *out, size_t count, float scale,
                   uint64_t seed, uint64_t first) {
  if (count == 0)
    return;
  float pair[2];
  if (first % 2 == 1) {
    fill(pair, 1, first / 2, seed, scale);
    *out++ = pair[1];
    ++first;
    --count;
  }
  size_t whole = count / 2;
  fill(out, whole, first / 2, seed, scale);
  if (count % 2 == 1) {
    fill(pair, 1, first / 2 + whole, seed, scale);
    out[2 * whole] = pair[0];
  }
}

} // namespace

uint64_t SplitMix64::next() { return mix(state += kGolden); }

double SplitMix64::nextDouble() { return double(next() >> 11) * 0x1.0p-53; }

uint64_t randomBits(uint64_t seed, uint64_t index) {
  return mix(seed + (index + 1) * kGolden);
}

uint64_t seedForName(const char *name) {
  // FNV-1a, then one splitmix step so that similar names ("layers.0.x",
  // "layers.1.x") start far apart.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const char *c = name; *c; ++c)
    hash = (hash ^ uint8_t(*c)) * 0x100000001b3ull;
  return SplitMix64(hash ^ 0x74666d2d72756e74ull).next(); // "tfm-runt"
}

void fillUniform(float *out, size_t count, float bound, uint64_t seed,
                 uint64_t first) {
  fillFromPairs(uniformPairs, out, count, bound, seed, first);
}

void fillNormal(float *out, size_t count, float stddev, uint64_t seed,
                uint64_t first) {
  fillFromPairs(normalPairs, out, count, stddev, seed, first);
}

void fillTokenIds(int32_t *out, size_t count, int64_t vocabSize,
                  uint64_t seed) {
  SplitMix64 rng(seed);
  // The high half of a 64x64 product maps uniformly onto [0, vocab) without
  // the bias of a modulo (beyond 2^-64).
  for (size_t i = 0; i < count; ++i)
    out[i] = int32_t((unsigned __int128)rng.next() * uint64_t(vocabSize) >> 64);
}

} // namespace tfm::rt
