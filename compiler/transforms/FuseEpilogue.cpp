//===- FuseEpilogue.cpp - activations and residual adds into GEMM stores --===//
//
// What reads a GEMM's result element by element (an FFN's activation, a
// residual connection) is cheapest while the tile is still in registers or
// L1: fused, it costs no pass over memory of its own.
//
//===----------------------------------------------------------------------===//

#include "PassRemarks.h"
#include "tfm/Transforms/Passes.h"

#include "mlir/IR/RegionKindInterface.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMFUSEEPILOGUE
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct FuseFeedForwardActivation : OpRewritePattern<FeedForwardOp> {
  FuseFeedForwardActivation(MLIRContext *context, bool remarks)
      : OpRewritePattern(context), remarks(remarks) {}

  LogicalResult matchAndRewrite(FeedForwardOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value hidden;
    if (op.getGated()) {
      // The gate and up projections are one GEMM over the stacked w1; the
      // GLU reads its two halves.
      Value both = LinearOp::create(rewriter, loc, op.getInput(), op.getW1(),
                                    op.getB1());
      hidden = GluOp::create(rewriter, loc, op.getActivationAttr(), both);
    } else {
      hidden = LinearOp::create(rewriter, loc, op.getInput(), op.getW1(),
                                op.getB1(), op.getActivationAttr(),
                                /*residual=*/Value());
    }
    auto out = LinearOp::create(rewriter, loc, hidden, op.getW2(), op.getB2());
    if (remarks) {
      if (op.getGated())
        remarkAt(op) << "gated FFN: the gate and up projections as one GEMM "
                        "over the stacked linear1 weight, then "
                     << stringifyActivation(op.getActivation())
                     << "(gate) * up in one pass (tfm.glu)";
      else
        remarkAt(op) << "fused " << stringifyActivation(op.getActivation())
                     << " into the first GEMM's store: the hidden layer is "
                        "written once, activated";
    }
    rewriter.replaceOp(op, out.getResult());
    return success();
  }

  bool remarks;
};

/// The operand of `add` that is a tfm.linear's result the add alone reads,
/// once, in its block, and that adds no residual yet (the right one first),
/// or why none is.
FailureOr<unsigned> linearOperand(AddOp add, std::string &whyNot) {
  if (!mayHaveSSADominance(*add->getParentRegion())) {
    whyNot = "it is in a graph region, where its operands may be defined "
             "after it";
    return failure();
  }
  whyNot = "neither operand comes from a tfm.linear";
  for (unsigned i : {1u, 0u}) {
    auto linear = add->getOperand(i).getDefiningOp<LinearOp>();
    if (!linear)
      continue;
    if (add.getLhs() == add.getRhs())
      whyNot = "it adds its tfm.linear's result to itself";
    else if (linear.getResidual())
      whyNot = "its tfm.linear already adds a residual";
    else if (!linear->hasOneUse())
      whyNot = "other ops read its tfm.linear's result, which must stay "
               "without the residual";
    else if (linear->getBlock() != add->getBlock())
      whyNot = "its tfm.linear is in another block (moving the GEMM into "
               "this one could run it more often)";
    else
      return i;
  }
  return failure();
}

struct FuseResidualAdd : OpRewritePattern<AddOp> {
  FuseResidualAdd(MLIRContext *context, bool remarks)
      : OpRewritePattern(context), remarks(remarks) {}

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    std::string whyNot;
    FailureOr<unsigned> index = linearOperand(add, whyNot);
    if (failed(index))
      return rewriter.notifyMatchFailure(add, whyNot);
    auto linear = add->getOperand(*index).getDefiningOp<LinearOp>();
    // The linear moves to the add (the residual may be defined after it)
    // and takes the residual; only the matched add is erased, as the walk
    // driver requires.
    rewriter.moveOpBefore(linear, add);
    rewriter.modifyOpInPlace(linear, [&] {
      linear.getResidualMutable().assign(add->getOperand(1 - *index));
      linear->setLoc(rewriter.getFusedLoc({linear.getLoc(), add.getLoc()}));
    });
    if (remarks)
      remarkAt(add) << "fused the residual add into the GEMM's store";
    rewriter.replaceOp(add, linear.getResult());
    return success();
  }

  bool remarks;
};

struct FuseEpiloguePass
    : mlir::tfm::impl::TfmFuseEpilogueBase<FuseEpiloguePass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseEpiloguePatterns(patterns, remarks);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    if (!remarks)
      return;
    getOperation()->walk([](AddOp add) {
      std::string whyNot;
      if (failed(linearOperand(add, whyNot)))
        remarkAt(add) << "residual add not fused into a GEMM: " << whyNot;
    });
  }
};

} // namespace

void mlir::tfm::populateFuseEpiloguePatterns(RewritePatternSet &patterns,
                                             bool remarks) {
  patterns.add<FuseFeedForwardActivation, FuseResidualAdd>(
      patterns.getContext(), remarks);
}
