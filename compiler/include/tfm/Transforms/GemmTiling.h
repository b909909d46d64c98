//===- GemmTiling.h - the order a GEMM takes its weight panels -*- C++ -*-===//
//
// The choice tfm-select-gemm-tiling records on each tfm.linear and the
// Highway backend follows; which packed segments a tfm.linear multiplies by
// (both backends pack segments the same way, each in its panel width).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TRANSFORMS_GEMMTILING_H
#define TFM_TRANSFORMS_GEMMTILING_H

#include "tfm/Codegen/Codegen.h"
#include "tfm/IR/TfmOps.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace mlir::tfm {

/// The data caches of the CPU the generated code is for, in bytes. The
/// defaults are those of the machine the benchmarks run on (AMD Zen 5:
/// 48 KiB L1d, 1 MiB L2).
struct CacheSizes {
  int64_t l1Bytes = 48 * 1024;
  int64_t l2Bytes = 1024 * 1024;
};

/// This machine's L1d and L2 sizes, from the C library (CPUID on x86);
/// where it does not know one, the default above.
CacheSizes hostCacheSizes();

/// Output columns per packed weight panel of the LLVM backend (its
/// vectorised GEMM's tile width on every target).
constexpr int64_t kLLVMPanelColumns = 32;

/// A GEMM's register tile on one vector width: `rows` rows of C by `cols`
/// columns, the width of the packed weight panel it reads.
struct RegisterTile {
  int64_t rows = 1;
  int64_t cols = 32;
};

/// The register tile where the code runs with 512-, 256- or 128-bit
/// vectors.
struct RegisterTiles {
  RegisterTile v512{8, 32};
  RegisterTile v256{6, 16};
  RegisterTile v128{6, 8};
};

/// The register tiles of a GEMM of at most `maxRows` rows. On each vector
/// width, two vectors of columns (the panel width: 32 floats on 512-bit
/// vectors, 16 on 256, 8 on 128) and as many rows as keep the
/// accumulators, the two panel vectors and the broadcast value within the
/// register file (32 vectors with AVX-512, 16 below), at most 8 and at most
/// `maxRows` (at least 1).
RegisterTiles chooseRegisterTiles(int64_t maxRows);

/// What #tfm_codegen.gemm_tiling holds, and why.
struct GemmTiling {
  RegisterTiles tiles;
  /// Weight columns per L2 block: 0 is panel by panel.
  int64_t l2Columns = 0;
  /// Panel by panel, what the tiles prefetch of the next panel where the
  /// code runs with 512-, 256- and 128-bit vectors (each target's panel
  /// its own width): all of it into L1 from the last row block, or a
  /// share of it into L2 from each.
  std::array<codegen::GemmPrefetch, 3> prefetch = {codegen::GemmPrefetch::None,
                                                   codegen::GemmPrefetch::None,
                                                   codegen::GemmPrefetch::None};
  /// The reasons, for a remark.
  std::string why;
};

/// The tiling of a GEMM of at most `maxRows` rows, depth `k`, over a weight
/// of `columns` output columns: chooseRegisterTiles' tiles for `maxRows`;
/// the order of the panels for `typicalRows` (a grouped GEMM's rows vary
/// at run time: those a group has when the routing is balanced), else for
/// `maxRows`. L2 blocks where those rows (rows x k floats) do not fit in
/// half of L2, as many columns (a whole number of every target's panels)
/// as fill that half; else panel by panel, each target prefetching its
/// next panel: into L1 where one and a half of its panels fit there with
/// 512-bit vectors, one panel below, else into L2
/// where two of its panels and its register tile's rows fit there. Any
/// sizes (negative ones count as 0) give a valid tiling.
GemmTiling chooseGemmTiling(int64_t maxRows, int64_t k, int64_t columns,
                            const CacheSizes &cache,
                            std::optional<int64_t> typicalRows = std::nullopt);

/// The packed panels a tfm.linear multiplies by. A weight is packed in
/// segments of `segmentRows` output rows, each in panels of the target's
/// panel width (columns), zero-padded; a linear reads segments
/// [firstSegment, firstSegment + usedSegments). A weight of its own is one
/// segment; rows of a stacked weight (a tfm.slice_rows of it, such as the
/// query or key/value rows of in_proj) are segments of the largest size
/// that divides the offset, the rows and the whole, so every slice of a
/// stacked weight reads one packed copy of it.
struct GemmWeight {
  /// The weight that is packed (the tfm.slice_rows' input, or the
  /// linear's weight).
  Value packed;
  int64_t segments = 1;
  int64_t segmentRows = 0;
  int64_t firstSegment = 0;
  int64_t usedSegments = 1;

  /// The output columns the linear computes.
  int64_t columns() const { return usedSegments * segmentRows; }
};
GemmWeight gemmWeight(LinearOp op);

} // namespace mlir::tfm

#endif // TFM_TRANSFORMS_GEMMTILING_H
