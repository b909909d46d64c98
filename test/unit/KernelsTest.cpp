//===- KernelsTest.cpp - runtime micro-kernels vs scalar references -------===//
//
// The GEMM tile and the blocked attention pieces that generated code calls,
// on the Highway target this file is compiled for (HWY_STATIC_TARGET: the
// baseline by default, the machine's own with -march=native), against naive
// double-precision references on shapes that hit every tail: partial panels
// and vectors, blocks of keys that some rows take none of, rows past the
// last one. Memory around what a kernel may write holds a sentinel, and
// padding it must not read holds NaN, so a wrong index shows.
//
//===----------------------------------------------------------------------===//

#ifndef HWY_COMPILE_ONLY_STATIC
#define HWY_COMPILE_ONLY_STATIC 1
#endif

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "tfm/runtime/kernels/activation-inl.h"
#include "tfm/runtime/kernels/attention-inl.h"
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

namespace {

constexpr float kSentinel = -12345.5f;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::string targetName() { return hwy::TargetName(HWY_STATIC_TARGET); }

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
bool sameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void fillUniform(std::mt19937 &rng, float *p, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i)
    p[i] = dist(rng);
}

//===----------------------------------------------------------------------===//
// GemmTileRows
//===----------------------------------------------------------------------===//

struct GemmShape {
  size_t k;
  size_t cols;
};

void PrintTo(const GemmShape &shape, std::ostream *os) {
  *os << "k " << shape.k << " cols " << shape.cols;
}

class GemmTileRowsTest : public KernelTest,
                         public ::testing::WithParamInterface<GemmShape> {};

/// One panel width: C from GemmTileRows<16, kCols> for every row count and
/// prefetch, against the naive reference.
template <size_t kCols> void checkGemmTileRows(size_t depth, size_t cols) {
  SCOPED_TRACE("target " + targetName() + " panel width " +
               std::to_string(kCols));
  std::mt19937 rng(1000 + depth * 37 + cols + kCols);

  // A's rows have padding (NaN: never read), the panel's columns past cols
  // too (NaN: their sums must never reach C).
  const size_t lda = depth + 3;
  // Every tile #tfm_codegen.gemm_tiling allows (1 to 16 rows), through the
  // largest's run-time choice of rows.
  constexpr size_t maxRows = 16;
  std::vector<float> a(maxRows * lda, kNaN);
  for (size_t r = 0; r < maxRows; ++r)
    fillUniform(rng, a.data() + r * lda, depth);
  // Two panels: the second is what a prefetching tile is told comes next
  // (NaN: its values must never reach C).
  auto panel = hwy::AllocateAligned<float>(2 * depth * kCols);
  ASSERT_TRUE(panel);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(panel.get()) % 64, 0u);
  for (size_t kk = 0; kk < depth; ++kk)
    for (size_t j = 0; j < kCols; ++j) {
      panel[kk * kCols + j] =
          j < cols ? std::uniform_real_distribution<float>(-1, 1)(rng) : kNaN;
      panel[(depth + kk) * kCols + j] = kNaN;
    }
  const float *nextPanel = panel.get() + depth * kCols;
  // Offset by one float: the kernel makes no alignment assumption on bias
  // or C.
  std::vector<float> biasStore(cols + 1, kNaN);
  fillUniform(rng, biasStore.data() + 1, cols);
  const float *biasValues = biasStore.data() + 1;

  const size_t ldc = cols + 5;
  for (bool withBias : {false, true}) {
    // No prefetch; the next panel into L1; all of its lines into L2 (more
    // lines than k steps: one per step); three of them into L2.
    const size_t panelLines = depth * kCols * sizeof(float) / 64;
    for (int prefetch : {0, 1, 2, 3})
      for (size_t rows = 1; rows <= maxRows; ++rows) {
        const char *how[] = {"", ", the next panel into L1",
                             ", the next panel's lines into L2",
                             ", 3 of its lines into L2"};
        SCOPED_TRACE("rows " + std::to_string(rows) + " k " +
                     std::to_string(depth) + " cols " + std::to_string(cols) +
                     (withBias ? " bias" : " no bias") + how[prefetch]);
        // Sentinel before C, in the ldc - cols columns past each row and in
        // the row after the tile.
        const size_t cSize = 1 + (rows + 1) * ldc;
        std::vector<float> cStore(cSize, kSentinel);
        float *c = cStore.data() + 1;
        const float *bias = withBias ? biasValues : nullptr;
        k::GemmTileRows<maxRows, kCols>(rows, a.data(), lda, panel.get(), depth,
                                        bias, c, ldc, cols,
                                        prefetch == 1 ? nextPanel : nullptr,
                                        prefetch >= 2 ? nextPanel : nullptr,
                                        prefetch == 2   ? panelLines
                                        : prefetch == 3 ? 3
                                                        : 0);

        EXPECT_TRUE(sameBits(cStore[0], kSentinel)) << "written before C";
        for (size_t r = 0; r <= rows; ++r)
          for (size_t j = 0; j < ldc; ++j) {
            const float got = c[r * ldc + j];
            if (r == rows || j >= cols) {
              EXPECT_TRUE(sameBits(got, kSentinel))
                  << "C[" << r << "][" << j << "] written: " << got;
              continue;
            }
            double ref = bias ? bias[j] : 0.0;
            double scale = bias ? std::fabs(bias[j]) : 0.0;
            for (size_t kk = 0; kk < depth; ++kk) {
              const double term =
                  double(a[r * lda + kk]) * panel[kk * kCols + j];
              ref += term;
              scale = std::max(scale, std::fabs(term));
            }
            // Float FMA rounding grows about as sqrt(k) times the largest
            // term; a wrong element or index is off by O(1) terms.
            const double tol = 1e-5 * std::sqrt(double(depth + 1)) * scale;
            EXPECT_NEAR(got, ref, tol) << "C[" << r << "][" << j << "]";
          }
      }
  }
}

