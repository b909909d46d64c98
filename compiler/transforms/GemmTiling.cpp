//===- GemmTiling.cpp - how a GEMM takes its packed weight's panels -------===//

#include "tfm/Transforms/GemmTiling.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unistd.h>

namespace mlir::tfm {

CacheSizes hostCacheSizes() {
  CacheSizes sizes;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
  if (long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE); l1 > 0)
    sizes.l1Bytes = l1;
  if (long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 > 0)
    sizes.l2Bytes = l2;
#endif
  return sizes;
}

namespace {
std::string kib(uint64_t bytes) {
  return llvm::formatv("{0} KiB", bytes / 1024 + (bytes % 1024 != 0)).str();
}
} // namespace

RegisterTiles chooseRegisterTiles(int64_t maxRows) {
  auto tileFor = [&](int64_t vectorBits) {
    // x86: 32 registers with AVX-512, 16 below it.
    const int64_t registers = vectorBits >= 512 ? 32 : 16;
    const int64_t lanes = vectorBits / 32, vectors = 2;
    // Two panel vectors and the broadcast value beside the accumulators:
    // 6 rows on 16 registers (the 6 x 16 tile of BLAS kernels for AVX2;
    // measured on Zen 3, K = 768: 3 x 32 ran at 45% of the FMA peak, 6 x 16
    // over panels of 32 read half by half at 70%, over panels of 16 at 80%).
    int64_t rows = (registers - vectors - 1) / vectors;
    // AVX-512 would take 14: clang spills past 8 x 2 (12 rows measured 2.4x
    // slower). 8 rather than 6: row counts are mostly multiples of 8, which
    // leave no short, latency-bound last tile (measured: BERT layer seq 128
    // ~5% faster, d 256 / seq 64 ~8%).
    rows = std::min<int64_t>(rows, 8);
    return RegisterTile{std::clamp<int64_t>(maxRows, 1, rows), vectors * lanes};
  };
  return RegisterTiles{tileFor(512), tileFor(256), tileFor(128)};
}

