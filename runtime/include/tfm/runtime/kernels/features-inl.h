// Performer's (FAVOR+) micro-kernels: one row's positive random features,
// and linear attention's sums over the keys' features (their products with
// the value rows, and the features alone), added one key at a time and read
// by one query row. The loops over heads, rows and keys, and whether the
// sums run along the rows (causal), are in the generated code.
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

/// out[m] = exp(x . w_m - shift) for the `count` rows w_m = w + m * n of
/// n floats (x scaled by the caller; `shift` holds |x|^2 / 2 and the
/// features' 1 / sqrt(M) as its log). Arguments above 88 give about
/// 1.6e38 instead of overflowing to infinity (FAVOR+ has no stabiliser:
/// such rows have lost their precision either way).
HWY_INLINE void PositiveFeatures(const float *HWY_RESTRICT x,
                                 const float *HWY_RESTRICT w, size_t count,
                                 size_t n, float shift,
                                 float *HWY_RESTRICT out) {
  size_t m = 0;
  for (; m + 4 <= count; m += 4)
    Dot4(w + m * n, n, x, n, out + m);
  for (; m < count; ++m)
    out[m] = Dot(x, w + m * n, n);
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const auto minus = hn::Set(d, shift), limit = hn::Set(d, 88.0f);
  auto features = [&](hn::Vec<decltype(d)> v) {
    return ExpFast(d, hn::Min(hn::Sub(v, minus), limit));
  };
  size_t i = 0;
  for (; i + lanes <= count; i += lanes)
    hn::StoreU(features(hn::LoadU(d, out + i)), d, out + i);
  if (i < count) {
    // The tail through a whole vector on the stack: nothing past `count`
    // is read or written.
    HWY_ALIGN float tail[hn::MaxLanes(d)];
    hn::Store(LoadFirst(d, out + i, count - i), d, tail);
    hn::Store(features(hn::Load(d, tail)), d, tail);
    for (size_t j = 0; i + j < count; ++j)
      out[i + j] = tail[j];
  }
}

/// One key into linear attention's sums: sums[m] (a row of dv floats) +=
/// fk[m] v for the key's `count` features fk and value row v, and
/// featureSums += fk.
HWY_INLINE void AddKeyFeatures(const float *HWY_RESTRICT fk,
                               const float *HWY_RESTRICT v, size_t count,
                               size_t dv, float *HWY_RESTRICT sums,
                               float *HWY_RESTRICT featureSums) {
  for (size_t m = 0; m < count; ++m)
    Axpy(fk[m], v, sums + m * dv, dv);
  Add(featureSums, fk, featureSums, count);
}

/// One query row of linear attention: out = (sum_m fq[m] sums[m]) /
/// (fq . featureSums), over the sums AddKeyFeatures made.
HWY_INLINE void ApplyKeyFeatures(const float *HWY_RESTRICT fq,
                                 const float *HWY_RESTRICT sums,
                                 const float *HWY_RESTRICT featureSums,
                                 size_t count, size_t dv,
                                 float *HWY_RESTRICT out) {
  Zero(out, dv);
  for (size_t m = 0; m < count; ++m)
    Axpy(fq[m], sums + m * dv, out, dv);
  Scale(1.0f / Dot(fq, featureSums, count), out, out, dv);
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_FEATURES_INL_H_
