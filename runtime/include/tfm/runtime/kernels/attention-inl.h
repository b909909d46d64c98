// The attention inner loops: the additive (Bahdanau) score and the
// online-softmax update of one key; and the blocked form of dot-product
// scores, where a group of query rows takes the keys a block at a time
// (scores against transposed keys, one online-softmax update per row, one
// pass over the block's value rows for all rows).

#if defined(TFM_RUNTIME_KERNELS_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_ATTENTION_INL_H_
#undef TFM_RUNTIME_KERNELS_ATTENTION_INL_H_
#else
#define TFM_RUNTIME_KERNELS_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "tfm/runtime/kernels/exp-inl.h"
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
    const size_t m = n - i;
    const auto t =
        hn::Tanh(d, hn::Add(LoadFirst(d, qp + i, m), LoadFirst(d, kp + i, m)));
    acc = hn::MulAdd(LoadFirst(d, v + i, m), t, acc);
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

/// A task of the blocked attention is kRows query rows (the compiler's
/// choice, #tfm_codegen.attention_tiling) scored against the keys kKeyBlock at
/// a time: s, the block's scores, holds kRows x kKeyBlock floats, aligned.
/// kKeyBlock must be a whole number of vectors on every target (a multiple
/// of 16: the verifier holds it so), since scores are stored by the vector.

/// Vectors of keys (scores) or of value columns (weighted sum) a pass over
/// kRows rows covers: kRows x AttentionVecs accumulators take at most half
/// the register file (16 of 32 with AVX-512, 8 of 16 below), the rest
/// holds the loaded vectors; between 1 and 4.
template <size_t kRows> constexpr size_t AttentionVecs() {
  constexpr size_t budget =
      hn::MaxLanes(hn::ScalableTag<float>()) >= 16 ? 16 : 8;
  return std::clamp<size_t>(budget / kRows, 1, 4);
}

/// How far ahead (in blocks of keys) a one-row pass prefetches its keys.
constexpr size_t kStreamKeyBlocks = 2;

/// The scores of kRows queries q[r] against the kV * lanes keys at column j
/// of the transposed keys (the last vector masked to n), into
/// s[r * kKeyBlock + j...]: kRows x kV independent FMA chains, each key
/// vector loaded once for all rows, no load past the last vector's lanes.
template <size_t kRows, size_t kKeyBlock, size_t kV, class D>
HWY_INLINE void ScoreKeyVectorsRows(D d, const float *const *q,
                                    const float *HWY_RESTRICT kt, size_t ldk,
                                    size_t j, size_t n, size_t dk, float scale,
                                    float *HWY_RESTRICT s) {
  using V = decltype(hn::Zero(d));
  const size_t lanes = hn::Lanes(d);
  const size_t lastLanes = n - j - (kV - 1) * lanes;
  V acc[kRows][kV];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t i = 0; i < kV; ++i)
      acc[r][i] = hn::Zero(d);
  for (size_t f = 0; f < dk; ++f) {
    const float *row = kt + f * ldk + j;
    if constexpr (kRows == 1) {
      // One query (a decode step): few FMAs a key byte, and each feature a
      // row of its own, ldk floats apart (more streams than the hardware
      // prefetcher follows): the same feature's keys kStreamKeyBlocks
      // blocks on, prefetched into L1.
      for (size_t i = 0; i < kV; ++i)
        hwy::Prefetch(row + kStreamKeyBlocks * kKeyBlock + i * lanes);
    }
    V keys[kV];
    for (size_t i = 0; i < kV; ++i)
      keys[i] = i + 1 == kV ? LoadFirst(d, row + i * lanes, lastLanes)
                            : hn::LoadU(d, row + i * lanes);
    for (size_t r = 0; r < kRows; ++r) {
      const auto qf = hn::Set(d, q[r][f]);
      for (size_t i = 0; i < kV; ++i)
        acc[r][i] = hn::MulAdd(qf, keys[i], acc[r][i]);
    }
  }
  const auto scaleV = hn::Set(d, scale);
  for (size_t r = 0; r < kRows; ++r)
    for (size_t i = 0; i < kV; ++i)
      hn::Store(hn::Mul(acc[r][i], scaleV), d,
                s + r * kKeyBlock + j + i * lanes);
}

