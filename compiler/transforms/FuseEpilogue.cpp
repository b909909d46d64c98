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
                                /*residual=*/Value(), /*bf16_inputs=*/false,
                                /*weight_format=*/WeightFormatAttr());
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

/// Mixtral's routing as the grouped GEMMs it needs: the router GEMM, the
/// (token, slot) pairs grouped by expert, each expert's two linears over
/// its group's rows only, the activation in the first one's store and the
/// weighted combine in the second one's.
struct DecomposeMixtureOfExperts : OpRewritePattern<MixtureOfExpertsOp> {
  DecomposeMixtureOfExperts(MLIRContext *context, bool remarks)
      : OpRewritePattern(context), remarks(remarks) {}

  LogicalResult matchAndRewrite(MixtureOfExpertsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType input = op.getInput().getType();
    Type f32 = input.getElementType(), i32 = rewriter.getI32Type();
    Value logits = LinearOp::create(rewriter, loc, op.getInput(), op.getGate());
    SmallVector<int64_t> slots(input.getShape());
    slots.back() = op.getTopK();
    auto rowsOf = [&](int64_t width) {
      SmallVector<int64_t> shape(slots);
      shape.push_back(width);
      return RankedTensorType::get(shape, f32);
    };
    auto route = RouteExpertsOp::create(
        rewriter, loc, RankedTensorType::get(slots, i32),
        RankedTensorType::get(slots, f32),
        RankedTensorType::get({op.getNumExperts() + 1}, i32), logits,
        op.getTopKAttr());
    Value rows =
        GatherRowsOp::create(rewriter, loc, rowsOf(input.getShape().back()),
                             op.getInput(), route.getTokens());
    int64_t firstRows =
        cast<RankedTensorType>(op.getW1()[0].getType()).getDimSize(0);
    Value hidden = GroupedLinearOp::create(
        rewriter, loc, rowsOf(firstRows), rows, route.getStarts(), op.getW1(),
        op.getB1(), op.getGated() ? ActivationAttr() : op.getActivationAttr(),
        Value(), Value(), Value(), /*bf16_inputs=*/false,
        /*weight_format=*/WeightFormatAttr());
    if (op.getGated())
      hidden = GluOp::create(rewriter, loc, op.getActivationAttr(), hidden);
    Value out = GroupedLinearOp::create(
        rewriter, loc, input, hidden, route.getStarts(), op.getW2(), op.getB2(),
        ActivationAttr(), route.getTokens(), route.getWeights(), Value(),
        /*bf16_inputs=*/false, /*weight_format=*/WeightFormatAttr());
    if (remarks)
      remarkAt(op) << "mixture of " << op.getNumExperts()
                   << " experts: the router as one GEMM, top-" << op.getTopK()
                   << " routing grouping the (token, slot) pairs by expert "
                      "(tfm.route_experts), then each expert's linears as "
                      "GEMMs over its group's rows only ("
                   << (op.getGated() ? "the gated hidden layer in one pass "
                                       "(tfm.glu)"
                                     : "the activation in the first one's "
                                       "store")
                   << ", the routing weight and the scatter back to the "
                      "tokens in the second one's)";
    rewriter.replaceOp(op, out);
    return success();
  }

  bool remarks;
};

/// The GEMM op whose store can add a residual: a tfm.linear, or a
/// tfm.grouped_linear that scatters its rows back to the tokens.
Operation *residualGemm(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto grouped = dyn_cast_if_present<GroupedLinearOp>(def))
    return grouped.getTokens() ? def : nullptr;
  return dyn_cast_if_present<LinearOp>(def);
}

OpOperand *residualOperand(Operation *gemm) {
  if (auto grouped = dyn_cast<GroupedLinearOp>(gemm))
    return grouped.getResidual() ? &grouped.getResidualMutable()[0] : nullptr;
  auto linear = cast<LinearOp>(gemm);
  return linear.getResidual() ? &linear.getResidualMutable()[0] : nullptr;
}

/// The operand of `add` that is a GEMM's result (residualGemm) the add
/// alone reads, once, in its block, and that adds no residual yet (the
/// right one first), or why none is.
FailureOr<unsigned> linearOperand(AddOp add, std::string &whyNot) {
  if (!mayHaveSSADominance(*add->getParentRegion())) {
    whyNot = "it is in a graph region, where its operands may be defined "
             "after it";
    return failure();
  }
  whyNot = "neither operand comes from a tfm.linear";
  for (unsigned i : {1u, 0u}) {
    Operation *linear = residualGemm(add->getOperand(i));
    if (!linear)
      continue;
    if (add.getLhs() == add.getRhs())
      whyNot = "it adds its " + linear->getName().getStringRef().str() +
               "'s result to itself";
    else if (residualOperand(linear))
      whyNot = "its " + linear->getName().getStringRef().str() +
               " already adds a residual";
    else if (!linear->hasOneUse())
      whyNot = "other ops read its " + linear->getName().getStringRef().str() +
               "'s result, which must stay without the residual";
    else if (linear->getBlock() != add->getBlock())
      whyNot = "its " + linear->getName().getStringRef().str() +
               " is in another block (moving the GEMM into this one could "
               "run it more often)";
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
    Operation *linear = residualGemm(add->getOperand(*index));
    Value residual = add->getOperand(1 - *index);
    // The linear moves to the add (the residual may be defined after it)
    // and takes the residual; only the matched add is erased, as the walk
    // driver requires.
    rewriter.moveOpBefore(linear, add);
    rewriter.modifyOpInPlace(linear, [&] {
      if (auto grouped = dyn_cast<GroupedLinearOp>(linear))
        grouped.getResidualMutable().assign(residual);
      else
        cast<LinearOp>(linear).getResidualMutable().assign(residual);
      linear->setLoc(rewriter.getFusedLoc({linear->getLoc(), add.getLoc()}));
    });
    if (remarks)
      remarkAt(add) << "fused the residual add into the GEMM's store";
    rewriter.replaceOp(add, linear->getResult(0));
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
  patterns.add<FuseFeedForwardActivation, DecomposeMixtureOfExperts,
               FuseResidualAdd>(patterns.getContext(), remarks);
}
