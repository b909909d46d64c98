//===- GemmKernelsTest.cpp - the GEMM tile kernels
//--------------------------===//
//
// Against scalar references: see KernelTestSupport.h.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"
#include "tfm/runtime/HalfFloat.h"
#include "tfm/runtime/Model.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace {
using namespace tfm::kernel_test;

//===----------------------------------------------------------------------===//
// GemmTileRows
//===----------------------------------------------------------------------===//

struct GemmShape {
  size_t k;
  size_t cols;
};

void PrintTo(const GemmShape &shape, std::ostream *os) {
  *os << "k " << shape.k << " cols " << shape.cols;
}

class GemmTileRowsTest : public KernelTest,
                         public ::testing::WithParamInterface<GemmShape> {};

/// One panel width: C from GemmTileRows<16, kCols> for every row count and
/// prefetch, against the naive reference.
template <size_t kCols> void checkGemmTileRows(size_t depth, size_t cols) {
  SCOPED_TRACE("target " + targetName() + " panel width " +
               std::to_string(kCols));
  std::mt19937 rng(1000 + depth * 37 + cols + kCols);

  // A's rows have padding (NaN: never read), the panel's columns past cols
  // too (NaN: their sums must never reach C).
  const size_t lda = depth + 3;
  // Every tile #tfm_codegen.gemm_tiling allows (1 to 16 rows), through the
  // largest's run-time choice of rows.
  constexpr size_t maxRows = 16;
  std::vector<float> a(maxRows * lda, kNaN);
  for (size_t r = 0; r < maxRows; ++r)
    fillUniform(rng, a.data() + r * lda, depth);
  // Two panels: the second is what a prefetching tile is told comes next
  // (NaN: its values must never reach C).
  auto panel = hwy::AllocateAligned<float>(2 * depth * kCols);
  ASSERT_TRUE(panel);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(panel.get()) % 64, 0u);
  for (size_t kk = 0; kk < depth; ++kk)
    for (size_t j = 0; j < kCols; ++j) {
      panel[kk * kCols + j] =
          j < cols ? std::uniform_real_distribution<float>(-1, 1)(rng) : kNaN;
      panel[(depth + kk) * kCols + j] = kNaN;
    }
  const float *nextPanel = panel.get() + depth * kCols;
  // Offset by one float: the kernel makes no alignment assumption on bias
  // or C.
  std::vector<float> biasStore(cols + 1, kNaN);
  fillUniform(rng, biasStore.data() + 1, cols);
  const float *biasValues = biasStore.data() + 1;

  const size_t ldc = cols + 5;
  for (bool withBias : {false, true}) {
    // No prefetch; the next panel into L1; all of its lines into L2 (more
    // lines than k steps: one per step); three of them into L2.
    const size_t panelLines = depth * kCols * sizeof(float) / 64;
    for (int prefetch : {0, 1, 2, 3})
      for (size_t rows = 1; rows <= maxRows; ++rows) {
        const char *how[] = {"", ", the next panel into L1",
                             ", the next panel's lines into L2",
                             ", 3 of its lines into L2"};
        SCOPED_TRACE("rows " + std::to_string(rows) + " k " +
                     std::to_string(depth) + " cols " + std::to_string(cols) +
                     (withBias ? " bias" : " no bias") + how[prefetch]);
        // Sentinel before C, in the ldc - cols columns past each row and in
        // the row after the tile.
        const size_t cSize = 1 + (rows + 1) * ldc;
        std::vector<float> cStore(cSize, kSentinel);
        float *c = cStore.data() + 1;
        const float *bias = withBias ? biasValues : nullptr;
        k::GemmTileRows<maxRows, kCols>(rows, a.data(), lda, panel.get(), depth,
                                        bias, c, ldc, cols,
                                        prefetch == 1 ? nextPanel : nullptr,
                                        prefetch >= 2 ? nextPanel : nullptr,
                                        prefetch == 2   ? panelLines
                                        : prefetch == 3 ? 3
                                                        : 0);

        EXPECT_TRUE(sameBits(cStore[0], kSentinel)) << "written before C";
        for (size_t r = 0; r <= rows; ++r)
          for (size_t j = 0; j < ldc; ++j) {
            const float got = c[r * ldc + j];
            if (r == rows || j >= cols) {
              EXPECT_TRUE(sameBits(got, kSentinel))
                  << "C[" << r << "][" << j << "] written: " << got;
              continue;
            }
            double ref = bias ? bias[j] : 0.0;
            double scale = bias ? std::fabs(bias[j]) : 0.0;
            for (size_t kk = 0; kk < depth; ++kk) {
              const double term =
                  double(a[r * lda + kk]) * panel[kk * kCols + j];
              ref += term;
              scale = std::max(scale, std::fabs(term));
            }
            // Float FMA rounding grows about as sqrt(k) times the largest
            // term; a wrong element or index is off by O(1) terms.
            const double tol = 1e-5 * std::sqrt(double(depth + 1)) * scale;
            EXPECT_NEAR(got, ref, tol) << "C[" << r << "][" << j << "]";
          }
      }
  }
}