/// s[r * kKeyBlock + j] = scale * sum_d q[r][d] * kt[d * ldk + j] for j < n
/// (<= kKeyBlock): the scores of kRows queries against n consecutive keys
/// stored transposed (feature-major), so each feature is one contiguous
/// load for all keys. Scores past n (to the end of their vector) are
/// meaningless. `rows` (1..kRows) are the rows the caller needs: with one
/// (a decode step), only q[0] is scored, in a pass of its own; otherwise
/// kRows rows, and those past `rows` may repeat another row's query. Either
/// way a row's score is the same sum in the same order.
template <size_t kRows, size_t kKeyBlock>
HWY_INLINE void TransposedKeyScoresRows(size_t rows, const float *const *q,
                                        const float *HWY_RESTRICT kt,
                                        size_t ldk, size_t n, size_t dk,
                                        float scale, float *HWY_RESTRICT s) {
  if constexpr (kRows > 1) {
    if (rows == 1)
      return TransposedKeyScoresRows<1, kKeyBlock>(1, q, kt, ldk, n, dk, scale,
                                                   s);
  }
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  static_assert(kKeyBlock % hn::MaxLanes(d) == 0,
                "a block of keys must be a whole number of vectors");
  constexpr size_t kPass = AttentionVecs<kRows>();
  for (size_t j = 0; j < n; j += kPass * lanes) {
    switch ((std::min(n - j, kPass * lanes) + lanes - 1) / lanes) {
    case 1:
      ScoreKeyVectorsRows<kRows, kKeyBlock, 1>(d, q, kt, ldk, j, n, dk, scale,
                                               s);
      break;
    case 2:
      ScoreKeyVectorsRows<kRows, kKeyBlock, std::min<size_t>(2, kPass)>(
          d, q, kt, ldk, j, n, dk, scale, s);
      break;
    case 3:
      ScoreKeyVectorsRows<kRows, kKeyBlock, std::min<size_t>(3, kPass)>(
          d, q, kt, ldk, j, n, dk, scale, s);
      break;
    default:
      ScoreKeyVectorsRows<kRows, kKeyBlock, kPass>(d, q, kt, ldk, j, n, dk,
                                                   scale, s);
      break;
    }
  }
}

/// out[r][c, c + kV * lanes) (the last vector masked to dv) += sum_j
/// w[r * kKeyBlock + j] * v[j * ldv + c ...] for r < kRows: kRows x kV
/// accumulators, each value vector loaded once for all rows.
template <size_t kRows, size_t kKeyBlock, size_t kV, class D>
HWY_INLINE void
AccumulateValueVectorsRows(D d, const float *HWY_RESTRICT w, size_t n,
                           const float *HWY_RESTRICT v, size_t ldv, size_t c,
                           size_t dv, float *const *out) {
  using V = decltype(hn::Zero(d));
  const size_t lanes = hn::Lanes(d);
  const size_t lastLanes = dv - c - (kV - 1) * lanes;
  const auto last = hn::FirstN(d, lastLanes);
  auto load = [&](const float *p, size_t i) {
    return i + 1 == kV ? LoadFirst(d, p + i * lanes, lastLanes)
                       : hn::LoadU(d, p + i * lanes);
  };
  V acc[kRows][kV];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t i = 0; i < kV; ++i)
      acc[r][i] = load(out[r] + c, i);
  for (size_t j = 0; j < n; ++j) {
    const float *row = v + j * ldv + c;
    V values[kV];
    for (size_t i = 0; i < kV; ++i)
      values[i] = load(row, i);
    for (size_t r = 0; r < kRows; ++r) {
      const auto weight = hn::Set(d, w[r * kKeyBlock + j]);
      for (size_t i = 0; i < kV; ++i)
        acc[r][i] = hn::MulAdd(weight, values[i], acc[r][i]);
    }
  }
  for (size_t r = 0; r < kRows; ++r)
    for (size_t i = 0; i < kV; ++i) {
      if (i + 1 == kV)
        hn::BlendedStore(acc[r][i], last, d, out[r] + c + i * lanes);
      else
        hn::StoreU(acc[r][i], d, out[r] + c + i * lanes);
    }
}

/// AccumulateValueVectorsRows over all of out's dv columns,
/// AttentionVecs<kRows>() vectors at a time.
template <size_t kRows, size_t kKeyBlock, class D>
HWY_INLINE void AccumulateValuesRows(D d, const float *HWY_RESTRICT w, size_t n,
                                     const float *HWY_RESTRICT v, size_t ldv,
                                     size_t dv, float *const *out) {
  const size_t lanes = hn::Lanes(d);
  constexpr size_t kPass = AttentionVecs<kRows>();
  for (size_t c = 0; c < dv; c += kPass * lanes) {
    switch ((std::min(dv - c, kPass * lanes) + lanes - 1) / lanes) {
    case 1:
      AccumulateValueVectorsRows<kRows, kKeyBlock, 1>(d, w, n, v, ldv, c, dv,
                                                      out);
      break;
    case 2:
      AccumulateValueVectorsRows<kRows, kKeyBlock, std::min<size_t>(2, kPass)>(
          d, w, n, v, ldv, c, dv, out);
      break;
    case 3:
      AccumulateValueVectorsRows<kRows, kKeyBlock, std::min<size_t>(3, kPass)>(
          d, w, n, v, ldv, c, dv, out);
      break;
    default:
      AccumulateValueVectorsRows<kRows, kKeyBlock, kPass>(d, w, n, v, ldv, c,
                                                          dv, out);
      break;
    }
  }
}

