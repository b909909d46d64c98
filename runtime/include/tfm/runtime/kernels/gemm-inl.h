// The register-blocked GEMM micro-kernel: a tile of C = A B (+ bias, then an
// activation) where B is a weight packed into panels of kPanel columns
// (panel p holds, for every k, columns [p*kPanel, (p+1)*kPanel) contiguously;
// the last panel is zero-padded). The loops over tiles, the blocking and the
// packing are the generated code's; this is only the innermost block.

#if defined(TFM_RUNTIME_KERNELS_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_GEMM_INL_H_
#undef TFM_RUNTIME_KERNELS_GEMM_INL_H_
#else
#define TFM_RUNTIME_KERNELS_GEMM_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Width of a packed weight panel, in floats: the same for every target, so
/// one packed layout serves whichever target runs.
constexpr size_t kPanel = 32;

/// Rows of C a tile covers on this target: as many as keep the accumulators
/// (kRows x kPanel/lanes vectors) within the register file. On AVX-512, 8
/// (16 accumulators) rather than the 6 that would also fit: row counts are
/// mostly multiples of 8, which leave no short, latency-bound last tile
/// (measured: BERT layer seq 128 ~5% faster, d 256 / seq 64 ~8%).
constexpr size_t kGemmRows = hn::MaxLanes(hn::ScalableTag<float>()) >= 16  ? 8
                             : hn::MaxLanes(hn::ScalableTag<float>()) >= 8 ? 3
                                                                           : 1;

/// C[r, j] = sum_k A[r, k] * panel[k, j] (+ bias[j]) for r < kRows and
/// j < cols (<= kPanel). A's rows are lda floats apart, C's ldc. With
/// kPrefetch, `nextPanel` (the panel the caller's next tile reads, k x kPanel
/// floats) is prefetched into L1 alongside, so that tile does not start on
/// a cold panel. A template parameter, not a test in the loop: clang keeps
/// such a test in every step.
template <size_t kRows, bool kPrefetch>
HWY_INLINE void GemmTile(const float *HWY_RESTRICT a, size_t lda,
                         const float *HWY_RESTRICT panel, size_t k,
                         const float *HWY_RESTRICT bias, float *HWY_RESTRICT c,
                         size_t ldc, size_t cols,
                         const float *HWY_RESTRICT nextPanel) {
  const hn::ScalableTag<float> d;
  constexpr size_t kLanes = hn::MaxLanes(d);
  constexpr size_t kVecs = kPanel / kLanes;
  using V = decltype(hn::Zero(d));
  V acc[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t v = 0; v < kVecs; ++v)
      acc[r][v] = hn::Zero(d);
  for (size_t kk = 0; kk < k; ++kk) {
    if constexpr (kPrefetch)
      for (size_t line = 0; line < kPanel; line += 64 / sizeof(float))
        hwy::Prefetch(nextPanel + kk * kPanel + line);
    V b[kVecs];
    for (size_t v = 0; v < kVecs; ++v)
      b[v] = hn::Load(d, panel + kk * kPanel + v * kLanes);
    for (size_t r = 0; r < kRows; ++r) {
      const V ar = hn::Set(d, a[r * lda + kk]);
      for (size_t v = 0; v < kVecs; ++v)
        acc[r][v] = hn::MulAdd(ar, b[v], acc[r][v]);
    }
  }
  HWY_ALIGN float tmp[kPanel];
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t v = 0; v < kVecs; ++v) {
      V out = acc[r][v];
      if (bias != nullptr && cols == kPanel)
        out = hn::Add(out, hn::LoadU(d, bias + v * kLanes));
      if (cols == kPanel)
        hn::StoreU(out, d, c + r * ldc + v * kLanes);
      else
        hn::Store(out, d, tmp + v * kLanes);
    }
    if (cols != kPanel)
      for (size_t j = 0; j < cols; ++j)
        c[r * ldc + j] = tmp[j] + (bias != nullptr ? bias[j] : 0.0f);
  }
}

/// GemmTile for `rows` (1..kRows) rows, chosen at run time.
template <size_t kRows>
HWY_INLINE void GemmTileUpTo(size_t rows, const float *HWY_RESTRICT a,
                             size_t lda, const float *HWY_RESTRICT panel,
                             size_t k, const float *HWY_RESTRICT bias,
                             float *HWY_RESTRICT c, size_t ldc, size_t cols,
                             const float *HWY_RESTRICT nextPanel) {
  if constexpr (kRows > 1) {
    if (rows < kRows)
      return GemmTileUpTo<kRows - 1>(rows, a, lda, panel, k, bias, c, ldc, cols,
                                     nextPanel);
  }
  if (nextPanel != nullptr)
    GemmTile<kRows, true>(a, lda, panel, k, bias, c, ldc, cols, nextPanel);
  else
    GemmTile<kRows, false>(a, lda, panel, k, bias, c, ldc, cols, nullptr);
}

/// GemmTile for 1..kGemmRows rows, chosen at run time (the last rows of C);
/// `nextPanel`, if given, is prefetched (see GemmTile).
HWY_INLINE void GemmTileRows(size_t rows, const float *HWY_RESTRICT a,
                             size_t lda, const float *HWY_RESTRICT panel,
                             size_t k, const float *HWY_RESTRICT bias,
                             float *HWY_RESTRICT c, size_t ldc, size_t cols,
                             const float *HWY_RESTRICT nextPanel = nullptr) {
  GemmTileUpTo<kGemmRows>(rows, a, lda, panel, k, bias, c, ldc, cols,
                          nextPanel);
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_GEMM_INL_H_
