//===- AttentionTiling.cpp - query rows per task, keys per block ----------===//

#include "tfm/Transforms/AttentionTiling.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace mlir::tfm {

AttentionTiling chooseAttentionTiling(int64_t maxQueryRows, int64_t maxKeys) {
  AttentionTiling tiling;
  // Each key vector a task loads is scored against all its rows, and each
  // value vector weighted for all of them: more rows, fewer loads per FMA.
  // The kernels keep rows x vectors accumulators within half the register
  // file: 8 rows x 2 vectors of 16 keys of AVX-512's 32 registers; 2 rows x
  // 4 vectors of 16 registers below (measured on AVX-512: two groups of 8
  // rows per task, the second taking the key block from L1, no faster on
  // GPT-2 seq 512).
  auto rowsAtMost = [&](int64_t rows) {
    return maxQueryRows < 0 ? rows : std::clamp<int64_t>(maxQueryRows, 1, rows);
  };
  tiling.queryRows512 = rowsAtMost(8);
  tiling.queryRows256 = rowsAtMost(2);
  tiling.queryRows128 = rowsAtMost(2);
  // One online-softmax update (max, rescale, exponentials) per row and
  // block: 64 keys amortise it (measured: 128 no faster). Fewer keys than
  // that need no longer a block (its scores sit on the task's stack).
  if (maxKeys >= 0 && maxKeys < tiling.keyBlock)
    tiling.keyBlock = std::max<int64_t>(16, (maxKeys + 15) / 16 * 16);
  auto rowsText = [](int64_t rows) {
    return std::to_string(rows) + (rows == 1 ? " query row" : " query rows");
  };
  tiling.why = llvm::formatv(
      "attention tiles of {0} x blocks of {1} keys ({2} on 256-bit vectors, "
      "{3} on 128-bit): each key and value vector loaded serves every row "
      "of a task",
      rowsText(tiling.queryRows512), tiling.keyBlock, tiling.queryRows256,
      tiling.queryRows128);
  if (maxQueryRows >= 0 && maxQueryRows < 8)
    tiling.why += llvm::formatv(", at most the {0} the sequence allows",
                                rowsText(maxQueryRows));
  if (tiling.keyBlock < 64)
    tiling.why += llvm::formatv("; a block no longer than the {0} keys "
                                "(rounded up to a multiple of 16)",
                                maxKeys);
  return tiling;
}

} // namespace mlir::tfm
