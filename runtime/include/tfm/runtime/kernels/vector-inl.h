// Vector micro-kernels over contiguous float rows: dot products, axpy,
// scaling, sums. The loops around them (rows, heads, positions) and every
// shape are in the generated code; these are only the innermost loops.
//
// Per-target file: include after hwy/highway.h (or from a file that
// foreach_target.h re-includes).

#if defined(TFM_RUNTIME_KERNELS_VECTOR_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_VECTOR_INL_H_
#undef TFM_RUNTIME_KERNELS_VECTOR_INL_H_
#else
#define TFM_RUNTIME_KERNELS_VECTOR_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Of three sizes for code that runs with 512-, 256- or 128-bit vectors
/// (the compiler's choices, recorded as #tfm_codegen.gemm_tiling and
/// #tfm_codegen.attention_tiling: the generated C++ is compiled for every
/// target it may run on), this target's.
constexpr size_t ForVectorBits(size_t for512, size_t for256, size_t for128) {
  return hn::MaxLanes(hn::ScalableTag<float>()) >= 16  ? for512
         : hn::MaxLanes(hn::ScalableTag<float>()) >= 8 ? for256
                                                       : for128;
}

/// The first `count` floats at p (a whole vector when count >= lanes), zero
/// after them, reading nothing past p + count. Highway 1.0.3's MaskedLoad
/// is a masked load only on AVX2 and AVX-512; on the older targets (SSE4,
/// SSSE3, EMU128) it loads the whole vector, aligned, and faults on an
/// unaligned p: those copy the floats into an aligned vector instead.
template <class D>
HWY_INLINE hn::Vec<D> LoadFirst(D d, const float *p, size_t count) {
#if HWY_TARGET <= HWY_AVX2
  return hn::MaskedLoad(hn::FirstN(d, count), d, p);
#else
  if (count >= hn::Lanes(d))
    return hn::LoadU(d, p);
  HWY_ALIGN float lanes[hn::MaxLanes(d)] = {};
  for (size_t i = 0; i < count; ++i)
    lanes[i] = p[i];
  return hn::Load(d, lanes);
#endif
}

/// Stores the first `count` lanes of v at p (all of them when count >=
/// lanes), touching nothing past p + count.
template <class D>
HWY_INLINE void StoreFirst(D d, hn::Vec<D> v, float *p, size_t count) {
  if (count >= hn::Lanes(d)) {
    hn::StoreU(v, d, p);
    return;
  }
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  hn::Store(v, d, lanes);
  for (size_t i = 0; i < count; ++i)
    p[i] = lanes[i];
}

/// sum_i a[i] * b[i]. The tail is a partial load, so nothing past n is read.
HWY_INLINE float Dot(const float *HWY_RESTRICT a, const float *HWY_RESTRICT b,
                     size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc0);
    acc1 = hn::MulAdd(hn::LoadU(d, a + i + lanes), hn::LoadU(d, b + i + lanes),
                      acc1);
  }
  for (; i + lanes <= n; i += lanes)
    acc0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc0);
  if (i < n) {
    acc1 = hn::MulAdd(LoadFirst(d, a + i, n - i), LoadFirst(d, b + i, n - i),
                      acc1);
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
}

/// out[r] = sum_i x_r[i] * w[i] for four rows x_r = x + r * xStride: the
/// weight row is loaded once for all four.
HWY_INLINE void Dot4(const float *HWY_RESTRICT x, size_t xStride,
                     const float *HWY_RESTRICT w, size_t n,
                     float *HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const float *x0 = x, *x1 = x + xStride, *x2 = x + 2 * xStride,
              *x3 = x + 3 * xStride;
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto wv = hn::LoadU(d, w + i);
    a0 = hn::MulAdd(hn::LoadU(d, x0 + i), wv, a0);
    a1 = hn::MulAdd(hn::LoadU(d, x1 + i), wv, a1);
    a2 = hn::MulAdd(hn::LoadU(d, x2 + i), wv, a2);
    a3 = hn::MulAdd(hn::LoadU(d, x3 + i), wv, a3);
  }
  if (i < n) {
    const size_t m = n - i;
    const auto wv = LoadFirst(d, w + i, m);
    a0 = hn::MulAdd(LoadFirst(d, x0 + i, m), wv, a0);
    a1 = hn::MulAdd(LoadFirst(d, x1 + i, m), wv, a1);
    a2 = hn::MulAdd(LoadFirst(d, x2 + i, m), wv, a2);
    a3 = hn::MulAdd(LoadFirst(d, x3 + i, m), wv, a3);
  }
  out[0] = hn::GetLane(hn::SumOfLanes(d, a0));
  out[1] = hn::GetLane(hn::SumOfLanes(d, a1));
  out[2] = hn::GetLane(hn::SumOfLanes(d, a2));
  out[3] = hn::GetLane(hn::SumOfLanes(d, a3));
}

/// y[i] += a * x[i]
HWY_INLINE void Axpy(float a, const float *HWY_RESTRICT x,
                     float *HWY_RESTRICT y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const auto av = hn::Set(d, a);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::MulAdd(av, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d,
               y + i);
  for (; i < n; ++i)
    y[i] += a * x[i];
}

/// y[i] = a * x[i] (x may equal y)
HWY_INLINE void Scale(float a, const float *x, float *y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const auto av = hn::Set(d, a);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Mul(av, hn::LoadU(d, x + i)), d, y + i);
  for (; i < n; ++i)
    y[i] = a * x[i];
}

/// y[i] = a[i] + b[i] (y may equal a or b)
HWY_INLINE void Add(const float *a, const float *b, float *y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, y + i);
  for (; i < n; ++i)
    y[i] = a[i] + b[i];
}

/// Whether every x[i] equals `value` (a padding mask's row or block: all
/// real keys, or all padding).
HWY_INLINE bool AllEqual(const float *x, size_t n, float value) {
  for (size_t i = 0; i < n; ++i)
    if (x[i] != value)
      return false;
  return true;
}

/// The `k` largest of x[0..n) (on a tie the lower index first; a NaN is
/// never larger), largest first, into `index`, and the softmax over
/// those k values into `weight`: a mixture of experts' routing of one
/// token (k <= n; k and n are small, a few to a few hundred).
HWY_INLINE void TopKSoftmax(const float *x, size_t n, size_t k, int32_t *index,
                            float *weight) {
  for (size_t s = 0; s < k; ++s) {
    size_t best = n;
    for (size_t e = 0; e < n; ++e) {
      bool taken = false;
      for (size_t j = 0; j < s && !taken; ++j)
        taken = size_t(index[j]) == e;
      // x[best] != x[best]: a NaN so far, which any number replaces.
      if (!taken &&
          (best == n || x[e] > x[best] || (x[best] != x[best] && x[e] == x[e])))
        best = e;
    }
    index[s] = int32_t(best);
  }
  // index[0] holds the largest: every exponent is at most 0.
  const float top = x[index[0]];
  float sum = 0.0f;
  for (size_t s = 0; s < k; ++s) {
    weight[s] = std::exp(x[index[s]] - top);
    sum += weight[s];
  }
  for (size_t s = 0; s < k; ++s)
    weight[s] /= sum;
}

/// y[i] = 0
HWY_INLINE void Zero(float *y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Zero(d), d, y + i);
  for (; i < n; ++i)
    y[i] = 0.0f;
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_VECTOR_INL_H_
