// Pieces of the attention inner loop that are not plain dot products: the
// additive (Bahdanau) score and the online-softmax update of one key.

#if defined(TFM_RUNTIME_KERNELS_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_ATTENTION_INL_H_
#undef TFM_RUNTIME_KERNELS_ATTENTION_INL_H_
#else
#define TFM_RUNTIME_KERNELS_ATTENTION_INL_H_
#endif

#include <cmath>
#include <cstddef>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "tfm/runtime/kernels/vector-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// sum_a v[a] * tanh(qp[a] + kp[a]): the additive score of one query and one
/// key whose projections W_query q and W_key k are qp and kp.
HWY_INLINE float AdditiveScore(const float *HWY_RESTRICT qp,
                               const float *HWY_RESTRICT kp,
                               const float *HWY_RESTRICT v, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto acc = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto t =
        hn::Tanh(d, hn::Add(hn::LoadU(d, qp + i), hn::LoadU(d, kp + i)));
    acc = hn::MulAdd(hn::LoadU(d, v + i), t, acc);
  }
  if (i < n) {
    const auto m = hn::FirstN(d, n - i);
    const auto t = hn::Tanh(
        d, hn::Add(hn::MaskedLoad(m, d, qp + i), hn::MaskedLoad(m, d, kp + i)));
    acc = hn::MulAdd(hn::MaskedLoad(m, d, v + i), t, acc);
  }
  return hn::GetLane(hn::SumOfLanes(d, acc));
}

/// Running state of a softmax-weighted sum over keys, one key at a time:
/// out holds sum_j exp(s_j - max) v_j, `sum` holds sum_j exp(s_j - max).
struct OnlineSoftmax {
  float max = -INFINITY;
  float sum = 0.0f;
};

/// Adds key j with score s and value row v (n floats) to out and state.
HWY_INLINE void OnlineSoftmaxStep(OnlineSoftmax &state, float s,
                                  const float *HWY_RESTRICT v,
                                  float *HWY_RESTRICT out, size_t n) {
  if (s > state.max) {
    // A new maximum: rescale what has been summed so far.
    const float rescale = std::exp(state.max - s);
    Scale(rescale, out, out, n);
    state.sum = state.sum * rescale + 1.0f;
    state.max = s;
    Axpy(1.0f, v, out, n);
    return;
  }
  const float p = std::exp(s - state.max);
  state.sum += p;
  Axpy(p, v, out, n);
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_ATTENTION_INL_H_
