// The register-blocked GEMM micro-kernel: a tile of C = A B (+ bias) where B
// is a weight packed into panels of kCols columns (panel p holds, for every
// k, columns [p*kCols, (p+1)*kCols) contiguously; the last panel is
// zero-padded). The panel width and the tile's rows are the compiler's
// choice for each target (#tfm_codegen.gemm_tiling); the loops over tiles,
// the blocking and the packing are the generated code's; this is only the
// innermost block.

#if defined(TFM_RUNTIME_KERNELS_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_GEMM_INL_H_
#undef TFM_RUNTIME_KERNELS_GEMM_INL_H_
#else
#define TFM_RUNTIME_KERNELS_GEMM_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "tfm/runtime/Model.h"
#include "tfm/runtime/kernels/gemm-bf16-inl.h"
#include "tfm/runtime/kernels/vector-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// What a tile prefetches while it runs: nothing, the whole panel the
/// caller's next tile reads into L1 (short panels, which the hardware
/// prefetcher has no time to ramp up on), or some lines of the next panel
/// into L2 (long panels: the tiles of a panel share the next one's lines, so
/// it is in L2 when its first tile starts instead of in memory).
enum class GemmPrefetch { kNone, kL1, kL2 };

/// `n` floats of `src` rounded to bfloat16 (nearest, ties to even; NaN
/// kept) into `dst`, as floats: the inputs of a GEMM with bf16 inputs.
template <class D>
HWY_INLINE void RoundToBFloat16(D d, const float *HWY_RESTRICT src,
                                float *HWY_RESTRICT dst, size_t n) {
  const hn::RebindToUnsigned<D> du;
  const auto half = hn::Set(du, 0x7fffu), one = hn::Set(du, 1u);
  const auto top = hn::Set(du, 0xffff0000u);
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, src + i);
    const auto bits = hn::BitCast(du, v);
    const auto odd = hn::And(hn::ShiftRight<16>(bits), one);
    const auto rounded = hn::And(hn::Add(hn::Add(bits, half), odd), top);
    hn::StoreU(hn::IfThenElse(hn::IsNaN(v), v, hn::BitCast(d, rounded)), d,
               dst + i);
  }
  for (; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, src + i, 4);
    if ((bits & 0x7fffffffu) <= 0x7f800000u) // not NaN
      bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(dst + i, &bits, 4);
  }
}