// Every panel width #tfm_codegen.gemm_tiling allows on this target: one to
// four vectors (the pass takes two), each with the columns that fit.
TEST_P(GemmTileRowsTest, MatchesNaiveReference) {
  const size_t depth = GetParam().k, cols = GetParam().cols;
  constexpr size_t kLanes = hn::MaxLanes(hn::ScalableTag<float>());
  bool ran = false;
  auto check = [&](auto width) {
    constexpr size_t kCols = decltype(width)::value;
    if (cols > kCols)
      return;
    checkGemmTileRows<kCols>(depth, cols);
    ran = true;
  };
  check(std::integral_constant<size_t, kLanes>());
  check(std::integral_constant<size_t, 2 * kLanes>());
  check(std::integral_constant<size_t, 3 * kLanes>());
  check(std::integral_constant<size_t, 4 * kLanes>());
  EXPECT_TRUE(ran) << cols << " columns fit no panel width of this target";
}

std::vector<GemmShape> gemmShapes() {
  std::vector<GemmShape> shapes;
  // Up to the widest panel this target allows: four vectors.
  const size_t widest = 4 * hn::MaxLanes(hn::ScalableTag<float>());
  for (size_t depth : {1, 3, 64, 257})
    for (size_t cols : {1, 3, 5, 8, 9, 16, 17, 31, 32, 33, 63, 64})
      if (cols <= widest)
        shapes.push_back({depth, cols});
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmTileRowsTest,
                         ::testing::ValuesIn(gemmShapes()),
                         [](const ::testing::TestParamInfo<GemmShape> &info) {
                           return "K" + std::to_string(info.param.k) + "_Cols" +
                                  std::to_string(info.param.cols);
                         });

//===----------------------------------------------------------------------===//
// TransposeRows
//===----------------------------------------------------------------------===//

struct TransposeShape {
  size_t rows;
  size_t cols;
};

void PrintTo(const TransposeShape &shape, std::ostream *os) {
  *os << shape.rows << " rows x " << shape.cols << " cols";
}

class TransposeRowsTest : public KernelTest,
                          public ::testing::WithParamInterface<TransposeShape> {
};