/// AccumulateValuesRows for `rows` (1..kRows) rows, chosen at run time; the
/// weights stay kKeyBlock apart.
template <size_t kRows, size_t kKeyBlock, class D>
HWY_INLINE void
AccumulateValuesRowsUpTo(D d, size_t rows, const float *HWY_RESTRICT w,
                         size_t n, const float *HWY_RESTRICT v, size_t ldv,
                         size_t dv, float *const *out) {
  if constexpr (kRows > 1) {
    if (rows < kRows)
      return AccumulateValuesRowsUpTo<kRows - 1, kKeyBlock>(d, rows, w, n, v,
                                                            ldv, dv, out);
  }
  AccumulateValuesRows<kRows, kKeyBlock>(d, w, n, v, ldv, dv, out);
}

/// OnlineSoftmaxBlockRows with (kPadded) or without a key mask: the mask's
/// test is compiled in only where there is one.
template <size_t kRows, size_t kKeyBlock, bool kPadded>
HWY_INLINE void OnlineSoftmaxBlockRowsOf(
    OnlineSoftmax *states, float *HWY_RESTRICT s, size_t n, const size_t *first,
    const size_t *keys, const float *HWY_RESTRICT keyMask, size_t rows,
    const float *HWY_RESTRICT v, size_t ldv, float *const *out, size_t dv) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r) {
    float *sr = s + r * kKeyBlock;
    const size_t nr = keys[r], fr = first ? first[r] : 0;
    OnlineSoftmax &state = states[r];
    // Lanes j + l with fr <= j + l < nr (and a real key).
    auto inRow = [&](size_t j) {
      const auto below = hn::FirstN(d, nr > j ? nr - j : 0);
      const auto span =
          fr > j ? hn::AndNot(hn::FirstN(d, fr - j), below) : below;
      if constexpr (!kPadded) {
        return span;
      } else {
        const auto real =
            hn::Ne(LoadFirst(d, keyMask + j, n > j ? n - j : 0), hn::Zero(d));
        return hn::And(span, real);
      }
    };
    if (nr > fr) {
      auto maxV = hn::Set(d, -INFINITY);
      for (size_t j = fr / lanes * lanes; j < nr; j += lanes)
        maxV =
            hn::Max(maxV, hn::IfThenElse(inRow(j), hn::Load(d, sr + j), maxV));
      const float blockMax = hn::GetLane(hn::MaxOfLanes(d, maxV));
      if (blockMax > state.max) {
        const float rescale = std::exp(state.max - blockMax);
        Scale(rescale, out[r], out[r], dv);
        state.sum *= rescale;
        state.max = blockMax;
      }
    }
    const auto maxV = hn::Set(d, state.max);
    auto sumV = hn::Zero(d);
    for (size_t j = 0; j < n; j += lanes) {
      const auto p = hn::IfThenElseZero(
          inRow(j), ExpFast(d, hn::Sub(hn::Load(d, sr + j), maxV)));
      hn::Store(p, d, sr + j);
      sumV = hn::Add(sumV, p);
    }
    state.sum += hn::GetLane(hn::SumOfLanes(d, sumV));
  }
  AccumulateValuesRowsUpTo<kRows, kKeyBlock>(d, rows, s, n, v, ldv, dv, out);
}

/// Adds a block of n (<= kKeyBlock) keys, value rows v + j * ldv, to `rows`
/// (<= kRows) query rows: row r's scores are s[r * kKeyBlock + j]
/// (aligned) and it takes the keys [first[r], keys[r]) of the block
/// (first[r] <= keys[r] <= n; no `first`: from the block's first key), of
/// them those whose `keyMask` entry (n floats, 1 a real key, 0 padding; no
/// mask: every key) is not 0. Per row one rescale and the exponentials as
/// vectors; then one pass over the value rows for all rows at once.
/// Overwrites s with the weights (0 outside the row's keys).
template <size_t kRows, size_t kKeyBlock>
HWY_INLINE void OnlineSoftmaxBlockRows(
    OnlineSoftmax *states, float *HWY_RESTRICT s, size_t n, const size_t *first,
    const size_t *keys, const float *HWY_RESTRICT keyMask, size_t rows,
    const float *HWY_RESTRICT v, size_t ldv, float *const *out, size_t dv) {
  if (keyMask)
    OnlineSoftmaxBlockRowsOf<kRows, kKeyBlock, true>(
        states, s, n, first, keys, keyMask, rows, v, ldv, out, dv);
  else
    OnlineSoftmaxBlockRowsOf<kRows, kKeyBlock, false>(
        states, s, n, first, keys, nullptr, rows, v, ldv, out, dv);
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_ATTENTION_INL_H_
