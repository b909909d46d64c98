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

/// Channels [c0, c0 + count) of one sequence's n rows (`channels` floats
/// apart) through out[t, c] = SiLU(bias[c] + sum_k weight[c, k]
/// in[t - width + 1 + k, c]) (weight [channels, width], PyTorch's
/// depthwise Conv1d layout). The width - 1 rows before row 0 are
/// `window`'s (rows of `channels` floats, oldest first), or zeros when it
/// is null; `newWindow` (when not null, and it may be `window`) receives the
/// width - 1 inputs up to row n - 1, for the next call.
HWY_INLINE void CausalConv1dSilu(const float *HWY_RESTRICT in, size_t n,
                                 size_t channels,
                                 const float *HWY_RESTRICT weight, size_t width,
                                 const float *HWY_RESTRICT bias,
                                 const float *window, float *newWindow,
                                 float *HWY_RESTRICT out, size_t c0,
                                 size_t count) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  // The taps of a block of lanes, tap-major: one vector load each.
  std::vector<float> taps(width * lanes);
  const size_t before = width - 1;
  // Input row r of the extended sequence (the window's rows, then in's).
  auto row = [&](size_t r, size_t c, size_t m) {
    if (r >= before)
      return LoadFirst(d, in + (r - before) * channels + c, m);
    return window ? LoadFirst(d, window + r * channels + c, m) : hn::Zero(d);
  };
  for (size_t c = c0; c < c0 + count; c += lanes) {
    const size_t m = std::min(lanes, c0 + count - c);
    for (size_t k = 0; k < width; ++k)
      for (size_t l = 0; l < lanes; ++l)
        taps[k * lanes + l] = l < m ? weight[(c + l) * width + k] : 0.0f;
    const auto b = LoadFirst(d, bias + c, m);
    for (size_t t = 0; t < n; ++t) {
      auto acc = b;
      for (size_t k = 0; k < width; ++k)
        acc = hn::MulAdd(hn::LoadU(d, taps.data() + k * lanes),
                         row(t + k, c, m), acc);
      StoreFirst(d, Silu(d, acc), out + t * channels + c, m);
    }
    if (!newWindow)
      continue;
    // Row r of the new window is extended row n + r: ascending r reads
    // only rows at or after n + r, so the update can be in place.
    for (size_t r = 0; r < before; ++r)
      StoreFirst(d, row(n + r, c, m), newWindow + r * channels + c, m);
  }
}

/// Channels [c0, c0 + count) of one sequence's n rows through Mamba's
/// selective scan, from state `h` ([states, channels], or zeros when null)
/// to `newH` (when not null; it may be `h`):
///   dt = softplus(delta[t]),  h = exp(dt A) h + dt u[t] b[t],
///   out[t] = (c[t] . h + dskip u[t]) SiLU(z[t]),  A = -exp(aLog[c, :]).
/// u, delta, z and out are rows of `channels` floats; b and c rows of
/// `states` floats.
HWY_INLINE void
SelectiveScanGated(const float *HWY_RESTRICT u, const float *HWY_RESTRICT delta,
                   const float *HWY_RESTRICT z, size_t n, size_t channels,
                   const float *HWY_RESTRICT b, const float *HWY_RESTRICT cm,
                   size_t states, const float *HWY_RESTRICT aLog,
                   const float *HWY_RESTRICT dskip, const float *h, float *newH,
                   float *HWY_RESTRICT out, size_t c0, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  // A block of lanes' A and h, state-major: one vector each.
  std::vector<float> a(states * lanes), hs(states * lanes);
  for (size_t c = c0; c < c0 + count; c += lanes) {
    const size_t m = std::min(lanes, c0 + count - c);
    for (size_t s = 0; s < states; ++s) {
      for (size_t l = 0; l < lanes; ++l)
        a[s * lanes + l] = l < m ? -std::exp(aLog[(c + l) * states + s]) : 0.0f;
      hn::StoreU(h ? LoadFirst(d, h + s * channels + c, m) : hn::Zero(d), d,
                 hs.data() + s * lanes);
    }
    const auto skip = LoadFirst(d, dskip + c, m);
    for (size_t t = 0; t < n; ++t) {
      const size_t at = t * channels + c;
      const auto ut = LoadFirst(d, u + at, m);
      const auto dt = Softplus(d, LoadFirst(d, delta + at, m));
      const auto dtu = hn::Mul(dt, ut);
      const float *bt = b + t * states, *ct = cm + t * states;
      auto y = hn::Mul(skip, ut);
      for (size_t s = 0; s < states; ++s) {
        float *hp = hs.data() + s * lanes;
        const auto decay =
            ExpFast(d, hn::Mul(dt, hn::LoadU(d, a.data() + s * lanes)));
        const auto next = hn::MulAdd(decay, hn::LoadU(d, hp),
                                     hn::Mul(dtu, hn::Set(d, bt[s])));
        hn::StoreU(next, d, hp);
        y = hn::MulAdd(next, hn::Set(d, ct[s]), y);
      }
      const auto gate = Silu(d, LoadFirst(d, z + at, m));
      StoreFirst(d, hn::Mul(y, gate), out + at, m);
    }
    if (newH)
      for (size_t s = 0; s < states; ++s)
        StoreFirst(d, hn::LoadU(d, hs.data() + s * lanes),
                   newH + s * channels + c, m);
  }
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_SCAN_INL_H_
