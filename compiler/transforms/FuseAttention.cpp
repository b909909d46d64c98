//===- FuseAttention.cpp - self-attention -> QKV GEMM + flash attention ---===//
//
// A self-attention's three projections read the same rows: one GEMM over
// the stacked weight makes them all. Its core (scores, mask, softmax,
// product with V) becomes one op that the backends run in the flash form,
// so the IR says what the generated code does.
//
//===----------------------------------------------------------------------===//

#include "PassRemarks.h"
#include "tfm/Transforms/Passes.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMFUSEATTENTION
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Why `op` stays one tfm.multi_head_attention, or "" when it is rewritten.
StringRef whyNotFused(MultiHeadAttentionOp op) {
  if (op.getCache())
    return op.getCacheReadOnly()
               ? "it attends over a key/value cache (incremental decoding), "
                 "which tfm.flash_attention does not read"
               : "it appends to a key/value cache (incremental decoding), "
                 "which tfm.flash_attention does not hold";
  if (op.getMemory())
    return "cross-attention: the queries and the keys/values project "
           "different inputs, so there is no one Q/K/V GEMM";
  return "";
}

struct FuseSelfAttention : OpRewritePattern<MultiHeadAttentionOp> {
  FuseSelfAttention(MLIRContext *context, bool remarks)
      : OpRewritePattern(context), remarks(remarks) {}

  LogicalResult matchAndRewrite(MultiHeadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    StringRef whyNot = whyNotFused(op);
    if (!whyNot.empty())
      return rewriter.notifyMatchFailure(op, whyNot);
    Location loc = op.getLoc();
    auto qkv = LinearOp::create(rewriter, loc, op.getQuery(),
                                op.getInProjWeight(), op.getInProjBias());
    auto core = FlashAttentionOp::create(
        rewriter, loc, op.getScoreAttr(), qkv.getResult(), op.getNumHeadsAttr(),
        op.getScoreParams(), op.getCausalAttr(), op.getRopeAttr(),
        op.getRopeBaseAttr(), /*tiling=*/nullptr);
    auto out = LinearOp::create(rewriter, loc, core.getResult(),
                                op.getOutProjWeight(), op.getOutProjBias());
    if (remarks) {
      InFlightDiagnostic remark =
          remarkAt(op) << "fused the Q, K and V projections into one GEMM "
                          "over the stacked in_proj weight, and the scores";
      if (op.getScore() == ScoreKind::ScaledDot)
        remark << ", scale";
      if (op.getCausal())
        remark << ", causal mask (as loop bounds)";
      remark << ", softmax and product with V into one tfm.flash_attention "
                "(the score matrix is never stored)";
    }
    rewriter.replaceOp(op, out.getResult());
    return success();
  }

  bool remarks;
};

struct FuseAttentionPass
    : mlir::tfm::impl::TfmFuseAttentionBase<FuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseAttentionPatterns(patterns, remarks);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    if (!remarks)
      return;
    getOperation()->walk([](MultiHeadAttentionOp op) {
      remarkAt(op) << "multi-head attention not fused into a QKV GEMM and "
                      "tfm.flash_attention: "
                   << whyNotFused(op);
    });
  }
};

} // namespace

void mlir::tfm::populateFuseAttentionPatterns(RewritePatternSet &patterns,
                                              bool remarks) {
  patterns.add<FuseSelfAttention>(patterns.getContext(), remarks);
}