TEST_P(TransposeRowsTest, MatchesElementwise) {
  const size_t n = GetParam().rows, cols = GetParam().cols;
  SCOPED_TRACE("target " + targetName());
  // Source rows with padding (NaN: never read); the destination's rows
  // (one per column) with ldd - n sentinels after each, and one before.
  const size_t lds = cols + 3, ldd = n + 5;
  std::vector<float> src(n * lds, kNaN);
  for (size_t j = 0; j < n; ++j)
    for (size_t f = 0; f < cols; ++f)
      src[j * lds + f] = float(j * 1000 + f);
  std::vector<float> dstStore(1 + cols * ldd, kSentinel);
  float *dst = dstStore.data() + 1;
  k::TransposeRows(src.data(), lds, n, cols, dst, ldd);
  EXPECT_TRUE(sameBits(dstStore[0], kSentinel)) << "written before dst";
  for (size_t f = 0; f < cols; ++f)
    for (size_t j = 0; j < ldd; ++j) {
      const float got = dst[f * ldd + j];
      if (j < n)
        EXPECT_EQ(got, float(j * 1000 + f)) << "dst[" << f << "][" << j << "]";
      else
        EXPECT_TRUE(sameBits(got, kSentinel))
            << "dst[" << f << "][" << j << "] written: " << got;
    }
}

std::vector<TransposeShape> transposeShapes() {
  std::vector<TransposeShape> shapes;
  // Around 16 (AVX-512's in-register squares, blocks of 16 rows) and 8
  // (half vectors, half blocks), whole and with tails.
  for (size_t rows : {1, 7, 8, 9, 15, 16, 17, 24, 40, 64})
    for (size_t cols : {1, 7, 8, 9, 15, 16, 17, 24, 64})
      shapes.push_back({rows, cols});
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TransposeRowsTest, ::testing::ValuesIn(transposeShapes()),
    [](const ::testing::TestParamInfo<TransposeShape> &info) {
      return "Rows" + std::to_string(info.param.rows) + "_Cols" +
             std::to_string(info.param.cols);
    });

//===----------------------------------------------------------------------===//
// ExpFast
//===----------------------------------------------------------------------===//

class ExpFastTest : public KernelTest {};

TEST_F(ExpFastTest, MatchesStdExp) {
  SCOPED_TRACE("target " + targetName());
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  // Every float in [-1, 0] a step of 2^-16 apart, then [-87, -1], (0, 88]
  // and the clamped range below, in steps that are not multiples of ln 2.
  std::vector<float> xs;
  for (int i = 0; i <= 65536; ++i)
    xs.push_back(-float(i) / 65536.0f);
  for (float x = -1.0f; x >= -87.0f; x -= 0.0123f)
    xs.push_back(x);
  for (float x = 0.0123f; x <= 88.0f; x += 0.0123f)
    xs.push_back(x);
  for (float x : {88.0f, -87.0f, -87.5f, -100.0f, -1e30f, -INFINITY})
    xs.push_back(x);
  while (xs.size() % lanes != 0)
    xs.push_back(0.0f);
  auto out = hwy::AllocateAligned<float>(lanes);
  double worst = 0;
  for (size_t i = 0; i < xs.size(); i += lanes) {
    hn::Store(k::ExpFast(d, hn::LoadU(d, xs.data() + i)), d, out.get());
    for (size_t l = 0; l < lanes; ++l) {
      const float x = xs[i + l];
      const double want = std::exp(double(x));
      if (x < -87.0f) {
        // Clamped: e^-87, not 0.
        EXPECT_GE(out[l], 0.0f) << "x " << x;
        EXPECT_LE(out[l], 2e-38f) << "x " << x;
        continue;
      }
      const double rel = std::fabs(out[l] - want) / want;
      worst = std::max(worst, rel);
      EXPECT_LE(rel, 3e-7) << "x " << x << ": " << out[l] << " vs " << want;
    }
  }
  std::printf("[   hwy    ] ExpFast: worst relative error %.3g\n", worst);
}

//===----------------------------------------------------------------------===//
// SiLU and the gated rows (GLU variants)
//===----------------------------------------------------------------------===//

class SiluTest : public KernelTest {};

