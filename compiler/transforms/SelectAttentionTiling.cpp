//===- SelectAttentionTiling.cpp - #tfm.attention_tiling on attention -----===//
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

namespace {

/// The sequence's bound: its static size, else the module's
/// tfm.max_seq_len, else -1 (unknown).
int64_t maxSeqLen(FlashAttentionOp op) {
  auto type = op.getQkv().getType();
  if (type.getRank() >= 2) {
    int64_t seq = type.getDimSize(type.getRank() - 2);
    if (!ShapedType::isDynamic(seq))
      return seq;
  }
  auto module = op->getParentOfType<ModuleOp>();
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
    getOperation()->walk([&](FlashAttentionOp op) {
      if (op.getTilingAttr()) {
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
      // Self-attention: as many keys as query rows.
      int64_t seq = maxSeqLen(op);
      AttentionTiling tiling = chooseAttentionTiling(seq, seq);
      op.setTilingAttr(AttentionTilingAttr::get(
          op.getContext(), tiling.queryRows512, tiling.queryRows256,
          tiling.queryRows128, tiling.keyBlock));
      if (remarks)
        remarkAt(op) << "attention tiling: " << tiling.why;
    });
  }
};

} // namespace