// Every panel width #tfm_codegen.gemm_tiling allows on this target: one to
// four vectors (the pass takes two), each with the columns that fit.
TEST_P(GemmTileRowsTest, MatchesNaiveReference) {
  const size_t depth = GetParam().k, cols = GetParam().cols;
  constexpr size_t kLanes = hn::MaxLanes(hn::ScalableTag<float>());
  bool ran = false;
  auto check = [&](auto width) {
    constexpr size_t kCols = decltype(width)::value;
    if (cols > kCols)
      return;
    checkGemmTileRows<kCols>(depth, cols);
    ran = true;
  };
  check(std::integral_constant<size_t, kLanes>());
  check(std::integral_constant<size_t, 2 * kLanes>());
  check(std::integral_constant<size_t, 3 * kLanes>());
  check(std::integral_constant<size_t, 4 * kLanes>());
  EXPECT_TRUE(ran) << cols << " columns fit no panel width of this target";
}

/// x rounded to the nearest bfloat16, ties to even: of its two bf16
/// neighbours (x's bits truncated, and one bf16 step further from zero),
/// the nearer by exact distance (a second form of the kernel's bit
/// arithmetic).
float nearestBFloat16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint32_t down = bits & 0xffff0000u, up = down + 0x10000u;
  float lo, hi;
  std::memcpy(&lo, &down, 4);
  std::memcpy(&hi, &up, 4);
  double dl = std::fabs(double(x) - lo), dh = std::fabs(double(hi) - x);
  uint32_t pick = dl < dh   ? down
                  : dh < dl ? up
                            : ((down >> 16) & 1 ? up : down);
  float out;
  std::memcpy(&out, &pick, 4);
  return out;
}

