// Performer's (FAVOR+) micro-kernels: positive random features (one row's,
// or a block of rows' against the features' weights transposed), and
// linear attention's sums over the keys' features (their products with
// the value rows, and the features alone), added a block of keys at a time
// and read by a block of query rows, both through MultiplyAdd's register
// tiles. The loops over heads, row and key blocks, and whether the sums
// run along the rows (causal), are in the generated code.
//
// Per-target file: include after hwy/highway.h (or from a file that
// foreach_target.h re-includes).

#if defined(TFM_RUNTIME_KERNELS_FEATURES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_FEATURES_INL_H_
#undef TFM_RUNTIME_KERNELS_FEATURES_INL_H_
#else
#define TFM_RUNTIME_KERNELS_FEATURES_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "tfm/runtime/kernels/exp-inl.h"
#include "tfm/runtime/kernels/vector-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// y[i] = exp(y[i] - shift) for i < count, in place: the features of dot
/// products y. Arguments above 88 give about 1.6e38 instead of
/// overflowing to infinity (FAVOR+ has no stabiliser: such rows have lost
/// their precision either way). Nothing past `count` is read or written.
HWY_INLINE void ExpLessShift(float *HWY_RESTRICT y, size_t count, float shift) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const auto minus = hn::Set(d, shift), limit = hn::Set(d, 88.0f);
  for (size_t i = 0; i < count; i += lanes) {
    const size_t m = HWY_MIN(lanes, count - i);
    StoreFirst(
        d, ExpFast(d, hn::Min(hn::Sub(LoadFirst(d, y + i, m), minus), limit)),
        y + i, m);
  }
}

/// out[m] = exp(x . w_m - shift) for the `count` rows w_m = w + m * n of
/// n floats (x scaled by the caller; `shift` holds |x|^2 / 2 and the
/// features' 1 / sqrt(M) as its log), capped as ExpLessShift caps them.
HWY_INLINE void PositiveFeatures(const float *HWY_RESTRICT x,
                                 const float *HWY_RESTRICT w, size_t count,
                                 size_t n, float shift,
                                 float *HWY_RESTRICT out) {
  size_t m = 0;
  for (; m + 4 <= count; m += 4)
    Dot4(w + m * n, n, x, n, out + m);
  for (; m < count; ++m)
    out[m] = Dot(x, w + m * n, n);
  ExpLessShift(out, count, shift);
}

/// Register tiles of MultiplyAdd: kFeatureTileRows rows x 2 vectors of
/// accumulators, with the two vectors of B's row and a broadcast beside
/// them: 16 + 3 of AVX-512's 32 registers, 8 + 3 of AVX2's 16.
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
constexpr size_t kFeatureTileRows = 4;
#else
constexpr size_t kFeatureTileRows = 8;
#endif
constexpr size_t kFeatureTileVecs = 2;

/// One tile of MultiplyAdd: C's kRows rows x kVecs vectors (with kPartial,
/// the last one only `lastCount` lanes) at c += the `steps` rank-1
/// products a[r * aRow + s * aStep] x B's row s (at b + s * bStride), in
/// order of s: each C element is one FMA chain.
template <size_t kRows, size_t kVecs, bool kPartial, class D>
HWY_INLINE void
MultiplyAddTile(D d, const float *HWY_RESTRICT a, size_t aRow, size_t aStep,
                const float *HWY_RESTRICT b, size_t bStride, size_t steps,
                float *HWY_RESTRICT c, size_t cStride, size_t lastCount) {
  constexpr size_t kLanes = hn::MaxLanes(d);
  using V = hn::Vec<D>;
  auto load = [&](const float *p, size_t v) {
    return kPartial && v + 1 == kVecs ? LoadFirst(d, p + v * kLanes, lastCount)
                                      : hn::LoadU(d, p + v * kLanes);
  };
  V acc[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t v = 0; v < kVecs; ++v)
      acc[r][v] = load(c + r * cStride, v);
  for (size_t s = 0; s < steps; ++s) {
    V row[kVecs];
    for (size_t v = 0; v < kVecs; ++v)
      row[v] = load(b + s * bStride, v);
    for (size_t r = 0; r < kRows; ++r) {
      const V ar = hn::Set(d, a[r * aRow + s * aStep]);
      for (size_t v = 0; v < kVecs; ++v)
        acc[r][v] = hn::MulAdd(ar, row[v], acc[r][v]);
    }
  }
  for (size_t r = 0; r < kRows; ++r)
    for (size_t v = 0; v < kVecs; ++v) {
      if (kPartial && v + 1 == kVecs)
        StoreFirst(d, acc[r][v], c + r * cStride + v * kLanes, lastCount);
      else
        hn::StoreU(acc[r][v], d, c + r * cStride + v * kLanes);
    }
}

/// The rows [0, rows) of one column block of MultiplyAdd, kRows at a time,
/// then one at a time.
template <size_t kRows, size_t kVecs, bool kPartial, class D>
HWY_INLINE void
MultiplyAddColumns(D d, const float *HWY_RESTRICT a, size_t aRow, size_t aStep,
                   const float *HWY_RESTRICT b, size_t bStride, size_t steps,
                   size_t rows, float *HWY_RESTRICT c, size_t cStride,
                   size_t lastCount) {
  size_t r = 0;
  for (; r + kRows <= rows; r += kRows)
    MultiplyAddTile<kRows, kVecs, kPartial>(d, a + r * aRow, aRow, aStep, b,
                                            bStride, steps, c + r * cStride,
                                            cStride, lastCount);
  for (; r < rows; ++r)
    MultiplyAddTile<1, kVecs, kPartial>(d, a + r * aRow, aRow, aStep, b,
                                        bStride, steps, c + r * cStride,
                                        cStride, lastCount);
}

