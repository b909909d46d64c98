//===- RowKernelsTest.cpp - transposes, exp, activations, norms
//-------------===//
//
// Against scalar references: see KernelTestSupport.h.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

namespace {
using namespace tfm::kernel_test;

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
// TopKSoftmax (a mixture of experts' routing)
//===----------------------------------------------------------------------===//

/// The reference: indices sorted by value, largest first, a tie to the
/// lower index (a stable sort), then the softmax over the first k in
/// double.
void topKReference(const std::vector<float> &x, size_t k,
                   std::vector<int32_t> &index, std::vector<double> &weight) {
  std::vector<int32_t> order(x.size());
  for (size_t e = 0; e < x.size(); ++e)
    order[e] = int32_t(e);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return x[a] > x[b]; });
  index.assign(order.begin(), order.begin() + k);
  double sum = 0;
  weight.clear();
  for (size_t s = 0; s < k; ++s) {
    weight.push_back(std::exp(double(x[index[s]]) - double(x[index[0]])));
    sum += weight.back();
  }
  for (double &w : weight)
    w /= sum;
}

class TopKSoftmaxTest : public KernelTest {};

TEST_F(TopKSoftmaxTest, ChoosesTheLargestLowerIndexOnTies) {
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> level(-3, 3);
  std::normal_distribution<float> value(0.0f, 4.0f);
  for (size_t n : {1, 2, 3, 5, 8, 16, 64, 257})
    for (size_t k : {size_t(1), size_t(2), size_t(3), n})
      for (bool ties : {false, true}) {
        if (k > n)
          continue;
        std::vector<float> x(n);
        // With ties: a few levels only, so many experts share a logit.
        for (float &v : x)
          v = ties ? float(level(rng)) : value(rng);
        std::vector<int32_t> index(k + 1, -7), want;
        std::vector<float> weight(k + 1, kSentinel);
        std::vector<double> wantWeight;
        k::TopKSoftmax(x.data(), n, k, index.data(), weight.data());
        topKReference(x, k, want, wantWeight);
        SCOPED_TRACE("n " + std::to_string(n) + ", k " + std::to_string(k) +
                     (ties ? ", ties" : ""));
        EXPECT_EQ(index[k], -7) << "wrote past k indices";
        EXPECT_TRUE(sameBits(weight[k], kSentinel)) << "wrote past k weights";
        double sum = 0;
        for (size_t s = 0; s < k; ++s) {
          EXPECT_EQ(index[s], want[s]) << "slot " << s;
          EXPECT_NEAR(weight[s], wantWeight[s], 1e-6) << "slot " << s;
          sum += weight[s];
        }
        EXPECT_NEAR(sum, 1.0, 1e-7 * double(k + 8)); // k float roundings
      }
}

TEST_F(TopKSoftmaxTest, NaNLogitsStillChooseDistinctExperts) {
  SCOPED_TRACE("target " + targetName());
  // A NaN is never larger: the real logits win, and every slot names a
  // distinct expert in range even when all are NaN (never out of bounds).
  std::vector<float> x = {kNaN, 1.0f, kNaN, 3.0f, 2.0f};
  int32_t index[3];
  float weight[3];
  k::TopKSoftmax(x.data(), x.size(), 3, index, weight);
  EXPECT_EQ(index[0], 3);
  EXPECT_EQ(index[1], 4);
  EXPECT_EQ(index[2], 1);
  std::vector<float> nans(4, kNaN);
  int32_t all[4];
  float allWeight[4];
  k::TopKSoftmax(nans.data(), nans.size(), 4, all, allWeight);
  std::vector<int32_t> sorted(all, all + 4);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int32_t>{0, 1, 2, 3}));
}

//===----------------------------------------------------------------------===//

} // namespace
