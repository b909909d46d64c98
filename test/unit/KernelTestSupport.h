//===- KernelTestSupport.h - what the kernel tests share -------*- C++ -*-===//
//
// The runtime's micro-kernels (the GEMM tile, the blocked attention pieces,
// the row-wise kernels that generated code calls), on the Highway target a
// test file is compiled for (HWY_STATIC_TARGET: the baseline by default, the
// machine's own with -march=native, AVX2 or SSE4 in their own builds),
// against naive double-precision references on shapes that hit every tail:
// partial panels and vectors, blocks of keys that some rows take none of,
// rows past the last one. Memory around what a kernel may write holds a
// sentinel, and padding it must not read holds NaN, so a wrong index shows.
// The fixture, the target's name and the fill and compare helpers.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_UNIT_KERNELTESTSUPPORT_H
#define TFM_TEST_UNIT_KERNELTESTSUPPORT_H

#ifndef HWY_COMPILE_ONLY_STATIC
#define HWY_COMPILE_ONLY_STATIC 1
#endif

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "tfm/runtime/kernels/activation-inl.h"
#include "tfm/runtime/kernels/attention-inl.h"
#include "tfm/runtime/kernels/features-inl.h"
#include "tfm/runtime/kernels/gemm-inl.h"
#include "tfm/runtime/kernels/norm-inl.h"
#include "tfm/runtime/kernels/transpose-inl.h"
#include "tfm/runtime/kernels/vector-inl.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace hn = hwy::HWY_NAMESPACE;
namespace k = tfm::rt::kernels::HWY_NAMESPACE;

namespace tfm::kernel_test {

constexpr float kSentinel = -12345.5f;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

inline std::string targetName() { return hwy::TargetName(HWY_STATIC_TARGET); }

/// Says once per suite which target the kernels run on: a pass means
/// nothing without it.
class KernelTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    std::printf("[   hwy    ] static target %s: %zu float lanes, GEMM "
                "tiles of (8 x 32, 6 x 16, 6 x 8) %zu x %zu, attention query "
                "rows of (8, 2, 2) "
                "%zu\n",
                targetName().c_str(), hn::Lanes(hn::ScalableTag<float>()),
                k::ForVectorBits(8, 6, 6), k::ForVectorBits(32, 16, 8),
                k::ForVectorBits(8, 2, 2));
  }
};

/// Bitwise: the sentinel and NaN compare by pattern.
inline bool sameBits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

inline void fillUniform(std::mt19937 &rng, float *p, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i)
    p[i] = dist(rng);
}

} // namespace tfm::kernel_test

#endif // TFM_TEST_UNIT_KERNELTESTSUPPORT_H