/// With bf16 inputs a tile reads A rounded to bf16: bit for bit the plain
/// tile on A rounded beforehand (the panel is the caller's to round), for
/// every row count and prefetch, k across the kernel's chunks of 256.
template <size_t kCols> void checkBf16Inputs(size_t depth, size_t cols) {
  SCOPED_TRACE("target " + targetName() + " panel width " +
               std::to_string(kCols) + " k " + std::to_string(depth) +
               " cols " + std::to_string(cols));
  std::mt19937 rng(2000 + depth * 37 + cols + kCols);
  constexpr size_t maxRows = 16;
  const size_t lda = depth + 3;
  std::vector<float> a(maxRows * lda, kNaN), rounded(maxRows * lda, kNaN);
  for (size_t r = 0; r < maxRows; ++r) {
    fillUniform(rng, a.data() + r * lda, depth);
    for (size_t kk = 0; kk < depth; ++kk)
      rounded[r * lda + kk] = nearestBFloat16(a[r * lda + kk]);
  }
  auto panel = hwy::AllocateAligned<float>(2 * depth * kCols);
  ASSERT_TRUE(panel);
  for (size_t i = 0; i < 2 * depth * kCols; ++i)
    panel[i] =
        nearestBFloat16(std::uniform_real_distribution<float>(-1, 1)(rng));
  const float *next = panel.get() + depth * kCols;
  const size_t lines = depth * kCols * sizeof(float) / 64;
  for (int prefetch : {0, 1, 2})
    for (size_t rows = 1; rows <= maxRows; ++rows) {
      SCOPED_TRACE("rows " + std::to_string(rows) + " prefetch " +
                   std::to_string(prefetch));
      std::vector<float> got(rows * cols, kSentinel), want(rows * cols, 0.0f);
      k::GemmTileRows<maxRows, kCols, true>(
          rows, a.data(), lda, panel.get(), depth, nullptr, got.data(), cols,
          cols, prefetch == 1 ? next : nullptr, prefetch == 2 ? next : nullptr,
          prefetch == 2 ? lines : 0);
      k::GemmTileRows<maxRows, kCols>(rows, rounded.data(), lda, panel.get(),
                                      depth, nullptr, want.data(), cols, cols);
      for (size_t i = 0; i < rows * cols; ++i)
        ASSERT_TRUE(sameBits(got[i], want[i]))
            << "C[" << i / cols << "][" << i % cols << "] " << got[i]
            << " != " << want[i];
      // And the rounding did something: A's values are not bf16 values.
      if (rows == maxRows && depth >= 64) {
        std::vector<float> plain(rows * cols, 0.0f);
        k::GemmTileRows<maxRows, kCols>(rows, a.data(), lda, panel.get(), depth,
                                        nullptr, plain.data(), cols, cols);
        EXPECT_NE(plain, want);
      }
    }
}

/// With bf16 inputs and a bf16 panel (as --compute=bf16 packs its
/// weights), a tile's products: AVX512-BF16 dot products where it takes
/// them (GemmTakesBf16Dot: two k's an instruction, in another order), else
/// f32 FMAs over the rounded rows; and, on any CPU that has the dot
/// products (512-bit targets, whole 32-column panels), their loop itself
/// (Bf16DotTile), whichever the tiles take. Each C element is the sum of
/// the exact products of the rounded values (a float64 reference) within
/// f32 rounding of a sum of `depth` terms: (depth + 1) x 2^-24 x the sum of
/// their magnitudes. Says which paths it checked.
template <size_t kCols> void checkBf16Panel(size_t depth, size_t cols) {
  const bool dot = k::GemmTakesBf16Dot<kCols>();
  bool dotLoop = false;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  dotLoop = kCols % 32 == 0 && k::CpuHasBf16Dot();
#endif
  SCOPED_TRACE(
      "target " + targetName() + " panel width " + std::to_string(kCols) +
      " k " + std::to_string(depth) + " cols " + std::to_string(cols) +
      (dot ? " (tiles on AVX512-BF16 dot products)" : " (tiles on f32 FMAs)"));
  static bool reported[2][2];
  if (!reported[dot][dotLoop]) {
    reported[dot][dotLoop] = true;
    std::printf("[   hwy    ] bf16 inputs, panel width %zu: tiles on %s%s\n",
                kCols,
                dot ? "AVX512-BF16 dot products (VDPBF16PS)"
                    : "f32 FMAs over the rounded rows",
                dotLoop ? "; the dot-product loop checked too" : "");
  }
  std::mt19937 rng(3000 + depth * 41 + cols + kCols);
  constexpr size_t maxRows = 16;
  const size_t lda = depth + 5;
  std::vector<float> a(maxRows * lda, kNaN);
  for (size_t r = 0; r < maxRows; ++r)
    fillUniform(rng, a.data() + r * lda, depth);
  // The panel, then a row of NaNs: an odd k's last pair must not read it.
  auto panel = hwy::AllocateAligned<hwy::bfloat16_t>((depth + 1) * kCols);
  ASSERT_TRUE(panel);
  std::vector<float> values(depth * kCols);
  for (size_t i = 0; i < (depth + 1) * kCols; ++i) {
    float v =
        i < depth * kCols
            ? nearestBFloat16(std::uniform_real_distribution<float>(-1, 1)(rng))
            : kNaN;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    uint16_t half = uint16_t(bits >> 16);
    std::memcpy(&panel[i], &half, 2);
    if (i < depth * kCols)
      values[i] = v;
  }
  // got: `rows` rows of `cols` columns, ldc apart.
  auto expectSums = [&](const float *got, size_t rows, size_t ldc) {
    for (size_t r = 0; r < rows; ++r)
      for (size_t j = 0; j < cols; ++j) {
        double want = 0, magnitude = 0;
        for (size_t kk = 0; kk < depth; ++kk) {
          double term = double(nearestBFloat16(a[r * lda + kk])) *
                        double(values[kk * kCols + j]);
          want += term;
          magnitude += std::fabs(term);
        }
        double bound = double(depth + 1) * std::ldexp(1.0, -24) * magnitude;
        ASSERT_LE(std::fabs(double(got[r * ldc + j]) - want), bound)
            << "C[" << r << "][" << j << "] " << got[r * ldc + j]
            << " != " << want;
      }
  };
  for (size_t rows = 1; rows <= maxRows; ++rows) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    std::vector<float> got(rows * cols, kSentinel);
    k::GemmTileRows<maxRows, kCols, true>(rows, a.data(), lda, panel.get(),
                                          depth, nullptr, got.data(), cols,
                                          cols);
    expectSums(got.data(), rows, cols);
  }
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (kCols % 32 == 0) {
    if (dotLoop) {
      SCOPED_TRACE("the dot-product loop");
      auto out = hwy::AllocateAligned<float>(maxRows * kCols);
      k::Bf16DotTile<maxRows, kCols>(
          a.data(), lda, reinterpret_cast<const uint16_t *>(panel.get()), depth,
          out.get());
      expectSums(out.get(), maxRows, kCols);
      k::Bf16DotTile<3, kCols>(a.data(), lda,
                               reinterpret_cast<const uint16_t *>(panel.get()),
                               depth, out.get());
      expectSums(out.get(), 3, kCols);
    }
  }
