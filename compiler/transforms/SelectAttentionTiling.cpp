//===- SelectAttentionTiling.cpp - the tiles of each blocked attention ----===//
//
// How many query rows a task of the blocked attention scores together, and
// how many keys it takes per block, depend on the register file of the
// vector width the code runs with and on the sequence's bound; recorded on
// the op, the tiles (and so the thread pool's tasks) show in the IR and the
// backend only follows them.
//
//===----------------------------------------------------------------------===//

#include "PassRemarks.h"
#include "tfm/Transforms/AttentionTiling.h"
#include "tfm/Transforms/MemoryPlan.h"
#include "tfm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMSELECTATTENTIONTILING
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace {

/// The bound of the rows (dimension -2) of `v`: its static size, the
/// cache's positions for keys read from one, else the module's
/// tfm.max_seq_len, else -1 (unknown).
int64_t maxRows(Value v, ModuleOp module) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() >= 2) {
    int64_t seq = type.getDimSize(type.getRank() - 2);
    if (!ShapedType::isDynamic(seq))
      return seq;
  }
  if (auto read = v.getDefiningOp<CacheReadOp>())
    return read.getCache().getType().getMaxSeq();
  if (std::optional<FrameBounds> bounds =
          module ? moduleFrameBounds(module) : std::nullopt)
    return bounds->maxSeqLen;
  return -1;
}

struct SelectAttentionTilingPass
    : public tfm::impl::TfmSelectAttentionTilingBase<
          SelectAttentionTilingPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation()->walk([&](AttentionOp op) {
      if (getAttentionTiling(op)) {
        if (remarks)
          remarkAt(op) << "attention tiling kept: it was already chosen";
        return;
      }
      if (op.getScore() == ScoreKind::Additive) {
        if (remarks)
          remarkAt(op) << "no attention tiling chosen: additive scores are "
                          "taken one key at a time, not in blocks";
        return;
      }
      auto module = op->getParentOfType<ModuleOp>();
      int64_t maxQueries = maxRows(op.getQuery(), module);
      int64_t maxKeys = maxRows(op.getKey(), module);
      // The keys a task's block of query rows visits, as the mask bounds
      // them: a window sees fewer than all of them.
      KeySpan span =
          op.getMaskAttr() ? op.getMaskAttr().getKeySpan() : KeySpan();
      int64_t keysOfTask = span.maxKeysOfBlock(
          chooseAttentionTiling(maxQueries, maxKeys).queryRows512, maxKeys);
      AttentionTiling tiling = chooseAttentionTiling(maxQueries, keysOfTask);
      op->setAttr(AttentionTilingName::getNameStr(),
                  AttentionTilingAttr::get(
                      op.getContext(), tiling.queryRows512, tiling.queryRows256,
                      tiling.queryRows128, tiling.keyBlock));
      if (remarks)
        remarkAt(op) << "attention tiling: " << tiling.why;
    });
  }
};

} // namespace
