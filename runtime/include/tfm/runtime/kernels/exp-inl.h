// A fast e^x for the kernels' exponentials (softmax weights, GELU), on
// the range they need.

#if defined(TFM_RUNTIME_KERNELS_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_EXP_INL_H_
#undef TFM_RUNTIME_KERNELS_EXP_INL_H_
#else
#define TFM_RUNTIME_KERNELS_EXP_INL_H_
#endif

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// e^x for x <= 88 (larger x overflow: callers bound them), about twice as
/// fast as hn::Exp: the same reduction (x = n ln2 + r, |r| <= ln2 / 2, ln2
/// in two parts) and polynomial (Highway's, within 1 ulp on r), without its
/// sign handling and float <-> int conversions: adding 1.5 * 2^23 rounds
/// x / ln2 to the integer n, held in the sum's low mantissa bits, from
/// which 2^n is built. x is clamped to -87 so that 2^n stays a normal
/// float: below, the result is about 1e-38 instead of 0 (a softmax weight
/// no sum of weights, each up to 1, can tell apart; a sigmoid's 1 + e^x
/// neither).
template <class D> HWY_INLINE hn::Vec<D> ExpFast(D d, hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  const auto kShift = hn::Set(d, 12582912.0f); // 1.5 * 2^23
  x = hn::Max(x, hn::Set(d, -87.0f));
  const auto shifted = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), kShift);
  const auto n = hn::Sub(shifted, kShift);
  auto r = hn::MulAdd(n, hn::Set(d, -0.693145751953125f), x);
  r = hn::MulAdd(n, hn::Set(d, -1.428606765330187045e-6f), r);
  // e^r - 1 = r + r^2 (k0 + k1 r + ... + k5 r^5).
  auto p = hn::Set(d, 0.000198527617612853646278381f);
  p = hn::MulAdd(p, r, hn::Set(d, 0.00139304355252534151077271f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.00833336077630519866943359f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.0416664853692054748535156f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.166666671633720397949219f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.5f));
  const auto expR = hn::Add(hn::MulAdd(p, hn::Mul(r, r), r), hn::Set(d, 1.0f));
  const auto nInt = hn::Sub(hn::BitCast(di, shifted), hn::BitCast(di, kShift));
  const auto pow2n =
      hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(nInt, hn::Set(di, 127))));
  return hn::Mul(expR, pow2n);
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_EXP_INL_H_
