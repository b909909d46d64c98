// A Mamba mixer's sequence kernels: the causal depthwise conv (with its
// bias and SiLU) and the selective scan (with softplus, the D skip and the
// SiLU gate). Both run along the rows (positions) of one sequence with the
// vector lanes across channels: every lane computes one channel's
// recurrence with the same operations, so a channel's result does not
// depend on which block of channels (or thread) it is computed in.
//
// Per-target file: include after hwy/highway.h (or from a file that
// foreach_target.h re-includes).

#if defined(TFM_RUNTIME_KERNELS_SCAN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_SCAN_INL_H_
#undef TFM_RUNTIME_KERNELS_SCAN_INL_H_
#else
#define TFM_RUNTIME_KERNELS_SCAN_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "tfm/runtime/kernels/activation-inl.h"
#include "tfm/runtime/kernels/exp-inl.h"
#include "tfm/runtime/kernels/vector-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// PyTorch's softplus: log(1 + e^x), x itself above 20.
template <class D, class V> HWY_INLINE V Softplus(D d, V x) {
  const V big = hn::Set(d, 20.0f);
  const V soft = hn::Log1p(d, ExpFast(d, hn::Min(x, big)));
  return hn::IfThenElse(hn::Gt(x, big), x, soft);
}

/// How many rows ahead the sequence kernels prefetch their inputs.
constexpr size_t kScanPrefetchRows = 4;

/// Prefetches the cache lines of `count` floats at p.
HWY_INLINE void PrefetchBlock(const float *p, size_t count) {
  for (size_t i = 0; i < count; i += 16)
    hwy::Prefetch(p + i);
}

/// Channels [c0, c0 + count) of one sequence's n rows (`channels` floats
/// apart) through out[t, c] = SiLU(bias[c] + sum_k weight[c, k]
/// in[t - width + 1 + k, c]) (weight [channels, width], PyTorch's
/// depthwise Conv1d layout). The width - 1 rows before row 0 are
/// `window`'s (rows of `channels` floats, oldest first), or zeros when it
/// is null; `newWindow` (when not null, and it may be `window`) receives the
/// width - 1 inputs up to row n - 1, for the next call. Each row is
/// visited once for all the block's channels (see SelectiveScanGated).
HWY_INLINE void CausalConv1dSilu(const float *HWY_RESTRICT in, size_t n,
                                 size_t channels,
                                 const float *HWY_RESTRICT weight, size_t width,
                                 const float *HWY_RESTRICT bias,
                                 const float *window, float *newWindow,
                                 float *HWY_RESTRICT out, size_t c0,
                                 size_t count) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t vectors = (count + lanes - 1) / lanes;
  const size_t padded = vectors * lanes;
  // The block's taps, tap-major: [width, padded].
  std::vector<float> taps(width * padded);
  for (size_t k = 0; k < width; ++k)
    for (size_t i = 0; i < padded; ++i)
      taps[k * padded + i] = i < count ? weight[(c0 + i) * width + k] : 0.0f;
  const size_t before = width - 1;
  // Input row r of the extended sequence (the window's rows, then in's),
  // at channel c0 + i.
  auto row = [&](size_t r, size_t i, size_t m) {
    if (r >= before)
      return LoadFirst(d, in + (r - before) * channels + c0 + i, m);
    return window ? LoadFirst(d, window + r * channels + c0 + i, m)
                  : hn::Zero(d);
  };
  for (size_t t = 0; t < n; ++t) {
    if (t + kScanPrefetchRows < n)
      PrefetchBlock(in + (t + kScanPrefetchRows) * channels + c0, count);
    for (size_t v = 0; v < vectors; ++v) {
      const size_t i = v * lanes, m = std::min(lanes, count - i);
      auto acc = LoadFirst(d, bias + c0 + i, m);
      for (size_t k = 0; k < width; ++k)
        acc = hn::MulAdd(hn::LoadU(d, taps.data() + k * padded + i),
                         row(t + k, i, m), acc);
      StoreFirst(d, Silu(d, acc), out + t * channels + c0 + i, m);
    }
  }
  if (!newWindow)
    return;
  // Row r of the new window is extended row n + r: ascending r reads only
  // rows at or after n + r, so the update can be in place.
  for (size_t r = 0; r < before; ++r)
    for (size_t i = 0; i < count; i += lanes) {
      const size_t m = std::min(lanes, count - i);
      StoreFirst(d, row(n + r, i, m), newWindow + r * channels + c0 + i, m);
    }
}