/// A vector of panel values as floats: loaded, or 16-bit values (a weight
/// kept in bf16 or f16: half the bytes to read) widened exactly.
template <class D>
HWY_INLINE hn::Vec<D> LoadPanel(D d, const float *HWY_RESTRICT p) {
  return hn::Load(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadPanel(D d, const hwy::bfloat16_t *HWY_RESTRICT p) {
  return hn::PromoteTo(d, hn::LoadU(hn::Rebind<hwy::bfloat16_t, D>(), p));
}
template <class D>
HWY_INLINE hn::Vec<D> LoadPanel(D d, const hwy::float16_t *HWY_RESTRICT p) {
  return hn::PromoteTo(d, hn::LoadU(hn::Rebind<hwy::float16_t, D>(), p));
}

/// One k step of a tile: acc[r][v] += A[r, kk] * panel[kk, v * lanes...].
/// The tile's rows come as pointers, one a register: indexed by kk alone,
/// a step's broadcasts need no address arithmetic, whose scalar µops would
/// otherwise share the ports of the FMAs (measured on Sapphire Rapids, 8 x
/// 32 tiles in L1: 86% of the FMA peak with rows at r * lda, 96% with row
/// pointers and four steps a loop iteration).
template <size_t kRows, size_t kVecs, class D, class V, typename PanelT>
HWY_INLINE void GemmStep(D d, V (&acc)[kRows][kVecs],
                         const float *const (&rows)[kRows],
                         const PanelT *HWY_RESTRICT panel, size_t kk) {
  constexpr size_t kLanes = hn::MaxLanes(d);
  constexpr size_t kCols = kVecs * kLanes;
  V b[kVecs];
  for (size_t v = 0; v < kVecs; ++v)
    b[v] = LoadPanel(d, panel + kk * kCols + v * kLanes);
  for (size_t r = 0; r < kRows; ++r) {
    const V ar = hn::Set(d, rows[r][kk]);
    for (size_t v = 0; v < kVecs; ++v)
      acc[r][v] = hn::MulAdd(ar, b[v], acc[r][v]);
  }
}

/// One k step of a tile whose panel holds int8 values: each widened to f32
/// and multiplied by its column's scale (`scale`, the k step's block's),
/// the value the weight keeps (tfm::rt::int8Value's times the scale,
/// rounded alike), then as GemmStep.
template <size_t kRows, size_t kVecs, class D, class V>
HWY_INLINE void GemmStepInt8(D d, V (&acc)[kRows][kVecs],
                             const float *const (&rows)[kRows],
                             const int8_t *HWY_RESTRICT panel,
                             const V (&scale)[kVecs], size_t kk) {
  constexpr size_t kLanes = hn::MaxLanes(d);
  constexpr size_t kCols = kVecs * kLanes;
  const hn::Rebind<int8_t, D> d8;
  const hn::Rebind<int32_t, D> d32;
  V b[kVecs];
  for (size_t v = 0; v < kVecs; ++v)
    b[v] = hn::Mul(
        hn::ConvertTo(d, hn::PromoteTo(d32, hn::LoadU(d8, panel + kk * kCols +
                                                              v * kLanes))),
        scale[v]);
  for (size_t r = 0; r < kRows; ++r) {
    const V ar = hn::Set(d, rows[r][kk]);
    for (size_t v = 0; v < kVecs; ++v)
      acc[r][v] = hn::MulAdd(ar, b[v], acc[r][v]);
  }
}

/// Between the k steps of a tile on x86 targets below AVX-512, which have
/// 16 vector registers: no load of a later step moves above this one's
/// FMAs. Unrolled four steps a loop iteration, clang otherwise hoists the
/// later steps' panel loads, and a 6 x 16 tile (12 accumulators, 2 panel
/// vectors, a broadcast) spilled accumulators to the stack in its inner
/// loop. Measured on Sapphire Rapids with the AVX2 target forced
/// (TFM_SIMD=avx2): BERT-base layer seq 128 at 1 thread 72 -> 88 GFLOP/s
/// (64% -> 79% of the 256-bit FMA peak). AVX-512's 32 registers hold the
/// hoisted loads: no barrier there.
HWY_INLINE void StepBarrier() {
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
  asm volatile("" ::: "memory");
#endif
}

/// Whether a tile of kCols columns with bf16 inputs and a bf16 panel takes
/// the AVX512-BF16 dot products (gemm-bf16-inl.h): on a 512-bit x86
/// target, with whole 32-column pieces, where the CPU has them and they
/// are the faster (PreferBf16Dot).
template <size_t kCols> HWY_INLINE bool GemmTakesBf16Dot() {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (kCols % 32 == 0)
    return PreferBf16Dot();
#endif
  return false;
}

/// A tile's sums (+ bias) into its `cols` (<= kCols) columns of C.
template <size_t kRows, size_t kCols, class D, class V, size_t kVecs>
HWY_INLINE void StoreTile(D d, const V (&acc)[kRows][kVecs],
                          const float *HWY_RESTRICT bias, float *HWY_RESTRICT c,
                          size_t ldc, size_t cols) {
  constexpr size_t kLanes = hn::MaxLanes(d);
  HWY_ALIGN float tmp[kCols];
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t v = 0; v < kVecs; ++v) {
      V out = acc[r][v];
      if (bias != nullptr && cols == kCols)
        out = hn::Add(out, hn::LoadU(d, bias + v * kLanes));
      if (cols == kCols)
        hn::StoreU(out, d, c + r * ldc + v * kLanes);
      else
        hn::Store(out, d, tmp + v * kLanes);
    }
    if (cols != kCols)
      for (size_t j = 0; j < cols; ++j)
        c[r * ldc + j] = tmp[j] + (bias != nullptr ? bias[j] : 0.0f);
  }
}

/// A tile of at most this many rows streams its panel: it does few FMAs a
/// panel byte, so the panel, read once from memory (a decode step's GEMV),
/// arrives slower than the FMAs consume it unless the tile prefetches its
/// own lines kStreamAheadBytes ahead into L1. Measured on Sapphire Rapids,
/// gpt2-small decode at 1 thread with int8 panels: 65 -> 80 tokens/s, the
/// hardware prefetcher alone leaving the loads of the widened values
/// waiting on memory; distances of 1 to 3 KiB did alike, 8 KiB worse.
constexpr size_t kStreamRows = 4;
constexpr size_t kStreamAheadBytes = 2048;

/// The k steps [kBegin, kEnd) of a tile, four a loop iteration (the loop's
/// own counter and branch spread over four steps' FMAs); with kStream, the
/// panel's lines kStreamAheadBytes past each group of four steps prefetched
/// into L1 alongside.
template <bool kStream = false, size_t kRows, size_t kVecs, class D, class V,
          typename PanelT>
