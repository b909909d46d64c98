//===- FeatureKernelsTest.cpp - performer's features and linear attention -===//
//
// Against scalar references: see KernelTestSupport.h. PositiveFeatures on
// every feature count and row length around the vector and Dot4 tails;
// PositiveFeatureRows (a block of rows against the weights transposed)
// likewise, over row counts around its register tile's; AddKeyFeatures
// and ApplyKeyFeatures as linear attention, not causal (the keys added in
// blocks, then every row) and causal (blocks of rows, each reading the
// sums of the keys before the block and its own keys in it), against the
// quadratic form sum_j (fq . fk_j) v_j / sum_j fq . fk_j.
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
  // Features are positive (exponentials); values any sign. Rows are one
  // float longer than they hold (a stride, as the generated code's are).
  std::uniform_real_distribution<float> positive(0.05f, 2.0f);
  const size_t fStride = count + 1, vStride = dv + 2, oStride = dv + 1;
  std::vector<float> fq(s * fStride), fk(s * fStride), v(s * vStride);
  for (float &f : fq)
    f = positive(rng);
  for (float &f : fk)
    f = positive(rng);
  fillUniform(rng, v.data(), v.size());
  // The reference reads rows of `count` and `dv` floats.
  std::vector<float> fqRows(s * count), fkRows(s * count), vRows(s * dv);
  for (size_t i = 0; i < s; ++i) {
    std::copy_n(fq.data() + i * fStride, count, fqRows.data() + i * count);
    std::copy_n(fk.data() + i * fStride, count, fkRows.data() + i * count);
    std::copy_n(v.data() + i * vStride, dv, vRows.data() + i * dv);
  }
  // Not causal: the keys in blocks (the generated code's are 128), then
  // every row at once. Causal: blocks of query rows as the generated code
  // runs them (a block: the sums of the keys before its first row's own,
  // then its own keys), row i seeing keys [0, min(s, offset + i + 1)).
  // Carried: as a key/value cache's calls do, a prefill of the first half
  // of the rows, then one call a row, each call's keys its own rows and
  // the sums carried from call to call (every key of a call added after
  // its last block).
  struct Form {
    bool causal;
    size_t block, offset;
    bool carried = false;
  };
  for (Form form :
       {Form{false, 1, 0}, Form{false, 5, 0}, Form{false, s, 0},
        Form{true, 1, 0}, Form{true, 3, 0}, Form{true, 32, 0}, Form{true, 4, 2},
        Form{true, 3, 0, true}, Form{true, 16, 0, true}}) {
    SCOPED_TRACE(
        (form.causal ? "causal, blocks of " : "not causal, blocks of ") +
        std::to_string(form.block) + " rows, offset " +
        std::to_string(form.offset) + (form.carried ? ", carried" : ""));
    // The sums with a sentinel after them; each output row likewise.
    std::vector<float> sums(count * (dv + 1) + 1, kSentinel);
    k::Zero(sums.data(), count * (dv + 1));
    float *featureSums = sums.data() + count * dv;
    std::vector<float> out(s * oStride, kSentinel);
    if (!form.causal) {
      for (size_t j0 = 0; j0 < s; j0 += form.block)
        k::AddKeyFeatures(
            fk.data() + j0 * fStride, fStride, v.data() + j0 * vStride, vStride,
            std::min(form.block, s - j0), count, dv, sums.data(), featureSums);
      k::ApplyKeyFeatures(fq.data(), fStride, s, sums.data(), featureSums,
                          count, dv, out.data(), oStride);
    } else {
      // One call: rows [c0, c0 + n) and, carried, keys of its own rows.
      auto call = [&](size_t c0, size_t n) {
        const size_t sk = form.carried ? n : s, k0 = form.carried ? c0 : 0;
        const float *fkc = fk.data() + k0 * fStride,
                    *vc = v.data() + k0 * vStride;
        size_t added = 0;
        for (size_t i0 = 0; i0 < n; i0 += form.block) {
          const size_t rows = std::min(form.block, n - i0);
          const size_t first = std::min(sk, form.offset + i0),
                       last = std::min(sk, form.offset + i0 + rows);
          if (first > added)
            k::AddKeyFeatures(fkc + added * fStride, fStride,
                              vc + added * vStride, vStride, first - added,
                              count, dv, sums.data(), featureSums);
          added = std::max(added, first);
          k::ApplyKeyFeatures(fq.data() + (c0 + i0) * fStride, fStride, rows,
                              sums.data(), featureSums, count, dv,
                              out.data() + (c0 + i0) * oStride, oStride,
                              fkc + first * fStride, fStride,
                              vc + first * vStride, vStride, last - first);
        }
        if (form.carried && added < sk)
          k::AddKeyFeatures(fkc + added * fStride, fStride,
                            vc + added * vStride, vStride, sk - added, count,
                            dv, sums.data(), featureSums);
      };
      if (!form.carried) {
        call(0, s);
      } else {
        call(0, s / 2);
        for (size_t i = s / 2; i < s; ++i)
          call(i, 1);
      }
    }
    for (size_t i = 0; i < s; ++i) {
      std::vector<double> expected = quadraticRow(
          fqRows, i, fkRows, vRows,
          form.causal ? std::min(s, form.offset + i + 1) : s, count, dv);
      for (size_t e = 0; e < dv; ++e)
        EXPECT_NEAR(out[i * oStride + e], expected[e], 2e-5)
            << "row " << i << " column " << e;
      EXPECT_TRUE(sameBits(out[i * oStride + dv], kSentinel)) << "row " << i;
    }
    EXPECT_TRUE(sameBits(sums.back(), kSentinel));
  }
}

