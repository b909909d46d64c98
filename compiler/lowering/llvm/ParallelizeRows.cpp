//===- ParallelizeRows.cpp - row-wise linalg ops -> scf.forall ------------===//
//
// The GEMMs and the attention come out of their passes as parallel loops;
// the ops between them (bias, activation and residual epilogues, layer
// norms, transposes, fills) are whole-tensor linalg ops, which would run on
// one thread. Each is tiled over its two leading dimensions (batch and
// sequence, or batch and heads) into one scf.forall of blocks of rows,
// which tfm-outline-parallel-loops runs on the thread pool. The blocks
// follow from the shapes (one batch entry, about kRowsPerTask rows): which
// thread runs a block never changes what it computes.
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/LLVMBackend.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMPARALLELIZEROWS
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Rows a task takes: a few microseconds of element-wise work on rows of
/// d_model floats, enough to hide the dispatch of a task.
constexpr int64_t kRowsPerTask = 8;

/// Whether `op` is one this pass tiles: a linalg op on tensors, outside any
/// loop (the attention's block bodies already run in parallel), not a GEMM
/// (tfm-vectorize-gemm tiles those), whose two leading loops are parallel.
bool isRowWise(linalg::LinalgOp op) {
  if (op->hasAttr("tfm.gemm") || !op.hasPureTensorSemantics() ||
      op->getNumResults() != 1 || op->getParentOfType<LoopLikeOpInterface>())
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  return iterators.size() >= 2 &&
         iterators[0] == utils::IteratorType::parallel &&
         iterators[1] == utils::IteratorType::parallel;
}

struct ParallelizeRowsPass
    : mlir::tfm::impl::TfmParallelizeRowsBase<ParallelizeRowsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (isRowWise(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      // One task per batch entry and block of about kRowsPerTask rows: as
      // upstream's "number of threads" of each of the two dimensions, so
      // that the loop comes out normalized (from 0 by 1) for
      // tfm-outline-parallel-loops. Both counts follow from the shapes
      // alone, never from the thread pool.
      SmallVector<Range> ranges = op.createLoopRanges(rewriter, loc);
      AffineExpr rows = rewriter.getAffineSymbolExpr(0);
      SmallVector<OpFoldResult> tasks(op.getNumLoops(),
                                      rewriter.getIndexAttr(0));
      tasks[0] = ranges[0].size;
      tasks[1] = affine::makeComposedFoldedAffineApply(
          rewriter, loc, rows.ceilDiv(kRowsPerTask), {ranges[1].size});
      scf::SCFTilingOptions options;
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      options.setNumThreads(tasks);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled)) {
        op->emitOpError("could not be tiled into blocks of rows");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, tiled->replacements);
    }
  }
};

} // namespace
