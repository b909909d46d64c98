//===- Random.h - pseudo-random weights and inputs --------------*- C++ -*-===//
//
// Runs without files must give the same numbers on every run and for every
// thread count, and one tensor's numbers must not change when another
// tensor is added to the model: each tensor draws from its own stream,
// seeded from its name.
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

/// The seed of the stream for the tensor called `name`.
uint64_t seedForName(const char *name);

/// U(-bound, bound).
void fillUniform(float *out, size_t count, float bound, uint64_t seed);
/// N(0, stddev^2), by Box-Muller.
void fillNormal(float *out, size_t count, float stddev, uint64_t seed);
/// Uniform in [0, vocabSize).
void fillTokenIds(int32_t *out, size_t count, int64_t vocabSize, uint64_t seed);

} // namespace tfm::rt

#endif // TFM_RUNTIME_RANDOM_H