GemmTiling chooseGemmTiling(int64_t maxRows, int64_t k, int64_t columns,
                            const CacheSizes &cache,
                            std::optional<int64_t> typicalRows) {
  GemmTiling tiling;
  tiling.tiles = chooseRegisterTiles(maxRows);
  const int64_t orderRows = typicalRows.value_or(maxRows);
  // Sizes in bytes, saturating: hand-written IR may hold any dimensions.
  auto bytes = [](int64_t a, int64_t b) {
    return llvm::SaturatingMultiply<uint64_t>(
        llvm::SaturatingMultiply<uint64_t>(std::max<int64_t>(a, 0),
                                           std::max<int64_t>(b, 0)),
        sizeof(float));
  };
  // L2 blocks are whole panels on every target; the prefetches are sized
  // for the widest panel (a narrower one fits wherever it does).
  const int64_t widest = std::max(
      {tiling.tiles.v512.cols, tiling.tiles.v256.cols, tiling.tiles.v128.cols});
  const int64_t blockUnit =
      std::lcm(std::lcm(tiling.tiles.v512.cols, tiling.tiles.v256.cols),
               tiling.tiles.v128.cols);
  const uint64_t panelBytes = bytes(widest, k);
  const uint64_t rowsBytes = bytes(orderRows, k);
  const uint64_t l2 = std::max<int64_t>(cache.l2Bytes, 0), halfL2 = l2 / 2;
  const uint64_t l1 = std::max<int64_t>(cache.l1Bytes, 0);
  columns = std::max<int64_t>(columns, 1);
  const int64_t panels = (columns + widest - 1) / widest;
  // The rows' description in the reasons: a grouped GEMM's are those a
  // group typically has.
  const std::string rowsText =
      typicalRows ? "the rows a group typically has (" + kib(rowsBytes) + ")"
                  : "the rows (" + kib(rowsBytes) + ")";
  // Where the rows fit in half of L2, panel by panel reads them from L2 for
  // every panel anyway (measured: d 256 / seq 64 ~4% slower in blocks).
  // Where they do not, each panel would read them from memory again: in
  // blocks, once per block (measured: GPT-2 block seq 512 ~1.5% faster).
  if (rowsBytes <= halfL2) {
    tiling.why = "panel by panel: " + rowsText + " fit in half of the " +
                 kib(cache.l2Bytes) + " L2";
  } else {
    const uint64_t unitBytes = bytes(blockUnit, k);
    const uint64_t fit =
        unitBytes == 0 ? uint64_t(INT64_MAX) : halfL2 / unitBytes;
    const uint64_t units = uint64_t((columns + blockUnit - 1) / blockUnit);
    const int64_t blockColumns =
        int64_t(std::min<uint64_t>(fit, units)) * blockUnit;
    if (blockColumns < 2 * widest) {
      tiling.why = "panel by panel: " + rowsText +
                   " do not fit in half of the " + kib(cache.l2Bytes) +
                   " L2, nor do two panels (" + kib(panelBytes) + " each)";
    } else {
      tiling.l2Columns = blockColumns;
      tiling.why = llvm::formatv("L2 blocks of {0} weight columns ({1}): {2} "
                                 "do not fit in half of the {3} L2",
                                 blockColumns, kib(bytes(blockColumns, k)),
                                 rowsText, kib(cache.l2Bytes))
                       .str();
    }
  }
  // Short panels are where the hardware prefetcher has no time to ramp up:
  // the last row block takes the next one into L1. Each target decides for
  // its own panel width, measured on Sapphire Rapids (48 KiB L1): with
  // 512-bit vectors, where one and a half panels fit in L1 (4 layers of
  // d 256, 32 KiB panels, ~5% faster; at 48 KiB, d 384 / 6 layers, 0-5%
  // slower; at 96 KiB, GPT-2 s512 and BERT-base ~2% slower); below, whose
  // tiles read their panel at half the bytes a step, where one panel fits
  // (AVX2, BERT-base layer seq 128, 48 KiB panels at K = 768: 14% faster,
  // 90% of the 256-bit FMA peak). Longer panels would evict the tile's
  // own data from L1; instead each row block takes its share of the next
  // panel's lines into L2, so the next panel's first tile reads L2, not
  // memory (measured: K = 768 and 3072 GEMMs at 128 rows 5-10% faster).
  // In L2 blocks the next panel of a task is a block of tasks away:
  // nothing is prefetched.
  if (tiling.l2Columns > 0) {
    tiling.why += "; none prefetched (in blocks, a task's next panel is a "
                  "block of tasks away)";
  } else if (panels == 1) {
    tiling.why += "; no panel follows to prefetch";
  } else {
    const RegisterTile targets[] = {tiling.tiles.v512, tiling.tiles.v256,
                                    tiling.tiles.v128};
    const char *names[] = {"512-bit", "256-bit", "128-bit"};
    for (auto [i, tile] : llvm::enumerate(targets)) {
      const uint64_t panel = bytes(tile.cols, k);
      const uint64_t tileRows = bytes(tile.rows, k);
      std::string reason;
      const bool wide = i == 0;
      if (wide ? panel <= l1 / 3 * 2 : panel <= l1) {
        tiling.prefetch[i] = codegen::GemmPrefetch::L1;
        reason = std::string("the next panel into L1 (") +
                 (wide ? "1.5 panels of " : "a panel of ") + kib(panel) +
                 " fit" + (wide ? "" : "s") + " in " + kib(cache.l1Bytes) + ")";
      } else if (panel <= (l2 - std::min(tileRows, l2)) / 2) {
        tiling.prefetch[i] = codegen::GemmPrefetch::L2;
        reason = "the next panel into L2 by every row block, a share each "
                 "(two panels of " +
                 kib(panel) + " and " + std::to_string(tile.rows) +
                 " rows fit in " + kib(cache.l2Bytes) + ")";
      } else {
        reason = "none (two panels of " + kib(panel) + " and " +
                 std::to_string(tile.rows) + " rows do not fit in " +
                 kib(cache.l2Bytes) + ")";
      }
      tiling.why += std::string(i == 0 ? "; prefetched on " : ", on ") +
                    names[i] + ": " + reason;
    }
  }
  auto tileText = [](RegisterTile tile) {
    return std::to_string(tile.rows) + " x " + std::to_string(tile.cols);
  };
  tiling.why = "register tiles of " + tileText(tiling.tiles.v512) +
               " on 512-bit vectors, " + tileText(tiling.tiles.v256) +
               " on 256-bit, " + tileText(tiling.tiles.v128) +
               " on 128-bit (rows x columns, the packed panel's width); " +
               tiling.why;
  return tiling;
}

GemmWeight gemmWeight(LinearOp op) {
  GemmWeight w;
  w.packed = op.getWeight();
  int64_t rows = op.getWeight().getType().getDimSize(0);
  w.segmentRows = rows;
  auto slice = op.getWeight().getDefiningOp<SliceRowsOp>();
  if (!slice)
    return w;
  int64_t total = slice.getInput().getType().getDimSize(0);
  int64_t offset = slice.getOffset();
  // One segment size for every slice of the stacked weight (a mamba
  // x_proj's dt, B and C rows differ in size): each GEMM that reads part
  // of it reads the same packed panels.
  int64_t segment = total;
  for (Operation *user : slice.getInput().getUsers())
    if (auto other = dyn_cast<SliceRowsOp>(user))
      segment = std::gcd(std::gcd(segment, other.getOffset()),
                         other.getType().getDimSize(0));
  if (segment <= 0)
    return w; // unverified IR: read the slice as a weight of its own
  w.packed = slice.getInput();
  w.segmentRows = segment;
  w.segments = total / segment;
  w.firstSegment = offset / segment;
  w.usedSegments = rows / segment;
  return w;
}

} // namespace mlir::tfm