#endif
}

/// C from the narrow panel (16-bit or int8 values) at `narrow`, followed
/// by the panel a prefetching tile is told comes next at `next` (`lines`
/// 64-byte lines of it for an L2 prefetch), equals bit for bit C from the
/// f32 panel `wide` of the values it holds, for every row count and
/// prefetch.
template <size_t kMaxRows, size_t kCols, typename PanelT>
void expectSameAsWidePanel(const std::vector<float> &a, size_t lda,
                           const PanelT *narrow, const PanelT *next,
                           size_t lines, const float *wide, size_t depth,
                           size_t cols) {
  for (int prefetch : {0, 1, 2})
    for (size_t rows = 1; rows <= kMaxRows; ++rows) {
      SCOPED_TRACE("rows " + std::to_string(rows) + " prefetch " +
                   std::to_string(prefetch));
      std::vector<float> got(rows * cols, kSentinel), want(rows * cols, 0.0f);
      k::GemmTileRows<kMaxRows, kCols>(
          rows, a.data(), lda, narrow, depth, nullptr, got.data(), cols, cols,
          prefetch == 1 ? next : nullptr, prefetch == 2 ? next : nullptr,
          prefetch == 2 ? lines : 0);
      k::GemmTileRows<kMaxRows, kCols>(rows, a.data(), lda, wide, depth,
                                       nullptr, want.data(), cols, cols);
      for (size_t i = 0; i < rows * cols; ++i)
        ASSERT_TRUE(sameBits(got[i], want[i]))
            << "C[" << i / cols << "][" << i % cols << "] " << got[i]
            << " != " << want[i];
      if (prefetch == 2) {
        // As generated code calls it: a literal nullptr for the L1
        // prefetch beside an L2 one.
        std::vector<float> again(rows * cols, kSentinel);
        k::GemmTileRows<kMaxRows, kCols>(rows, a.data(), lda, narrow, depth,
                                         nullptr, again.data(), cols, cols,
                                         nullptr, next, lines);
        EXPECT_EQ(again, got);
      }
    }
}

