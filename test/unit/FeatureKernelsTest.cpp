//===- FeatureKernelsTest.cpp - performer's features and linear attention -===//
//
// Against scalar references: see KernelTestSupport.h. PositiveFeatures on
// every feature count and row length around the vector and Dot4 tails;
// AddKeyFeatures and ApplyKeyFeatures as linear attention, not causal (all
// keys added, then every row) and causal (each row after its own key),
// against the quadratic form sum_j (fq . fk_j) v_j / sum_j fq . fk_j.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

namespace {
using namespace tfm::kernel_test;

struct FeatureShape {
  size_t features;
  size_t width;
};

void PrintTo(const FeatureShape &shape, std::ostream *os) {
  *os << shape.features << " features of rows of " << shape.width;
}

class PositiveFeaturesTest
    : public KernelTest,
      public ::testing::WithParamInterface<FeatureShape> {};

TEST_P(PositiveFeaturesTest, MatchesExpOfDotsLessShift) {
  const size_t count = GetParam().features, n = GetParam().width;
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(unsigned(count * 131 + n));
  std::vector<float> x(n), w(count * n);
  fillUniform(rng, x.data(), n);
  fillUniform(rng, w.data(), w.size());
  for (float shift : {0.0f, 1.75f, -2.5f}) {
    SCOPED_TRACE("shift " + std::to_string(shift));
    // One sentinel before and after the features.
    std::vector<float> store(count + 2, kSentinel);
    k::PositiveFeatures(x.data(), w.data(), count, n, shift, store.data() + 1);
    EXPECT_TRUE(sameBits(store.front(), kSentinel));
    EXPECT_TRUE(sameBits(store.back(), kSentinel));
    for (size_t m = 0; m < count; ++m) {
      double dot = 0;
      for (size_t i = 0; i < n; ++i)
        dot += double(x[i]) * double(w[m * n + i]);
      double expected = std::exp(dot - double(shift));
      EXPECT_NEAR(store[1 + m], expected, 2e-6 * expected) << "feature " << m;
    }
  }
}

TEST_F(KernelTest, PositiveFeaturesOfLargeArgumentsStayFinite) {
  // FAVOR+ has no stabiliser: an argument past exp's float range is capped
  // (at e^88), not infinity or a wrapped exponent.
  std::vector<float> x = {10.0f, 10.0f}, w = {5.0f, 5.0f, -5.0f, -5.0f};
  float out[2];
  k::PositiveFeatures(x.data(), w.data(), 2, 2, 0.0f, out);
  EXPECT_TRUE(std::isfinite(out[0]));
  EXPECT_GT(out[0], 1e38f);
  EXPECT_GE(out[1], 0.0f);
  EXPECT_LT(out[1], 1e-37f);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PositiveFeaturesTest,
    ::testing::Values(FeatureShape{1, 1}, FeatureShape{3, 4},
                      FeatureShape{4, 8}, FeatureShape{5, 7},
                      FeatureShape{8, 16}, FeatureShape{15, 3},
                      FeatureShape{16, 64}, FeatureShape{17, 17},
                      FeatureShape{33, 20}, FeatureShape{64, 32}));

struct LinearShape {
  size_t keys;
  size_t features;
  size_t dv;
};

void PrintTo(const LinearShape &shape, std::ostream *os) {
  *os << shape.keys << " keys, " << shape.features << " features, dv "
      << shape.dv;
}

class LinearAttentionTest : public KernelTest,
                            public ::testing::WithParamInterface<LinearShape> {
};

/// Row i of sum_j (fq_i . fk_j) v_j / sum_j fq_i . fk_j over keys [0, end).
std::vector<double> quadraticRow(const std::vector<float> &fq, size_t i,
                                 const std::vector<float> &fk,
                                 const std::vector<float> &v, size_t end,
                                 size_t count, size_t dv) {
  std::vector<double> out(dv, 0.0);
  double den = 0;
  for (size_t j = 0; j < end; ++j) {
    double a = 0;
    for (size_t m = 0; m < count; ++m)
      a += double(fq[i * count + m]) * double(fk[j * count + m]);
    den += a;
    for (size_t e = 0; e < dv; ++e)
      out[e] += a * double(v[j * dv + e]);
  }
  for (double &o : out)
    o /= den;
  return out;
}

TEST_P(LinearAttentionTest, SumsEqualTheQuadraticForm) {
  const size_t s = GetParam().keys, count = GetParam().features,
               dv = GetParam().dv;
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(unsigned(s * 977 + count * 13 + dv));
  // Features are positive (exponentials); values any sign.
  std::uniform_real_distribution<float> positive(0.05f, 2.0f);
  std::vector<float> fq(s * count), fk(s * count), v(s * dv);
  for (float &f : fq)
    f = positive(rng);
  for (float &f : fk)
    f = positive(rng);
  fillUniform(rng, v.data(), v.size());
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    // The sums with a sentinel after them; each output row likewise.
    std::vector<float> sums(count * (dv + 1) + 1, kSentinel);
    k::Zero(sums.data(), count * (dv + 1));
    float *featureSums = sums.data() + count * dv;
    std::vector<float> out(s * (dv + 1), kSentinel);
    size_t added = 0;
    if (!causal)
      for (; added < s; ++added)
        k::AddKeyFeatures(fk.data() + added * count, v.data() + added * dv,
                          count, dv, sums.data(), featureSums);
    for (size_t i = 0; i < s; ++i) {
      for (; added < i + 1 && causal; ++added)
        k::AddKeyFeatures(fk.data() + added * count, v.data() + added * dv,
                          count, dv, sums.data(), featureSums);
      k::ApplyKeyFeatures(fq.data() + i * count, sums.data(), featureSums,
                          count, dv, out.data() + i * (dv + 1));
      std::vector<double> expected =
          quadraticRow(fq, i, fk, v, causal ? i + 1 : s, count, dv);
      for (size_t e = 0; e < dv; ++e)
        EXPECT_NEAR(out[i * (dv + 1) + e], expected[e], 2e-5)
            << "row " << i << " column " << e;
      EXPECT_TRUE(sameBits(out[i * (dv + 1) + dv], kSentinel)) << "row " << i;
    }
    EXPECT_TRUE(sameBits(sums.back(), kSentinel));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearAttentionTest,
    ::testing::Values(LinearShape{1, 1, 1}, LinearShape{3, 4, 8},
                      LinearShape{7, 5, 3}, LinearShape{16, 16, 16},
                      LinearShape{20, 17, 9}, LinearShape{33, 64, 64}));

} // namespace
