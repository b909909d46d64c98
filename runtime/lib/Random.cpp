//===- Random.cpp - deterministic pseudo-random weights and inputs --------===//

#include "tfm/runtime/Random.h"

#include <cmath>

namespace tfm::rt {

uint64_t SplitMix64::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::nextDouble() { return double(next() >> 11) * 0x1.0p-53; }

uint64_t seedForName(const char *name) {
  // FNV-1a, then one splitmix step so that similar names ("layers.0.x",
  // "layers.1.x") start far apart.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const char *c = name; *c; ++c)
    hash = (hash ^ uint8_t(*c)) * 0x100000001b3ull;
  return SplitMix64(hash ^ 0x74666d2d72756e74ull).next(); // "tfm-runt"
}

void fillUniform(float *out, size_t count, float bound, uint64_t seed) {
  SplitMix64 rng(seed);
  for (size_t i = 0; i < count; ++i)
    out[i] = float((2.0 * rng.nextDouble() - 1.0) * bound);
}

void fillNormal(float *out, size_t count, float stddev, uint64_t seed) {
  SplitMix64 rng(seed);
  const double twoPi = 6.283185307179586476925;
  for (size_t i = 0; i < count; i += 2) {
    // 1 - u is in (0, 1], so the logarithm is finite.
    double radius = std::sqrt(-2.0 * std::log(1.0 - rng.nextDouble()));
    double angle = twoPi * rng.nextDouble();
    out[i] = float(radius * std::cos(angle) * stddev);
    if (i + 1 < count)
      out[i + 1] = float(radius * std::sin(angle) * stddev);
  }
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