HWY_INLINE void
GemmSteps(D d, V (&acc)[kRows][kVecs], const float *const (&rows)[kRows],
          const PanelT *HWY_RESTRICT panel, size_t kBegin, size_t kEnd) {
  constexpr size_t kCols = kVecs * hn::MaxLanes(d);
  constexpr size_t kStepBytes = 4 * kCols * sizeof(PanelT);
  size_t kk = kBegin;
  for (; kk + 4 <= kEnd; kk += 4) {
    if constexpr (kStream) {
      const char *ahead = reinterpret_cast<const char *>(panel + kk * kCols) +
                          kStreamAheadBytes;
      for (size_t at = 0; at < kStepBytes; at += 64)
        hwy::Prefetch(ahead + at);
    }
    GemmStep(d, acc, rows, panel, kk);
    StepBarrier();
    GemmStep(d, acc, rows, panel, kk + 1);
    StepBarrier();
    GemmStep(d, acc, rows, panel, kk + 2);
    StepBarrier();
    GemmStep(d, acc, rows, panel, kk + 3);
    StepBarrier();
  }
  for (; kk < kEnd; ++kk)
    GemmStep(d, acc, rows, panel, kk);
}

/// C[r, j] = sum_k A[r, k] * panel[k, j] (+ bias[j]) for r < kRows and
/// j < cols (<= kCols). A's rows are lda floats apart, C's ldc. Prefetches
/// (kPrefetch): kL1, the k x kCols floats at `prefetchAt` into L1
/// alongside; kL2, `l2Lines` 64-byte lines from `prefetchAt` into L2, one
/// after every k / l2Lines steps (at most one per step). A template
/// parameter, not a test in the loop: clang keeps such a test in every
/// step. Not inlined: every GEMM of a model with this tile shape calls one
/// copy (a call per k x kRows x kCols tile costs nothing measurable), where
/// inlined copies at every call site, for every row count and prefetch
/// kind, tripled the C++ compile time of a model (--target=generic: 68 s
/// to 23 s for examples/tiny-decoder.json).
///
/// With kBf16Inputs, A's values are rounded to bfloat16 as they are read
/// (the panel was rounded when it was packed): blocks of kBf16Chunk k's of
/// the tile's rows are rounded into a buffer in L1, then multiplied.
///
/// The panel's elements are floats, or 16-bit values (PanelT bfloat16_t or
/// float16_t) widened as they are loaded, or int8 values (PanelT int8_t)
/// widened and multiplied by their block's scale: a panel of int8 values
/// holds, after its k x kCols values, one row of kCols float scales per
/// block of kInt8Block k's (the last block may be shorter).
template <size_t kRows, size_t kCols, GemmPrefetch kPrefetch, bool kBf16Inputs,
          typename PanelT>