/// A 16-bit panel (bf16 or f16 values) gives, bit for bit, what the f32
/// panel of the same values gives, for every row count and prefetch.
template <size_t kCols, typename PanelT>
void check16BitPanel(size_t depth, size_t cols, const char *what) {
  SCOPED_TRACE(std::string(what) + " panel, target " + targetName() +
               " width " + std::to_string(kCols) + " k " +
               std::to_string(depth) + " cols " + std::to_string(cols));
  std::mt19937 rng(3000 + depth * 37 + cols + kCols);
  constexpr size_t maxRows = 16;
  const size_t lda = depth + 3;
  std::vector<float> a(maxRows * lda, kNaN);
  for (size_t r = 0; r < maxRows; ++r)
    fillUniform(rng, a.data() + r * lda, depth);
  const size_t n = 2 * depth * kCols;
  auto narrow = hwy::AllocateAligned<PanelT>(n);
  auto wide = hwy::AllocateAligned<float>(n);
  ASSERT_TRUE(narrow && wide);
  constexpr bool kBf16 = std::is_same_v<PanelT, hwy::bfloat16_t>;
  for (size_t i = 0; i < n; ++i) {
    // The format's own 16 bits, of magnitudes around 1 (binary exponents
    // -14 to 1), subnormal ones and zeros; their float values widened
    // independently of the kernel.
    uint32_t sign = rng() & 1, mantissa = rng(), exponent = rng() % 16;
    uint16_t bits;
    if (kBf16)
      bits = uint16_t(sign << 15 | (exponent + 113) << 7 | (mantissa & 0x7f));
    else
      bits = uint16_t(sign << 15 | (exponent + 1) << 10 | (mantissa & 0x3ff));
    if (i % 7 == 3) // subnormal (f16), or tiny (bf16)
      bits = kBf16 ? uint16_t(bits & 0x807f) : uint16_t(bits & 0x83ff);
    if (i % 11 == 5)
      bits = 0;
    std::memcpy(&narrow[i], &bits, 2);
    if (kBf16) {
      uint32_t wideBits = uint32_t(bits) << 16;
      std::memcpy(&wide[i], &wideBits, 4);
    } else {
      wide[i] = tfm::rt::halfToFloat(bits);
    }
  }
  const size_t lines = depth * kCols * sizeof(PanelT) / 64;
  expectSameAsWidePanel<maxRows, kCols>(a, lda, narrow.get(),
                                        narrow.get() + depth * kCols, lines,
                                        wide.get(), depth, cols);
}

TEST_P(GemmTileRowsTest, SixteenBitPanelsWidenExactly) {
  const size_t depth = GetParam().k, cols = GetParam().cols;
  constexpr size_t kLanes = hn::MaxLanes(hn::ScalableTag<float>());
  if (cols <= 2 * kLanes) {
    check16BitPanel<2 * kLanes, hwy::bfloat16_t>(depth, cols, "bf16");
    check16BitPanel<2 * kLanes, hwy::float16_t>(depth, cols, "f16");
  } else {
    check16BitPanel<4 * kLanes, hwy::bfloat16_t>(depth, cols, "bf16");
    check16BitPanel<4 * kLanes, hwy::float16_t>(depth, cols, "f16");
  }
}