/// x sigmoid(x) against a double reference on [-100, 100] (past -87 the
/// capped exponential still gives 0 to float precision), every length 1..40.
TEST_F(SiluTest, MatchesReference) {
  SCOPED_TRACE("target " + targetName());
  std::vector<float> xs;
  for (float x = -100.0f; x <= 100.0f; x += 0.0113f)
    xs.push_back(x);
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e6f, -1e6f})
    xs.push_back(x);
  auto silu = [](double x) { return x / (1.0 + std::exp(-x)); };
  double worst = 0;
  for (size_t start = 0; start < xs.size(); start += 40) {
    const size_t n = std::min<size_t>(1 + start % 40, xs.size() - start);
    std::vector<float> a(xs.begin() + start, xs.begin() + start + n);
    a.push_back(kSentinel);
    k::SiluInPlace(a.data(), n);
    EXPECT_TRUE(sameBits(a[n], kSentinel));
    for (size_t i = 0; i < n; ++i) {
      const double x = xs[start + i], want = silu(x);
      const double err = std::fabs(a[i] - want);
      if (std::fabs(want) > 1e-30) // normal results: relative error
        worst = std::max(worst, err / std::fabs(want));
      // e^(-x) inherits x's float rounding times |x| (relative).
      EXPECT_LE(err, (5e-7 + 1.2e-7 * std::fabs(x)) * std::fabs(want) + 1e-30)
          << "silu(" << x << ") = " << a[i] << " vs " << want;
    }
  }
  std::printf("[   hwy    ] SiLU: worst relative error %.3g\n", worst);
}

/// act(gate) * up for every activation, every length 1..40, in place (y ==
/// gate) and not; nothing past n written.
TEST_F(SiluTest, GatedRowIsActivationTimesUp) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (size_t n = 1; n <= 40; ++n) {
    std::vector<float> gate(n), up(n);
    for (size_t i = 0; i < n; ++i) {
      gate[i] = dist(rng);
      up[i] = dist(rng);
    }
    std::vector<float> want = gate;
    k::SiluInPlace(want.data(), n);
    for (size_t i = 0; i < n; ++i)
      want[i] *= up[i];
    std::vector<float> out(n + 1, kSentinel), inPlace = gate;
    inPlace.push_back(kSentinel);
    auto silu = [](float *y, size_t m) { k::SiluInPlace(y, m); };
    k::GatedRow(gate.data(), up.data(), out.data(), n, silu);
    k::GatedRow(inPlace.data(), up.data(), inPlace.data(), n, silu);
    EXPECT_TRUE(sameBits(out[n], kSentinel) && sameBits(inPlace[n], kSentinel));
    for (size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(sameBits(out[i], want[i])) << "n " << n << " at " << i;
      EXPECT_TRUE(sameBits(inPlace[i], want[i])) << "n " << n << " at " << i;
    }
    // A different activation gives a different row: the functor is used.
    std::vector<float> relu(n);
    k::GatedRow(gate.data(), up.data(), relu.data(), n,
                [](float *y, size_t m) { k::ReluInPlace(y, m); });
    for (size_t i = 0; i < n; ++i)
      EXPECT_FLOAT_EQ(relu[i], std::max(gate[i], 0.0f) * up[i]);
  }
}

//===----------------------------------------------------------------------===//
// RMS norm
//===----------------------------------------------------------------------===//

class RmsNormTest : public KernelTest {};