HWY_NOINLINE void
GemmTile(const float *HWY_RESTRICT a, size_t lda,
         const PanelT *HWY_RESTRICT panel, size_t k,
         const float *HWY_RESTRICT bias, float *HWY_RESTRICT c, size_t ldc,
         size_t cols, const PanelT *HWY_RESTRICT prefetchAt, size_t l2Lines) {
  constexpr size_t kPerLine = 64 / sizeof(PanelT);
  const hn::ScalableTag<float> d;
  constexpr size_t kLanes = hn::MaxLanes(d);
  static_assert(kCols % kLanes == 0, "a tile is whole vectors wide");
  constexpr size_t kVecs = kCols / kLanes;
  using V = decltype(hn::Zero(d));
  V acc[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t v = 0; v < kVecs; ++v)
      acc[r][v] = hn::Zero(d);
  const float *rows[kRows];
  if constexpr (std::is_same_v<PanelT, int8_t>) {
    // Blocks of kInt8Block k's: the block's scales (after the panel's k x
    // kCols values, a row of kCols per block) in registers, then its steps;
    // the prefetches at the same pace, block by block.
    static_assert(!kBf16Inputs, "bf16 inputs read bf16 panels");
    constexpr size_t kBlock = size_t(kInt8Block);
    for (size_t r = 0; r < kRows; ++r)
      rows[r] = a + r * lda;
    const float *scales = reinterpret_cast<const float *>(panel + k * kCols);
    const char *lines = reinterpret_cast<const char *>(prefetchAt);
    for (size_t k0 = 0; k0 < k; k0 += kBlock) {
      const size_t end = HWY_MIN(k, k0 + kBlock);
      V scale[kVecs];
      for (size_t v = 0; v < kVecs; ++v)
        scale[v] = hn::LoadU(d, scales + k0 / kBlock * kCols + v * kLanes);
      if constexpr (kPrefetch == GemmPrefetch::kL1) {
        for (size_t at = k0 * kCols; at < end * kCols; at += 64)
          hwy::Prefetch(prefetchAt + at);
        const char *nextScales = reinterpret_cast<const char *>(
            prefetchAt + k * kCols + k0 / kBlock * kCols * sizeof(float));
        for (size_t at = 0; at < kCols * sizeof(float); at += 64)
          hwy::Prefetch(nextScales + at);
      } else if constexpr (kPrefetch == GemmPrefetch::kL2) {
        for (size_t line = k0 * l2Lines / k; line < end * l2Lines / k; ++line)
          __builtin_prefetch(lines + line * 64, 0, 2);
      }
      if constexpr (kRows <= kStreamRows) {
        // The values kStreamAheadBytes past this block's (past the last
        // block: the scales, then the next panel), and the scales of the
        // block as many blocks on.
        constexpr size_t kBlocksAhead = kStreamAheadBytes / (kBlock * kCols);
        const char *ahead = reinterpret_cast<const char *>(panel + k0 * kCols) +
                            kStreamAheadBytes;
        for (size_t at = 0; at < kBlock * kCols; at += 64)
          hwy::Prefetch(ahead + at);
        const char *scalesAhead = reinterpret_cast<const char *>(
            scales + (k0 / kBlock + kBlocksAhead) * kCols);
        for (size_t at = 0; at < kCols * sizeof(float); at += 64)
          hwy::Prefetch(scalesAhead + at);
      }
      size_t kk = k0;
      for (; kk + 4 <= end; kk += 4) {
        GemmStepInt8(d, acc, rows, panel, scale, kk);
        StepBarrier();
        GemmStepInt8(d, acc, rows, panel, scale, kk + 1);
        StepBarrier();
        GemmStepInt8(d, acc, rows, panel, scale, kk + 2);
        StepBarrier();
        GemmStepInt8(d, acc, rows, panel, scale, kk + 3);
        StepBarrier();
      }
      for (; kk < end; ++kk)
        GemmStepInt8(d, acc, rows, panel, scale, kk);
    }
  } else if constexpr (kBf16Inputs) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // AVX512-BF16 dot products where the CPU has them (gemm-bf16-inl.h);
    // the same rounding on f32 FMAs below otherwise.
    // (Bf16DotTile exists for whole 32-column pieces only.)
    if constexpr (kCols % 32 == 0 && std::is_same_v<PanelT, hwy::bfloat16_t>) {
      if (GemmTakesBf16Dot<kCols>()) {
        HWY_ALIGN float dots[kRows * kCols];
        Bf16DotTile<kRows, kCols>(
            a, lda, reinterpret_cast<const uint16_t *>(panel), k, dots);
        for (size_t r = 0; r < kRows; ++r)
          for (size_t v = 0; v < kVecs; ++v)
            acc[r][v] = hn::Load(d, dots + r * kCols + v * kLanes);
        return StoreTile<kRows, kCols>(d, acc, bias, c, ldc, cols);
      }
    }
#endif
    constexpr size_t kChunk = 256;
    HWY_ALIGN float rounded[kRows * kChunk];
    for (size_t r = 0; r < kRows; ++r)
      rows[r] = rounded + r * kChunk;
    const char *lines = reinterpret_cast<const char *>(prefetchAt);
    for (size_t k0 = 0; k0 < k; k0 += kChunk) {
      const size_t n = HWY_MIN(kChunk, k - k0);
      for (size_t r = 0; r < kRows; ++r)
        RoundToBFloat16(d, a + r * lda + k0, rounded + r * kChunk, n);
      if constexpr (kPrefetch == GemmPrefetch::kL1) {
        for (size_t kk = 0; kk < n; ++kk) {
          for (size_t line = 0; line < kCols; line += kPerLine)
            hwy::Prefetch(prefetchAt + (k0 + kk) * kCols + line);
          GemmStep(d, acc, rows, panel + k0 * kCols, kk);
        }
      } else {
        GemmSteps(d, acc, rows, panel + k0 * kCols, 0, n);
      }
      if constexpr (kPrefetch == GemmPrefetch::kL2)
        for (size_t line = k0 * l2Lines / k; line < (k0 + n) * l2Lines / k;
             ++line)
          __builtin_prefetch(lines + line * 64, 0, 2);
    }
  } else {
    for (size_t r = 0; r < kRows; ++r)
      rows[r] = a + r * lda;
    if constexpr (kPrefetch == GemmPrefetch::kL2) {
      const char *lines = reinterpret_cast<const char *>(prefetchAt);
      const size_t every = l2Lines == 0 ? k : HWY_MAX(size_t{1}, k / l2Lines);
      size_t kk = 0;
      for (size_t line = 0; kk < k; ++line) {
        const size_t end = HWY_MIN(k, kk + every);
        GemmSteps(d, acc, rows, panel, kk, end);
        kk = end;
        // Locality 2: prefetcht1 on x86 (Highway's Prefetch is L1 only).
        if (line < l2Lines)
          __builtin_prefetch(lines + line * 64, 0, 2);
      }
    } else if constexpr (kPrefetch == GemmPrefetch::kL1) {
      // The next panel's lines of four k steps, then those steps.
      constexpr size_t kStepLines = 4 * kCols * sizeof(PanelT) / 64;
      size_t kk = 0;
      for (; kk + 4 <= k; kk += 4) {
        const char *next =
            reinterpret_cast<const char *>(prefetchAt + kk * kCols);
        for (size_t line = 0; line < kStepLines; ++line)
          hwy::Prefetch(next + line * 64);
        GemmSteps(d, acc, rows, panel, kk, kk + 4);
      }
      for (; kk < k; ++kk) {
        for (size_t line = 0; line < kCols; line += kPerLine)
          hwy::Prefetch(prefetchAt + kk * kCols + line);
        GemmStep(d, acc, rows, panel, kk);
      }
    } else {
      GemmSteps<(kRows <= kStreamRows)>(d, acc, rows, panel, 0, k);
    }
  }
  StoreTile<kRows, kCols>(d, acc, bias, c, ldc, cols);
}