/// Channels [c0, c0 + count) of one sequence's n rows through Mamba's
/// selective scan, from state `h` ([states, channels], or zeros when null)
/// to `newH` (when not null; it may be `h`):
///   dt = softplus(delta[t]),  h = exp(dt A) h + dt u[t] b[t],
///   out[t] = (c[t] . h + dskip u[t]) SiLU(z[t]),  A = -exp(aLog[c, :]).
/// u, delta, z and out are rows of `channels` floats; b and c rows of
/// `states` floats. Each row is visited once for all the block's channels
/// (the rows are far apart: a pass per vector of channels would fetch a
/// line of each row, and miss the TLB, per vector); the block's h and A
/// stay in L1 from row to row.
HWY_INLINE void
SelectiveScanGated(const float *HWY_RESTRICT u, const float *HWY_RESTRICT delta,
                   const float *HWY_RESTRICT z, size_t n, size_t channels,
                   const float *HWY_RESTRICT b, const float *HWY_RESTRICT cm,
                   size_t states, const float *HWY_RESTRICT aLog,
                   const float *HWY_RESTRICT dskip, const float *h, float *newH,
                   float *HWY_RESTRICT out, size_t c0, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t vectors = (count + lanes - 1) / lanes;
  const size_t width = vectors * lanes; // the block's channels, padded
  // A = -exp(A_log) and h of the block, state-major: [states, width].
  std::vector<float> a(states * width), hs(states * width);
  for (size_t s = 0; s < states; ++s)
    for (size_t i = 0; i < width; ++i) {
      a[s * width + i] = i < count ? aLog[(c0 + i) * states + s] : 0.0f;
      hs[s * width + i] = i < count && h ? h[s * channels + c0 + i] : 0.0f;
    }
  // A decode step (n = 1) does little else: the exponentials in vectors.
  for (size_t i = 0; i < states * width; i += lanes)
    hn::StoreU(hn::Neg(hn::Exp(d, hn::LoadU(d, a.data() + i))), d,
               a.data() + i);
  for (size_t t = 0; t < n; ++t) {
    // The rows a few steps ahead, which no hardware prefetcher guesses
    // (they are a row of every input apart).
    if (t + kScanPrefetchRows < n)
      for (const float *p : {u, delta, z})
        PrefetchBlock(p + (t + kScanPrefetchRows) * channels + c0, count);
    const float *bt = b + t * states, *ct = cm + t * states;
    for (size_t v = 0; v < vectors; ++v) {
      const size_t i = v * lanes, at = t * channels + c0 + i;
      const size_t m = std::min(lanes, count - i);
      const auto ut = LoadFirst(d, u + at, m);
      const auto dt = Softplus(d, LoadFirst(d, delta + at, m));
      const auto dtu = hn::Mul(dt, ut);
      auto y = hn::Mul(LoadFirst(d, dskip + c0 + i, m), ut);
      float *hp = hs.data() + i;
      const float *ap = a.data() + i;
      for (size_t s = 0; s < states; ++s, hp += width, ap += width) {
        const auto decay = ExpFast(d, hn::Mul(dt, hn::LoadU(d, ap)));
        const auto next = hn::MulAdd(decay, hn::LoadU(d, hp),
                                     hn::Mul(dtu, hn::Set(d, bt[s])));
        hn::StoreU(next, d, hp);
        y = hn::MulAdd(next, hn::Set(d, ct[s]), y);
      }
      StoreFirst(d, hn::Mul(y, Silu(d, LoadFirst(d, z + at, m))), out + at, m);
    }
  }
  if (newH)
    for (size_t s = 0; s < states; ++s)
      for (size_t i = 0; i < count; ++i)
        newH[s * channels + c0 + i] = hs[s * width + i];
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_SCAN_INL_H_
