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

/// Keys scored per step of a query row: one vector's worth on AVX-512.
constexpr size_t kKeyBlock = 16;

/// s[j] = scale * sum_d q[d] * kt[d * ldk + j] for j < n (<= kKeyBlock):
/// the scores of one query against n consecutive keys stored transposed
/// (feature-major), so each feature is one contiguous load for all keys.
HWY_INLINE void TransposedKeyScores(const float *HWY_RESTRICT q,
                                    const float *HWY_RESTRICT kt, size_t ldk,
                                    size_t n, size_t dk, float scale,
                                    float *HWY_RESTRICT s) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  for (size_t j = 0; j < n; j += lanes) {
    const size_t count = n - j < lanes ? n - j : lanes;
    const auto m = hn::FirstN(d, count);
    auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);
    size_t f = 0;
    for (; f + 2 <= dk; f += 2) {
      acc0 = hn::MulAdd(hn::Set(d, q[f]),
                        hn::MaskedLoad(m, d, kt + f * ldk + j), acc0);
      acc1 = hn::MulAdd(hn::Set(d, q[f + 1]),
                        hn::MaskedLoad(m, d, kt + (f + 1) * ldk + j), acc1);
    }
    if (f < dk)
      acc0 = hn::MulAdd(hn::Set(d, q[f]),
                        hn::MaskedLoad(m, d, kt + f * ldk + j), acc0);
    const auto scores = hn::Mul(hn::Add(acc0, acc1), hn::Set(d, scale));
    HWY_ALIGN float tmp[hn::MaxLanes(d)];
    hn::Store(scores, d, tmp);
    for (size_t i = 0; i < count; ++i)
      s[j + i] = tmp[i];
  }
}

/// Adds n (<= kKeyBlock) keys with scores s and value rows v + j * ldv to
/// out and state: one rescale per block, the exponentials as vectors, and
/// each output vector accumulated in a register over the block's keys.
/// Overwrites s with the weights.
HWY_INLINE void OnlineSoftmaxBlock(OnlineSoftmax &state, float *HWY_RESTRICT s,
                                   size_t n, const float *HWY_RESTRICT v,
                                   size_t ldv, float *HWY_RESTRICT out,
                                   size_t dv) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  float blockMax = s[0];
  for (size_t j = 1; j < n; ++j)
    blockMax = s[j] > blockMax ? s[j] : blockMax;
  if (blockMax > state.max) {
    const float rescale = std::exp(state.max - blockMax);
    Scale(rescale, out, out, dv);
    state.sum *= rescale;
    state.max = blockMax;
  }
  const auto maxV = hn::Set(d, state.max);
  float blockSum = 0.0f;
  for (size_t j = 0; j < n; j += lanes) {
    const size_t count = n - j < lanes ? n - j : lanes;
    HWY_ALIGN float tmp[hn::MaxLanes(d)] = {};
    for (size_t i = 0; i < count; ++i)
      tmp[i] = s[j + i];
    const auto p = hn::Exp(d, hn::Sub(hn::Load(d, tmp), maxV));
    hn::Store(p, d, tmp);
    for (size_t i = 0; i < count; ++i) {
      s[j + i] = tmp[i];
      blockSum += tmp[i];
    }
  }
  state.sum += blockSum;
  size_t c = 0;
  for (; c + lanes <= dv; c += lanes) {
    auto acc = hn::LoadU(d, out + c);
    for (size_t j = 0; j < n; ++j)
      acc = hn::MulAdd(hn::Set(d, s[j]), hn::LoadU(d, v + j * ldv + c), acc);
    hn::StoreU(acc, d, out + c);
  }
  for (; c < dv; ++c) {
    float acc = out[c];
    for (size_t j = 0; j < n; ++j)
      acc += s[j] * v[j * ldv + c];
    out[c] = acc;
  }
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_ATTENTION_INL_H_
