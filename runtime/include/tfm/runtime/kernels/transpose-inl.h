// Transposing a block of rows: n rows of `cols` floats written column by
// column (the keys of a head, for dot-product scores that read them
// feature-major). The loops around it and the shapes are the generated
// code's.
//
// Per-target file: include after hwy/highway.h (or from a file that
// foreach_target.h re-includes).

#if defined(TFM_RUNTIME_KERNELS_TRANSPOSE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_TRANSPOSE_INL_H_
#undef TFM_RUNTIME_KERNELS_TRANSPOSE_INL_H_
#else
#define TFM_RUNTIME_KERNELS_TRANSPOSE_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
/// dst[f * ldd + j] = src[j * lds + f] for j, f < 16, in registers: 16
/// loads, 64 shuffles, 16 stores. Highway 1.0.3 has no transpose; these are
/// AVX-512F intrinsics, so only the AVX-512 targets compile them.
HWY_INLINE void Transpose16x16(const float *HWY_RESTRICT src, size_t lds,
                               float *HWY_RESTRICT dst, size_t ldd) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = _mm512_loadu_ps(src + i * lds);
  // Pairs of rows interleaved within each 128-bit lane L (columns 4L..4L+3).
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // r[4i + c], lane L: rows 4i..4i+3 at column 4L + c.
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  // Column 4L + c gathers lane L of r[c], r[4 + c], r[8 + c], r[12 + c].
  for (int c = 0; c < 4; ++c) {
    const __m512 x = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    const __m512 y = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
    const __m512 z = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    const __m512 w = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
    _mm512_storeu_ps(dst + (0 + c) * ldd, _mm512_shuffle_f32x4(x, z, 0x88));
    _mm512_storeu_ps(dst + (4 + c) * ldd, _mm512_shuffle_f32x4(y, w, 0x88));
    _mm512_storeu_ps(dst + (8 + c) * ldd, _mm512_shuffle_f32x4(x, z, 0xDD));
    _mm512_storeu_ps(dst + (12 + c) * ldd, _mm512_shuffle_f32x4(y, w, 0xDD));
  }
}
#endif

/// dst[f * ldd + j] = src[j * lds + f] for j < n and f < cols. On AVX-512,
/// 16 x 16 blocks in registers (each source line read once, each
/// destination line written whole); the rest, and other targets, element by
/// element over blocks of 16 rows that stay in L1 (measured: the in-register
/// form makes attention over 512 positions ~10% faster than the compiler's
/// gathers). Not on AVX2: 8 x 8 squares in registers (24 shuffles each)
/// measured slower than the element loop on Zen 3 (512 keys x 64 features
/// from rows 2304 floats apart: 15.3 us against 14.0).
HWY_INLINE void TransposeRows(const float *HWY_RESTRICT src, size_t lds,
                              size_t n, size_t cols, float *HWY_RESTRICT dst,
                              size_t ldd) {
  for (size_t j0 = 0; j0 < n; j0 += 16) {
    const size_t nj = n - j0 < 16 ? n - j0 : 16;
    size_t f0 = 0;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    if (nj == 16)
      for (; f0 + 16 <= cols; f0 += 16)
        Transpose16x16(src + j0 * lds + f0, lds, dst + f0 * ldd + j0, ldd);
#endif
    for (size_t f = f0; f < cols; ++f)
      for (size_t j = 0; j < nj; ++j)
        dst[f * ldd + j0 + j] = src[(j0 + j) * lds + f];
  }
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_TRANSPOSE_INL_H_
