// A GEMM tile's k loop on AVX512-BF16 dot products (VDPBF16PS): the
// products of a GEMM with bf16 inputs (--compute=bf16) where the CPU has
// them, two k's an instruction. Highway 1.0.3 has no target with them
// (its bf16 ReorderWidenMulAccumulate widens to f32 FMAs), so the loop is
// written with their intrinsics, compiled for the 512-bit x86 targets with
// the feature added, and taken at run time where the CPU reports it (the
// CPU the code was compiled for, with --target=native).
#if defined(TFM_RUNTIME_KERNELS_GEMM_BF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_GEMM_BF16_INL_H_
#undef TFM_RUNTIME_KERNELS_GEMM_BF16_INL_H_
#else
#define TFM_RUNTIME_KERNELS_GEMM_BF16_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "hwy/highway.h"

// Only the 512-bit x86 targets have a loop here (an empty target region
// would draw a warning).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {

#define TFM_BF16_DOT_ATTR                                                      \
  __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512bf16")))

/// Whether this CPU has the AVX512-BF16 dot products (known at compile
/// time in a build for one that has them).
inline bool CpuHasBf16Dot() {
#if defined(__AVX512BF16__)
  return true;
#else
  static const bool has = __builtin_cpu_supports("avx512bf16") != 0;
  return has;
#endif
}

/// Whether GEMM tiles with bf16 inputs take the dot products: where the
/// CPU has them and runs them faster than f32 FMAs. On Intel's Sapphire
/// Rapids they are not: measured on one (KVM, 1 thread), 16 independent
/// VDPBF16PS zmm chains ran at 1.87 G instructions/s, 120 GFLOP/s, against
/// 7.5 G/s and 240 GFLOP/s of FMAs, and a BERT-base layer at seq 128 with
/// --compute=bf16 took 23 ms on them against 16 ms on FMAs. AMD's Zen 4
/// and Zen 5 (the other CPUs with them) are expected to run them at the
/// FMAs' instruction rate, twice the f32 FLOPs: taken on AMD CPUs, not
/// measured on one yet. TFM_BF16_DOT=1 (or 0) in the environment takes
/// them (or not) on any CPU that has them, to compare the two on one
/// machine. Fixed for the process: results are the same from run to run.
inline bool PreferBf16Dot() {
  static const bool prefer = [] {
    if (!CpuHasBf16Dot())
      return false;
    const char *env = std::getenv("TFM_BF16_DOT");
    if (env != nullptr && std::strcmp(env, "0") == 0)
      return false;
    if (env != nullptr && std::strcmp(env, "1") == 0)
      return true;
    return __builtin_cpu_is("amd") != 0;
  }();
  return prefer;
}

/// One step of Bf16DotTile: k's `at` and at + 1 (a zero row in place of
/// the latter where `pairWithZero`), of A's rounded rows and the panel `p`.
template <size_t kRows, size_t kPieces, size_t kStride>
TFM_BF16_DOT_ATTR inline __attribute__((always_inline)) void
Bf16DotStep(__m512 (&acc)[kRows][2 * kPieces],
            const uint16_t (&rounded)[kRows][kStride],
            const uint16_t *HWY_RESTRICT p, size_t at, bool pairWithZero) {
  constexpr size_t kCols = 32 * kPieces;
  __m512 b[2 * kPieces];
  for (size_t piece = 0; piece < kPieces; ++piece) {
    const __m512i row0 = _mm512_loadu_si512(p + at * kCols + piece * 32);
    const __m512i row1 =
        pairWithZero ? _mm512_setzero_si512()
                     : _mm512_loadu_si512(p + (at + 1) * kCols + piece * 32);
    b[2 * piece] = (__m512)_mm512_unpacklo_epi16(row0, row1);
    b[2 * piece + 1] = (__m512)_mm512_unpackhi_epi16(row0, row1);
  }
  for (size_t r = 0; r < kRows; ++r) {
    int32_t pair;
    std::memcpy(&pair, &rounded[r][at], sizeof(pair));
    const __m512bh ar = (__m512bh)_mm512_set1_epi32(pair);
    for (size_t v = 0; v < 2 * kPieces; ++v)
      acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, (__m512bh)b[v]);
  }
}