class PositiveFeatureRowsTest
    : public KernelTest,
      public ::testing::WithParamInterface<FeatureShape> {};

TEST_P(PositiveFeatureRowsTest, MatchesExpOfDotsLessShift) {
  const size_t count = GetParam().features, n = GetParam().width;
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(unsigned(count * 71 + n));
  for (size_t rows : {size_t{1}, size_t{3}, size_t{8}, size_t{9}, size_t{16}}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    std::vector<float> x(rows * n), w(count * n), wt(n * count), shifts(rows);
    fillUniform(rng, x.data(), x.size());
    fillUniform(rng, w.data(), w.size());
    fillUniform(rng, shifts.data(), rows);
    for (size_t m = 0; m < count; ++m)
      for (size_t i = 0; i < n; ++i)
        wt[i * count + m] = w[m * n + i];
    // Output rows two floats longer than the features, sentinels in the
    // gaps and after the last.
    const size_t stride = count + 2;
    std::vector<float> out(rows * stride + 1, kSentinel);
    k::PositiveFeatureRows(x.data(), rows, wt.data(), count, n, shifts.data(),
                           out.data(), stride);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t m = 0; m < count; ++m) {
        double dot = 0, magnitude = 0;
        for (size_t i = 0; i < n; ++i) {
          dot += double(x[r * n + i]) * double(w[m * n + i]);
          magnitude += std::fabs(double(x[r * n + i]) * double(w[m * n + i]));
        }
        double expected = std::exp(dot - double(shifts[r]));
        // The dot product summed in order of i (one FMA chain): its error,
        // at most n roundings of the terms' magnitude, is exp's relative
        // error, beside exp's own.
        double bound = 2e-6 + double(n) * 0x1p-24 * magnitude;
        EXPECT_NEAR(out[r * stride + m], expected, bound * expected)
            << "row " << r << " feature " << m;
      }
      EXPECT_TRUE(sameBits(out[r * stride + count], kSentinel));
      EXPECT_TRUE(sameBits(out[r * stride + count + 1], kSentinel));
    }
    EXPECT_TRUE(sameBits(out.back(), kSentinel));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PositiveFeatureRowsTest,
    ::testing::Values(FeatureShape{1, 1}, FeatureShape{3, 4},
                      FeatureShape{5, 7}, FeatureShape{16, 64},
                      FeatureShape{17, 17}, FeatureShape{33, 20},
                      FeatureShape{40, 8}, FeatureShape{64, 32},
                      FeatureShape{256, 64}));

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearAttentionTest,
    ::testing::Values(LinearShape{1, 1, 1}, LinearShape{3, 4, 8},
                      LinearShape{7, 5, 3}, LinearShape{16, 16, 16},
                      LinearShape{20, 17, 9}, LinearShape{33, 64, 64},
                      LinearShape{70, 40, 37}));

} // namespace