/// An int8 panel (values, then a row of scales per block of kInt8Block
/// k's) gives, bit for bit, what the f32 panel of its values (each q * s,
/// computed here) gives, for every row count and prefetch.
template <size_t kCols> void checkInt8Panel(size_t depth, size_t cols) {
  SCOPED_TRACE("int8 panel, target " + targetName() + " width " +
               std::to_string(kCols) + " k " + std::to_string(depth) +
               " cols " + std::to_string(cols));
  std::mt19937 rng(4000 + depth * 37 + cols + kCols);
  constexpr size_t maxRows = 16;
  constexpr size_t block = size_t(tfm::rt::kInt8Block);
  const size_t lda = depth + 3;
  std::vector<float> a(maxRows * lda, kNaN);
  for (size_t r = 0; r < maxRows; ++r)
    fillUniform(rng, a.data() + r * lda, depth);
  const size_t blocks = (depth + block - 1) / block;
  const size_t panelBytes = depth * kCols + blocks * kCols * sizeof(float);
  // Two panels: the second is the one a prefetching tile is told follows.
  auto narrow = hwy::AllocateAligned<int8_t>(2 * panelBytes);
  auto wide = hwy::AllocateAligned<float>(depth * kCols);
  ASSERT_TRUE(narrow && wide);
  std::vector<float> scales(blocks * kCols);
  for (size_t i = 0; i < scales.size(); ++i) {
    // Scales of magnitudes around 1/127 and far from it, and zeros (a
    // block of zeros, or a padding column).
    scales[i] = std::ldexp(std::uniform_real_distribution<float>(1, 2)(rng),
                           int(rng() % 40) - 27);
    if (i % 9 == 4 || i % kCols >= cols)
      scales[i] = 0.0f;
  }
  for (size_t copy = 0; copy < 2; ++copy) {
    int8_t *values = narrow.get() + copy * panelBytes;
    for (size_t kk = 0; kk < depth; ++kk)
      for (size_t j = 0; j < kCols; ++j) {
        int q = int(rng() % 255) - 127; // -127 .. 127
        if (kk % 13 == 2)
          q = kk % 2 ? 127 : -127;
        values[kk * kCols + j] = int8_t(q);
        if (copy == 0)
          wide[kk * kCols + j] = float(q) * scales[kk / block * kCols + j];
      }
    std::memcpy(values + depth * kCols, scales.data(),
                scales.size() * sizeof(float));
  }
  expectSameAsWidePanel<maxRows, kCols>(
      a, lda, narrow.get(), narrow.get() + panelBytes, panelBytes / 64,
      wide.get(), depth, cols);
}

TEST_P(GemmTileRowsTest, Int8PanelsScaleExactly) {
  const size_t depth = GetParam().k, cols = GetParam().cols;
  constexpr size_t kLanes = hn::MaxLanes(hn::ScalableTag<float>());
  if (cols <= 2 * kLanes)
    checkInt8Panel<2 * kLanes>(depth, cols);
  else
    checkInt8Panel<4 * kLanes>(depth, cols);
}

TEST_P(GemmTileRowsTest, Bf16InputsRoundTheRowsTheyRead) {
  const size_t depth = GetParam().k, cols = GetParam().cols;
  constexpr size_t kLanes = hn::MaxLanes(hn::ScalableTag<float>());
  if (cols <= 2 * kLanes)
    checkBf16Inputs<2 * kLanes>(depth, cols);
  else
    checkBf16Inputs<4 * kLanes>(depth, cols);
}

TEST_P(GemmTileRowsTest, Bf16InputsOnBf16Panels) {
  // Every panel width a tile may have (1 to 4 vectors), those of no whole
  // 32-column pieces on the f32 FMAs.
  const size_t depth = GetParam().k, cols = GetParam().cols;
  constexpr size_t kLanes = hn::MaxLanes(hn::ScalableTag<float>());
  if (cols <= kLanes)
    checkBf16Panel<kLanes>(depth, cols);
  if (cols <= 2 * kLanes)
    checkBf16Panel<2 * kLanes>(depth, cols);
  if (cols <= 3 * kLanes)
    checkBf16Panel<3 * kLanes>(depth, cols);
  checkBf16Panel<4 * kLanes>(depth, cols);
}

std::vector<GemmShape> gemmShapes() {
  std::vector<GemmShape> shapes;
  // Up to the widest panel this target allows: four vectors.
  const size_t widest = 4 * hn::MaxLanes(hn::ScalableTag<float>());
  for (size_t depth : {1, 3, 64, 257, 600})
    for (size_t cols : {1, 3, 5, 8, 9, 16, 17, 31, 32, 33, 63, 64})
      if (cols <= widest)
        shapes.push_back({depth, cols});
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmTileRowsTest,
                         ::testing::ValuesIn(gemmShapes()),
                         [](const ::testing::TestParamInfo<GemmShape> &info) {
                           return "K" + std::to_string(info.param.k) + "_Cols" +
                                  std::to_string(info.param.cols);
                         });

} // namespace