/// out[r][j] = sum over k of bf16(a[r][k]) * panel[k][j], for a tile of
/// kRows rows and kCols (a multiple of 32) columns of a panel of bf16
/// values ([k][kCols], as packed). A's rows are rounded to bf16 (nearest,
/// ties to even) kChunk k's at a time into a buffer in L1; each step takes
/// a pair of k's: panel rows k and k + 1 interleaved (vpunpck{l,h}wd) into
/// the (k, k+1) pairs of two vectors of 16 columns each (columns 0-3, 8-11,
/// 16-19, 24-27 of the 32 and the others), multiplied by a's pair
/// broadcast, summed into f32 lanes; the columns put back in order at the
/// end. An odd k's last step pairs its k with zeros.
template <size_t kRows, size_t kCols>
TFM_BF16_DOT_ATTR __attribute__((noinline)) void
Bf16DotTile(const float *HWY_RESTRICT a, size_t lda,
            const uint16_t *HWY_RESTRICT panel, size_t k,
            float *HWY_RESTRICT out) {
  static_assert(kCols % 32 == 0, "whole 32-column pieces");
  constexpr size_t kPieces = kCols / 32;
  constexpr size_t kChunk = 256;
  alignas(64) uint16_t rounded[kRows][kChunk + 32];
  __m512 acc[kRows][2 * kPieces];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t v = 0; v < 2 * kPieces; ++v)
      acc[r][v] = _mm512_setzero_ps();
  for (size_t k0 = 0; k0 < k; k0 += kChunk) {
    const size_t n = k - k0 < kChunk ? k - k0 : kChunk;
    // Whole vectors of 32, zero past n (a partial one masked): an odd n's
    // last pair is (a[n - 1], 0).
    for (size_t r = 0; r < kRows; ++r) {
      const float *src = a + r * lda + k0;
      for (size_t i = 0; i < n; i += 32) {
        const size_t left = n - i;
        const __mmask16 lo =
            left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
        const __mmask16 hi = left >= 32   ? __mmask16(0xffff)
                             : left <= 16 ? __mmask16(0)
                                          : __mmask16((1u << (left - 16)) - 1);
        const __m512 v0 = _mm512_maskz_loadu_ps(lo, src + i);
        const __m512 v1 = _mm512_maskz_loadu_ps(hi, src + i + 16);
        _mm512_store_si512(reinterpret_cast<__m512i *>(&rounded[r][i]),
                           (__m512i)_mm512_cvtne2ps_pbh(v1, v0));
      }
    }
    const uint16_t *p = panel + k0 * kCols;
    size_t kk = 0;
    for (; kk + 2 <= n; kk += 2)
      Bf16DotStep<kRows, kPieces>(acc, rounded, p, kk, false);
    if (kk < n)
      Bf16DotStep<kRows, kPieces>(acc, rounded, p, kk, true);
  }
  // Lane j of a piece's first vector is column 8 (j / 4) + j % 4, of its
  // second 8 (j / 4) + 4 + j % 4.
  const __m512i first =
      _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13,
                                           14, 15, 28, 29, 30, 31);
  for (size_t r = 0; r < kRows; ++r)
    for (size_t piece = 0; piece < kPieces; ++piece) {
      const __m512 lo = acc[r][2 * piece], hi = acc[r][2 * piece + 1];
      _mm512_store_ps(out + r * kCols + piece * 32,
                      _mm512_permutex2var_ps(lo, first, hi));
      _mm512_store_ps(out + r * kCols + piece * 32 + 16,
                      _mm512_permutex2var_ps(lo, second, hi));
    }
}

#undef TFM_BF16_DOT_ATTR

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

#endif // TFM_RUNTIME_KERNELS_GEMM_BF16_INL_H_