/// x / sqrt(mean(x^2) + eps) * gamma against double, every width 1..70 and
/// rows of large values (where a layer norm would differ: no centring); the
/// fused form equals Add then RmsNormRow bit for bit.
TEST_F(RmsNormTest, MatchesReference) {
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (size_t n = 1; n <= 70; ++n) {
    for (float offset : {0.0f, 100.0f}) {
      std::vector<float> x(n), other(n), gamma(n);
      for (size_t i = 0; i < n; ++i) {
        x[i] = offset + dist(rng);
        other[i] = dist(rng);
        gamma[i] = dist(rng);
      }
      const float eps = 1e-6f;
      double squares = 0;
      for (float v : x)
        squares += double(v) * v;
      const double inv = 1.0 / std::sqrt(squares / double(n) + eps);
      std::vector<float> y(n + 1, kSentinel);
      k::RmsNormRow(x.data(), gamma.data(), eps, n, y.data());
      EXPECT_TRUE(sameBits(y[n], kSentinel));
      for (size_t i = 0; i < n; ++i) {
        const double want = double(x[i]) * inv * gamma[i];
        EXPECT_NEAR(y[i], want, 2e-6 * (1.0 + std::fabs(want)))
            << "n " << n << " offset " << offset << " at " << i;
      }
      std::vector<float> sum(n), fused(n), sumRef(n), ref(n);
      k::AddRmsNormRow(x.data(), other.data(), gamma.data(), eps, n, sum.data(),
                       fused.data());
      k::Add(x.data(), other.data(), sumRef.data(), n);
      k::RmsNormRow(sumRef.data(), gamma.data(), eps, n, ref.data());
      std::vector<float> noSum(n);
      k::AddRmsNormRow(x.data(), other.data(), gamma.data(), eps, n, nullptr,
                       noSum.data());
      for (size_t i = 0; i < n; ++i) {
        EXPECT_TRUE(sameBits(sum[i], sumRef[i]));
        EXPECT_TRUE(sameBits(fused[i], ref[i]));
        EXPECT_TRUE(sameBits(noSum[i], ref[i]));
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

class GeluTest : public KernelTest {};

/// Both GELUs against double references on [-12, 12] (beyond, and at 0:
/// exactly their limits), every length 1..40 so that partial vectors run.
TEST_F(GeluTest, MatchesReferences) {
  SCOPED_TRACE("target " + targetName());
  std::vector<float> xs;
  for (float x = -12.0f; x <= 12.0f; x += 0.00173f)
    xs.push_back(x);
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 30.0f, -30.0f, 1e6f, -1e6f})
    xs.push_back(x);
  // In forms without cancellation for negative x: 1 + erf and 1 + tanh
  // round to 0 in double long before the result does.
  auto exact = [](double x) {
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
  };
  auto tanhForm = [](double x) {
    const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    return x / (1.0 + std::exp(-2.0 * u));
  };
  double worstExact = 0, worstTanh = 0;
  for (size_t start = 0; start < xs.size(); start += 40) {
    const size_t n = std::min<size_t>(1 + start % 40, xs.size() - start);
    std::vector<float> a(xs.begin() + start, xs.begin() + start + n), b = a;
    // A sentinel past the end: never written.
    a.push_back(kSentinel);
    b.push_back(kSentinel);
    k::GeluInPlace(a.data(), n);
    k::GeluTanhInPlace(b.data(), n);
    EXPECT_TRUE(sameBits(a[n], kSentinel) && sameBits(b[n], kSentinel));
    for (size_t i = 0; i < n; ++i) {
      const double x = xs[start + i];
      // erf's absolute error (1.5e-7) scaled by x / 2; rounding, relative.
      const double errExact = std::fabs(a[i] - exact(x));
      const double errTanh = std::fabs(b[i] - tanhForm(x));
      worstExact = std::max(worstExact, errExact / (1.0 + std::fabs(x)));
      worstTanh = std::max(worstTanh, errTanh / (1.0 + std::fabs(x)));
      EXPECT_LE(errExact,
                1e-7 * std::fabs(x) + 4e-7 * std::fabs(exact(x)) + 1e-30)
          << "gelu(" << x << ") = " << a[i] << " vs " << exact(x);
      // e^(-2u) inherits u's float rounding times |2u| (relative).
      const double twoU =
          2.0 * std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
      EXPECT_LE(errTanh,
                (4e-7 + 3e-7 * std::fabs(twoU)) * std::fabs(tanhForm(x)) +
                    1e-30)
          << "gelu_tanh(" << x << ") = " << b[i] << " vs " << tanhForm(x);
    }
  }
  std::printf("[   hwy    ] GELU: worst error / (1 + |x|): exact %.3g, tanh "
              "form %.3g\n",
              worstExact, worstTanh);
}

//===----------------------------------------------------------------------===//
// Blocked attention: TransposedKeyScoresRows + OnlineSoftmaxBlockRows
//===----------------------------------------------------------------------===//

/// One head's keys and values, laid out as the generated code reads them:
/// keys transposed (kt[f * ldk + j]), values by row (v[j * ldv + c]), both
/// with NaN padding that must never be read.
struct KeysValues {
  size_t sk, dk, dv, ldk, ldv;
  std::vector<float> kt, v;

  KeysValues(size_t sk, size_t dk, size_t dv)
      : sk(sk), dk(dk), dv(dv), ldk(sk + 3), ldv(dv + 2), kt(dk * ldk, kNaN),
        v(sk * ldv, kNaN) {}
  float key(size_t j, size_t f) const { return kt[f * ldk + j]; }
  float &key(size_t j, size_t f) { return kt[f * ldk + j]; }
  float value(size_t j, size_t c) const { return v[j * ldv + c]; }
  float &value(size_t j, size_t c) { return v[j * ldv + c]; }
};

/// The query rows of one task: each real row's query and output have their
/// own buffers; outputs sit between sentinels.
struct QueryRows {
  // A whole vector: a full store past the end lands in the sentinel.
  static constexpr size_t kPad = hn::MaxLanes(hn::ScalableTag<float>());
  size_t dk, dv;
  std::vector<std::vector<float>> q, outStore;

  QueryRows(size_t rows, size_t dk, size_t dv)
      : dk(dk), dv(dv), q(rows, std::vector<float>(dk)),
        outStore(rows, std::vector<float>(dv + 2 * kPad, kSentinel)) {}
  float *out(size_t r) { return outStore[r].data() + kPad; }
};

/// softmax(scale q k^T) v over the first `limit` keys, in double.
std::vector<double> referenceAttention(const std::vector<float> &q,
                                       const KeysValues &kv, size_t limit,
                                       float scale) {
  std::vector<double> scores(limit);
  double maxScore = -INFINITY;
  for (size_t j = 0; j < limit; ++j) {
    double s = 0;
    for (size_t f = 0; f < kv.dk; ++f)
      s += double(q[f]) * kv.key(j, f);
    scores[j] = s * scale;
    maxScore = std::max(maxScore, scores[j]);
  }
  double sum = 0;
  for (double &s : scores)
    sum += s = std::exp(s - maxScore);
  std::vector<double> out(kv.dv, 0.0);
  for (size_t j = 0; j < limit; ++j)
    for (size_t c = 0; c < kv.dv; ++c)
      out[c] += scores[j] / sum * kv.value(j, c);
  return out;
}

/// The attention of one task of `rows` (<= kRows) query rows, exactly as
/// AttentionEmitter's emitAttentionCore emits it for tiles of kRows query
/// rows and kKeyBlock keys: rows past the last repeat its query and output
/// pointers; keys[r] is row r's key limit, and the last row's is the
/// largest.
template <size_t kRows, size_t kKeyBlock>
void runBlockedAttention(QueryRows &qr, size_t rows, const KeysValues &kv,
                         const std::vector<int64_t> &limits, float scale) {
  const float *qs[kRows];
  float *os[kRows];
  int64_t keys[kRows];
  k::OnlineSoftmax states[kRows];
  for (size_t r = 0; r < kRows; ++r) {
    const size_t i = std::min(r, rows - 1);
    qs[r] = qr.q[i].data();
    os[r] = qr.out(i);
    keys[r] = limits[i];
    if (r < rows)
      k::Zero(os[r], kv.dv);
  }
  HWY_ALIGN float s[kRows * kKeyBlock];
  for (int64_t j0 = 0; j0 < keys[rows - 1]; j0 += kKeyBlock) {
    const int64_t n = std::min<int64_t>(kKeyBlock, keys[rows - 1] - j0);
    k::TransposedKeyScoresRows<kRows, kKeyBlock>(qs, kv.kt.data() + j0, kv.ldk,
                                                 n, kv.dk, scale, s);
    size_t blockKeys[kRows];
    for (size_t r = 0; r < rows; ++r)
      blockKeys[r] = size_t(std::clamp<int64_t>(keys[r] - j0, 0, n));
    k::OnlineSoftmaxBlockRows<kRows, kKeyBlock>(states, s, n, blockKeys, rows,
                                                kv.v.data() + j0 * kv.ldv,
                                                kv.ldv, os, kv.dv);
  }
  for (size_t r = 0; r < rows; ++r)
    k::Scale(1.0f / states[r].sum, os[r], os[r], kv.dv);
}

/// A tile of the blocked attention and its instance of the kernels.
struct AttentionTile {
  size_t rows;
  size_t keyBlock;
  void (*run)(QueryRows &, size_t, const KeysValues &,
              const std::vector<int64_t> &, float);
};

template <size_t kRows, size_t kKeyBlock> AttentionTile attentionTile() {
  return {kRows, kKeyBlock, &runBlockedAttention<kRows, kKeyBlock>};
}

/// This target's default tile (tfm-select-attention-tiling's for long
/// sequences) and others #tfm_codegen.attention_tiling allows: one row (a
/// decoding step's), the most rows, blocks of one vector's worth of keys and of
/// several passes.
std::vector<AttentionTile> attentionTiles() {
  return {attentionTile<k::ForVectorBits(8, 2, 2), 64>(),
          attentionTile<1, 16>(), attentionTile<3, 48>(),
          attentionTile<16, 128>()};
}

std::string tileName(const AttentionTile &tile) {
  return "tile " + std::to_string(tile.rows) + " rows x " +
         std::to_string(tile.keyBlock) + " keys";
}

/// Runs the blocked attention and checks every real row against the
/// reference, and the sentinels around its output. The tolerance is
/// relative to the values' magnitude, widened by the float rounding of the
/// scores (eps times the sum of |terms|), which large scores make matter.
void checkBlockedAttention(const AttentionTile &tile, QueryRows &qr,
                           size_t rows, const KeysValues &kv,
                           const std::vector<int64_t> &limits, float scale) {
  tile.run(qr, rows, kv, limits, scale);
  for (size_t r = 0; r < rows; ++r) {
    SCOPED_TRACE("row " + std::to_string(r) + " of " + std::to_string(rows) +
                 ", " + std::to_string(limits[r]) + " keys");
    const size_t limit = size_t(limits[r]);
    const std::vector<double> ref =
        referenceAttention(qr.q[r], kv, limit, scale);
    double maxValue = 0, maxScoreTerms = 0;
    for (size_t j = 0; j < limit; ++j) {
      double terms = 0;
      for (size_t f = 0; f < kv.dk; ++f)
        terms += std::fabs(double(qr.q[r][f]) * kv.key(j, f));
      maxScoreTerms = std::max(maxScoreTerms, terms * scale);
      for (size_t c = 0; c < kv.dv; ++c)
        maxValue = std::max(maxValue, std::fabs(double(kv.value(j, c))));
    }
    const double tol =
        maxValue *
        (1e-5 + 4 * std::numeric_limits<float>::epsilon() * maxScoreTerms);
    const std::vector<float> &store = qr.outStore[r];
    for (size_t i = 0; i < store.size(); ++i) {
      if (i < QueryRows::kPad || i >= QueryRows::kPad + kv.dv) {
        EXPECT_TRUE(sameBits(store[i], kSentinel))
            << "written at " << int64_t(i) - int64_t(QueryRows::kPad);
        continue;
      }
      const size_t c = i - QueryRows::kPad;
      EXPECT_NEAR(store[i], ref[c], tol) << "out[" << c << "]";
    }
  }
}

/// Key limits of one task: every row all sk keys, or causal ones that grow
/// by one per row from first (clamped to sk).
std::vector<int64_t> keyLimits(size_t rows, size_t sk, size_t first) {
  std::vector<int64_t> limits(rows);
  for (size_t r = 0; r < rows; ++r)
    limits[r] = int64_t(std::min(sk, first + r));
  return limits;
}

struct AttentionShape {
  size_t dk;
  size_t sk;
};

void PrintTo(const AttentionShape &shape, std::ostream *os) {
  *os << "dk " << shape.dk << " sk " << shape.sk;
}

class BlockedAttentionTest
    : public KernelTest,
      public ::testing::WithParamInterface<AttentionShape> {};

TEST_P(BlockedAttentionTest, MatchesNaiveSoftmax) {
  const size_t dk = GetParam().dk, sk = GetParam().sk, dv = dk;
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(2000 + dk * 53 + sk);
  KeysValues kv(sk, dk, dv);
  for (size_t j = 0; j < sk; ++j) {
    for (size_t f = 0; f < dk; ++f)
      kv.key(j, f) = std::uniform_real_distribution<float>(-1, 1)(rng);
    fillUniform(rng, &kv.value(j, 0), dv);
  }
  // Scores of a few units: weights far from uniform.
  const float scale = 2.0f / std::sqrt(float(dk));

  for (const AttentionTile &tile : attentionTiles()) {
    // The first row's limit: 1 (the first causal row), ones whose rows
    // straddle the ends of the first and second blocks (some rows take no
    // key of the last block), and sk (not causal).
    const size_t qRows = tile.rows, block = tile.keyBlock;
    std::vector<size_t> firsts = {1,
                                  2,
                                  block - qRows / 2,
                                  block,
                                  block + 1,
                                  2 * block - 1,
                                  2 * block + 3,
                                  sk > qRows ? sk - qRows + 1 : 1,
                                  sk};
    for (size_t rows = 1; rows <= qRows; ++rows) {
      QueryRows qr(rows, dk, dv);
      for (auto &q : qr.q)
        fillUniform(rng, q.data(), dk);
      for (size_t first : firsts) {
        if (first > sk)
          continue;
        SCOPED_TRACE(tileName(tile) + ": dk " + std::to_string(dk) + " sk " +
                     std::to_string(sk) + " rows " + std::to_string(rows) +
                     (first == sk ? " not causal"
                                  : " causal from " + std::to_string(first)));
        for (auto &store : qr.outStore)
          std::fill(store.begin(), store.end(), kSentinel);
        checkBlockedAttention(tile, qr, rows, kv, keyLimits(rows, sk, first),
                              scale);
      }
    }
  }
}

std::vector<AttentionShape> attentionShapes() {
  std::vector<AttentionShape> shapes;
  for (size_t dk : {8, 24, 64, 80})
    for (size_t sk : {1, 7, 64, 65, 200})
      shapes.push_back({dk, sk});
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BlockedAttentionTest, ::testing::ValuesIn(attentionShapes()),
    [](const ::testing::TestParamInfo<AttentionShape> &info) {
      return "Dk" + std::to_string(info.param.dk) + "_Keys" +
             std::to_string(info.param.sk);
    });

/// Scores of +-30 and more that rise, fall or jump from block to block: the
/// running max changes by tens between blocks, so the rescale of the sum
/// and of the output (by exp(-60) and the like) must be right, and a new
/// maximum inside a block must not overflow the exponentials.
class BlockedAttentionLargeScoresTest : public KernelTest {};

TEST_F(BlockedAttentionLargeScoresTest, RescalesRunningMax) {
  SCOPED_TRACE("target " + targetName());
  const size_t sk = 200;
  enum Trend { Rising, Falling, Jumping };
  const char *const trendNames[] = {"rising", "falling", "jumping"};
  for (size_t dk : {8, 64, 80}) {
    const size_t dv = dk;
    const float scale = 1.0f / std::sqrt(float(dk));
    for (Trend trend : {Rising, Falling, Jumping}) {
      std::mt19937 rng(3000 + dk * 3 + trend);
      // Feature 0 carries the trend: k_j[0] = t_j sqrt(dk) and q[0] in
      // [0.5, 1.5] make row r's score about q_r[0] t_j, plus O(1) noise
      // from the other features.
      KeysValues kv(sk, dk, dv);
      std::uniform_real_distribution<float> noise(-1, 1), jump(-35, 35);
      for (size_t j = 0; j < sk; ++j) {
        const float t = trend == Rising    ? -30.0f + 60.0f * j / (sk - 1)
                        : trend == Falling ? 30.0f - 60.0f * j / (sk - 1)
                                           : jump(rng);
        kv.key(j, 0) = t / scale;
        for (size_t f = 1; f < dk; ++f)
          kv.key(j, f) = noise(rng);
        fillUniform(rng, &kv.value(j, 0), dv);
      }
      for (const AttentionTile &tile : attentionTiles())
        for (size_t rows : {size_t(1), tile.rows}) {
          QueryRows qr(rows, dk, dv);
          for (auto &q : qr.q) {
            fillUniform(rng, q.data(), dk);
            q[0] = std::uniform_real_distribution<float>(0.5f, 1.5f)(rng);
          }
          for (size_t first : {size_t(1), tile.keyBlock - 1, sk}) {
            SCOPED_TRACE(tileName(tile) + ": dk " + std::to_string(dk) + " " +
                         trendNames[trend] + " rows " + std::to_string(rows) +
                         " first limit " + std::to_string(first));
            for (auto &store : qr.outStore)
              std::fill(store.begin(), store.end(), kSentinel);
            checkBlockedAttention(tile, qr, rows, kv,
                                  keyLimits(rows, sk, first), scale);
          }
        }
    }
  }
}

} // namespace
