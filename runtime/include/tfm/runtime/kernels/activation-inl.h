// Feed-forward activations applied in place to a row: ReLU, exact GELU
// (through erf), the tanh approximation of GELU and SiLU; and the gated
// form of each (GLU variants: SwiGLU, GeGLU, ReGLU).

#if defined(TFM_RUNTIME_KERNELS_ACTIVATION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_ACTIVATION_INL_H_
#undef TFM_RUNTIME_KERNELS_ACTIVATION_INL_H_
#else
#define TFM_RUNTIME_KERNELS_ACTIVATION_INL_H_
#endif

#include <cmath>
#include <cstddef>

#include "hwy/highway.h"
#include "tfm/runtime/kernels/exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Applies `f` (a vector functor) to every element of x in place; the tail
/// goes through a padded copy so no element past n is touched.
template <class F> HWY_INLINE void MapInPlace(float *x, size_t n, const F &f) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(f(d, hn::LoadU(d, x + i)), d, x + i);
  if (i < n) {
    HWY_ALIGN float tail[hn::MaxLanes(d)] = {};
    for (size_t j = i; j < n; ++j)
      tail[j - i] = x[j];
    hn::Store(f(d, hn::Load(d, tail)), d, tail);
    for (size_t j = i; j < n; ++j)
      x[j] = tail[j - i];
  }
}

HWY_INLINE void ReluInPlace(float *x, size_t n) {
  MapInPlace(x, n, [](auto d, auto v) { return hn::Max(v, hn::Zero(d)); });
}

/// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7):
/// Highway 1.0.3 has no Erf.
/// 1 / a to about float precision for a >= 1 with a normal reciprocal: the
/// hardware estimate (12 or 14 bits) and one Newton step, several times
/// cheaper than a division.
template <class D, class V> HWY_INLINE V Reciprocal(D d, V a) {
  const V r = hn::ApproximateReciprocal(a);
  return hn::Mul(r, hn::NegMulAdd(a, r, hn::Set(d, 2.0f)));
}

/// erf(x), Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7). |x|
/// is capped at 6, where erf is 1 in float.
template <class D, class V> HWY_INLINE V Erf(D d, V x) {
  const auto ax = hn::Min(hn::Abs(x), hn::Set(d, 6.0f));
  const auto t =
      Reciprocal(d, hn::MulAdd(hn::Set(d, 0.3275911f), ax, hn::Set(d, 1.0f)));
  auto poly = hn::Set(d, 1.061405429f);
  poly = hn::MulAdd(poly, t, hn::Set(d, -1.453152027f));
  poly = hn::MulAdd(poly, t, hn::Set(d, 1.421413741f));
  poly = hn::MulAdd(poly, t, hn::Set(d, -0.284496736f));
  poly = hn::MulAdd(poly, t, hn::Set(d, 0.254829592f));
  poly = hn::Mul(poly, t);
  const auto e = ExpFast(d, hn::Neg(hn::Mul(ax, ax)));
  const auto y = hn::NegMulAdd(poly, e, hn::Set(d, 1.0f));
  return hn::CopySign(y, x);
}

/// x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
HWY_INLINE void GeluInPlace(float *x, size_t n) {
  MapInPlace(x, n, [](auto d, auto v) {
    const auto half = hn::Set(d, 0.5f);
    const auto e = Erf(d, hn::Mul(v, hn::Set(d, 0.70710678118654752f)));
    return hn::Mul(hn::Mul(half, v), hn::Add(hn::Set(d, 1.0f), e));
  });
}

/// 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), computed as
/// x sigmoid(2u) = x / (1 + e^(-2u)): one exponential and a reciprocal
/// instead of tanh's exponential and division. -2u is capped at 80 (the
/// result is then 0 to float precision) so that the reciprocal stays a
/// normal float: subnormal arithmetic is many times slower.
HWY_INLINE void GeluTanhInPlace(float *x, size_t n) {
  MapInPlace(x, n, [](auto d, auto v) {
    const auto minusTwoU = hn::Mul(
        hn::Set(d, -1.5957691216057308f),
        hn::MulAdd(hn::Mul(hn::Set(d, 0.044715f), hn::Mul(v, v)), v, v));
    const auto e = ExpFast(d, hn::Min(minusTwoU, hn::Set(d, 80.0f)));
    return hn::Mul(v, Reciprocal(d, hn::Add(hn::Set(d, 1.0f), e)));
  });
}

/// x sigmoid(x) = x / (1 + e^(-x)); -x is capped at 80 (the result is then
/// 0 to float precision) so that the reciprocal stays a normal float.
template <class D, class V> HWY_INLINE V Silu(D d, V v) {
  const auto e = ExpFast(d, hn::Min(hn::Neg(v), hn::Set(d, 80.0f)));
  return hn::Mul(v, Reciprocal(d, hn::Add(hn::Set(d, 1.0f), e)));
}

HWY_INLINE void SiluInPlace(float *x, size_t n) {
  MapInPlace(x, n, [](auto d, auto v) { return Silu(d, v); });
}

/// y = act(gate) * up over n features (a GLU's gate and up rows side by
/// side), with `activateInPlace` one of the functions above; y may equal
/// gate, not up.
template <class F>
HWY_INLINE void GatedRow(const float *gate, const float *HWY_RESTRICT up,
                         float *y, size_t n, const F &activateInPlace) {
  if (y != gate)
    for (size_t i = 0; i < n; ++i)
      y[i] = gate[i];
  activateInPlace(y, n);
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Mul(hn::LoadU(d, y + i), hn::LoadU(d, up + i)), d, y + i);
  for (; i < n; ++i)
    y[i] *= up[i];
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_ACTIVATION_INL_H_
