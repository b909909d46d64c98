//===- SelectGemmTiling.cpp - a GEMM tiling on each tfm.linear ------------===//
//
// A GEMM's register tile is the target's (its register file and vector
// width: one per SIMD target the code is compiled for, and the width of
// the panels the weight is packed in there). Past it, its speed is in the
// order it takes the weight's panels: which data stays in which cache. That
// choice depends on the machine's caches and on the GEMM's largest row count,
// both known at compile time; recorded on the op, it shows in the IR and the
// backend only follows it.
//
//===----------------------------------------------------------------------===//

#include "PassRemarks.h"
#include "tfm/Transforms/GemmTiling.h"
#include "tfm/Transforms/MemoryPlan.h"
#include "tfm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMSELECTGEMMTILING
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace {

/// The most rows GEMM `op` multiplies: the product of `shape` (its rows'
/// dimensions), a dynamic one bounded by the module's tfm.max_batch (the
/// first of two or more) or tfm.max_seq_len (the others; both for a lone
/// dynamic dimension).
std::optional<int64_t> maxRows(Operation *op, ArrayRef<int64_t> shape,
                               std::string &whyNot) {
  auto module = op->getParentOfType<ModuleOp>();
  std::optional<FrameBounds> bounds =
      module ? moduleFrameBounds(module) : std::nullopt;
  uint64_t rows = 1;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (!ShapedType::isDynamic(dim)) {
      rows = llvm::SaturatingMultiply<uint64_t>(rows, dim);
      continue;
    }
    if (!bounds) {
      whyNot = "its rows have a dynamic dimension and the module has no "
               "positive tfm.max_batch and tfm.max_seq_len to bound it";
      return std::nullopt;
    }
    rows = llvm::SaturatingMultiply<uint64_t>(
        rows, shape.size() == 1 ? llvm::SaturatingMultiply<uint64_t>(
                                      bounds->maxBatch, bounds->maxSeqLen)
              : i == 0 ? uint64_t(bounds->maxBatch)
                       : uint64_t(bounds->maxSeqLen));
  }
  return int64_t(std::min<uint64_t>(rows, INT64_MAX));
}

struct SelectGemmTilingPass
    : public tfm::impl::TfmSelectGemmTilingBase<SelectGemmTilingPass> {
  using Base::Base;

  void runOnOperation() override {
    if (l1Bytes <= 0 || l2Bytes <= 0) {
      emitError(getOperation()->getLoc())
          << "tfm-select-gemm-tiling: l1-bytes and l2-bytes must be "
             "positive, got "
          << int64_t(l1Bytes) << " and " << int64_t(l2Bytes);
      return signalPassFailure();
    }
    CacheSizes cache{int64_t(l1Bytes), int64_t(l2Bytes)};
    getOperation()->walk([&](Operation *op) {
      if (auto linear = dyn_cast<LinearOp>(op))
        select(op, linear.getWeight().getType(),
               linear.getInput().getType().getShape().drop_back(),
               gemmWeight(linear).columns(), cache);
      // An expert's GEMM takes each token at most once: its rows are the
      // tokens', not the (token, slot) pairs'.
      // Its panels are taken in the order that suits the rows a group has
      // when the routing is balanced: tokens x slots / groups.
      if (auto grouped = dyn_cast<GroupedLinearOp>(op)) {
        auto weight = cast<RankedTensorType>(grouped.getWeights()[0].getType());
        ArrayRef<int64_t> input = grouped.getInput().getType().getShape();
        int64_t slots = input.size() >= 2 ? input[input.size() - 2] : 1;
        select(op, weight, input.drop_back(2), weight.getDimSize(0), cache,
               Grouping{std::max<int64_t>(slots, 1), grouped.getNumGroups()});
      }
    });
  }

  /// A grouped GEMM's rows: `slots` (token, slot) pairs a token over
  /// `groups` groups.
  struct Grouping {
    int64_t slots = 1;
    int64_t groups = 1;
  };

  /// Chooses the tiling of GEMM `op`, of `weight` over rows of `shape`
  /// making `columns` columns (and, for a grouped GEMM, the rows a group
  /// has when every group has as many).
  void select(Operation *op, RankedTensorType weight, ArrayRef<int64_t> shape,
              int64_t columns, const CacheSizes &cache,
              std::optional<Grouping> grouping = std::nullopt) {
    if (getGemmTiling(op)) {
      if (remarks)
        remarkAt(op) << "GEMM tiling kept: it was already chosen";
      return;
    }
    if (!weight.hasStaticShape() || weight.getNumElements() == 0) {
      if (remarks)
        remarkAt(op) << "no GEMM tiling chosen: the weight " << weight
                     << " has no static, non-empty shape to pack in panels";
      return;
    }
    std::string whyNot;
    std::optional<int64_t> rows = maxRows(op, shape, whyNot);
    if (!rows) {
      if (remarks)
        remarkAt(op) << "no GEMM tiling chosen: " << whyNot;
      return;
    }
    std::optional<int64_t> typicalRows;
    if (grouping) {
      uint64_t pairs = llvm::SaturatingMultiply<uint64_t>(
          uint64_t(*rows), uint64_t(grouping->slots));
      uint64_t groups = uint64_t(std::max<int64_t>(grouping->groups, 1));
      typicalRows = int64_t(
          std::min<uint64_t>(uint64_t(*rows), (pairs + groups - 1) / groups));
    }
    GemmTiling tiling = chooseGemmTiling(*rows, weight.getDimSize(1), columns,
                                         cache, typicalRows);
    const RegisterTiles &t = tiling.tiles;
    op->setAttr(GemmTilingName::getNameStr(),
                GemmTilingAttr::get(op->getContext(), t.v512.rows, t.v512.cols,
                                    t.v256.rows, t.v256.cols, t.v128.rows,
                                    t.v128.cols, tiling.l2Columns,
                                    tiling.prefetch[0], tiling.prefetch[1],
                                    tiling.prefetch[2]));
    if (remarks)
      remarkAt(op) << "GEMM tiling: " << tiling.why;
  }
};

} // namespace
