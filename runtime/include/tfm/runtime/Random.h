//===- Random.h - pseudo-random weights and inputs --------------*- C++ -*-===//
//
// Runs without files must give the same numbers on every run and for every
// thread count, and one tensor's numbers must not change when another
// tensor is added to the model: each tensor draws from its own stream,
// seeded from its name.
//
// The streams are counter-based: element i of a stream is a function of
// the seed and i alone (randomBits), so any part of a tensor can be filled
// on its own, in any order and on any thread, with the same result. The
// float conversions use only +, -, *, / and sqrt on float (no libm), so
// they round the same everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_RANDOM_H
#define TFM_RUNTIME_RANDOM_H

#include <cstddef>
#include <cstdint>

namespace tfm::rt {

/// splitmix64: tiny, fast, and every seed gives a good stream.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next();
  /// Uniform in [0, 1) with 53 bits.
  double nextDouble();

private:
  uint64_t state;
};

/// The random bits at position `index` of the stream `seed`: what the
/// (index + 1)-th call of SplitMix64(seed).next() returns, computed
/// directly.
uint64_t randomBits(uint64_t seed, uint64_t index);

/// The seed of the stream for the tensor called `name`.
uint64_t seedForName(const char *name);

/// Elements [first, first + count) of the stream `seed` as U(-bound, bound)
/// (24 random bits each, always within [-bound, bound]). Element i takes
/// half of randomBits(seed, i / 2).
void fillUniform(float *out, size_t count, float bound, uint64_t seed,
                 uint64_t first = 0);
/// Elements [first, first + count) of the stream `seed` as N(0, stddev^2),
/// by Box-Muller: elements 2j and 2j + 1 come from randomBits(seed, j).
void fillNormal(float *out, size_t count, float stddev, uint64_t seed,
                uint64_t first = 0);
/// Uniform in [0, vocabSize).
void fillTokenIds(int32_t *out, size_t count, int64_t vocabSize, uint64_t seed);

} // namespace tfm::rt

#endif // TFM_RUNTIME_RANDOM_H