/// GemmTile for `rows` (1..kRows) rows, chosen at run time.
template <size_t kRows, size_t kCols, bool kBf16Inputs, typename PanelT>
HWY_INLINE void GemmTileUpTo(size_t rows, const float *HWY_RESTRICT a,
                             size_t lda, const PanelT *HWY_RESTRICT panel,
                             size_t k, const float *HWY_RESTRICT bias,
                             float *HWY_RESTRICT c, size_t ldc, size_t cols,
                             const PanelT *HWY_RESTRICT nextPanel,
                             const PanelT *HWY_RESTRICT l2At, size_t l2Lines) {
  if constexpr (kRows > 1) {
    if (rows < kRows)
      return GemmTileUpTo<kRows - 1, kCols, kBf16Inputs, PanelT>(
          rows, a, lda, panel, k, bias, c, ldc, cols, nextPanel, l2At, l2Lines);
  }
  if (nextPanel != nullptr)
    GemmTile<kRows, kCols, GemmPrefetch::kL1, kBf16Inputs, PanelT>(
        a, lda, panel, k, bias, c, ldc, cols, nextPanel, 0);
  else if (l2At != nullptr && l2Lines > 0)
    GemmTile<kRows, kCols, GemmPrefetch::kL2, kBf16Inputs, PanelT>(
        a, lda, panel, k, bias, c, ldc, cols, l2At, l2Lines);
  else
    GemmTile<kRows, kCols, GemmPrefetch::kNone, kBf16Inputs, PanelT>(
        a, lda, panel, k, bias, c, ldc, cols, nullptr, 0);
}

/// GemmTile for 1..kMaxRows rows of kCols columns, chosen at run time (the
/// last rows of C may be fewer). Prefetches `nextPanel` (a whole panel) into L1
/// if given, else `l2Lines` lines from `l2At` into L2 (see GemmTile).
/// kBf16Inputs: A rounded to bfloat16 as it is read (see GemmTile).
/// `T` where a call's argument must not deduce it (a nullptr there).
template <typename T> struct NotDeduced { using type = T; };

/// PanelT: float, or hwy::bfloat16_t / hwy::float16_t for 16-bit panels
/// (deduced from `panel` alone: the prefetch pointers may be nullptr).
template <size_t kMaxRows, size_t kCols, bool kBf16Inputs = false,
          typename PanelT>
HWY_INLINE void
GemmTileRows(size_t rows, const float *HWY_RESTRICT a, size_t lda,
             const PanelT *HWY_RESTRICT panel, size_t k,
             const float *HWY_RESTRICT bias, float *HWY_RESTRICT c, size_t ldc,
             size_t cols,
             typename NotDeduced<const PanelT *>::type nextPanel = nullptr,
             typename NotDeduced<const PanelT *>::type l2At = nullptr,
             size_t l2Lines = 0) {
  static_assert(kMaxRows >= 1 && kMaxRows <= 16, "1 to 16 rows");
  GemmTileUpTo<kMaxRows, kCols, kBf16Inputs, PanelT>(
      rows, a, lda, panel, k, bias, c, ldc, cols, nextPanel, l2At, l2Lines);
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_GEMM_INL_H_