/// C (`rows` x `cols`, rows cStride floats apart) += A B: A's element (r,
/// s) at a[r * aRow + s * aStep] (a transposed A by its strides), B's
/// `steps` rows of `cols` floats bStride apart. Column blocks of
/// kFeatureTileVecs vectors, then whole vectors, then a partial one; in
/// each, register tiles of kFeatureTileRows rows. C's elements are summed
/// in order of s, each starting from C's value.
HWY_INLINE void MultiplyAdd(const float *HWY_RESTRICT a, size_t aRow,
                            size_t aStep, const float *HWY_RESTRICT b,
                            size_t bStride, size_t steps, size_t rows,
                            size_t cols, float *HWY_RESTRICT c,
                            size_t cStride) {
  const hn::ScalableTag<float> d;
  constexpr size_t kLanes = hn::MaxLanes(d);
  constexpr size_t kBlock = kFeatureTileVecs * kLanes;
  size_t c0 = 0;
  for (; c0 + kBlock <= cols; c0 += kBlock)
    MultiplyAddColumns<kFeatureTileRows, kFeatureTileVecs, false>(
        d, a, aRow, aStep, b + c0, bStride, steps, rows, c + c0, cStride,
        kLanes);
  for (; c0 + kLanes <= cols; c0 += kLanes)
    MultiplyAddColumns<kFeatureTileRows, 1, false>(d, a, aRow, aStep, b + c0,
                                                   bStride, steps, rows, c + c0,
                                                   cStride, kLanes);
  if (c0 < cols)
    MultiplyAddColumns<kFeatureTileRows, 1, true>(d, a, aRow, aStep, b + c0,
                                                  bStride, steps, rows, c + c0,
                                                  cStride, cols - c0);
}

/// The positive random features of `rows` rows at once (a block of a
/// head's rows, x scaled by the caller, rows n floats apart): out row r
/// (`count` floats, outStride apart) = exp(x_r wt - shifts[r]), with the
/// features' weights transposed (wt: n rows of `count`) so that a
/// register tile takes the features along its lanes. The same arguments
/// and cap as PositiveFeatures; each dot product is summed in order of
/// the row's elements.
HWY_INLINE void PositiveFeatureRows(const float *HWY_RESTRICT x, size_t rows,
                                    const float *HWY_RESTRICT wt, size_t count,
                                    size_t n, const float *HWY_RESTRICT shifts,
                                    float *HWY_RESTRICT out, size_t outStride) {
  for (size_t r = 0; r < rows; ++r)
    Zero(out + r * outStride, count);
  MultiplyAdd(x, n, 1, wt, count, n, rows, count, out, outStride);
  for (size_t r = 0; r < rows; ++r)
    ExpLessShift(out + r * outStride, count, shifts[r]);
}

/// Keys into linear attention's sums, `keys` of them: sums[m] (a row of dv
/// floats) += fk_j[m] v_j and featureSums += fk_j for each key's `count`
/// features fk_j (fkStride floats apart) and value row v_j (vStride
/// apart), in order of j. A register tile holds a block of the sums while
/// the keys stream past it.
HWY_INLINE void AddKeyFeatures(const float *HWY_RESTRICT fk, size_t fkStride,
                               const float *HWY_RESTRICT v, size_t vStride,
                               size_t keys, size_t count, size_t dv,
                               float *HWY_RESTRICT sums,
                               float *HWY_RESTRICT featureSums) {
  MultiplyAdd(fk, 1, fkStride, v, vStride, keys, count, dv, sums, dv);
  for (size_t j = 0; j < keys; ++j)
    Add(featureSums, fk + j * fkStride, featureSums, count);
}

/// Query rows of linear attention, `rows` of them (fqStride floats apart):
/// out_r = (sum_m fq_r[m] sums[m] + sum_j (fq_r . fk_j) v_j) / (fq_r .
/// featureSums + sum_j fq_r . fk_j), over the sums AddKeyFeatures made and,
/// when causal, the first min(r + 1, blockKeys) of the `blockKeys` keys
/// after them (fk_j, v_j: the block's own keys, not yet in the sums; none
/// without `fk`). Rows outStride floats apart.
HWY_INLINE void ApplyKeyFeatures(const float *HWY_RESTRICT fq, size_t fqStride,
                                 size_t rows, const float *HWY_RESTRICT sums,
                                 const float *HWY_RESTRICT featureSums,
                                 size_t count, size_t dv,
                                 float *HWY_RESTRICT out, size_t outStride,
                                 const float *HWY_RESTRICT fk = nullptr,
                                 size_t fkStride = 0,
                                 const float *HWY_RESTRICT v = nullptr,
                                 size_t vStride = 0, size_t blockKeys = 0) {
  for (size_t r = 0; r < rows; ++r)
    Zero(out + r * outStride, dv);
  MultiplyAdd(fq, fqStride, 1, sums, dv, count, rows, dv, out, outStride);
  for (size_t r = 0; r < rows; ++r) {
    const float *q = fq + r * fqStride;
    float *o = out + r * outStride;
    float denominator = Dot(q, featureSums, count);
    for (size_t j = 0; j < HWY_MIN(r + 1, blockKeys); ++j) {
      const float score = Dot(q, fk + j * fkStride, count);
      denominator += score;
      Axpy(score, v + j * vStride, o, dv);
    }
    Scale(1.0f / denominator, o, o, dv);
  }
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_FEATURES_INL_H_
