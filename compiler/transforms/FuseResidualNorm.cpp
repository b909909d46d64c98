//===- FuseResidualNorm.cpp - tfm.add + tfm.layer_norm -> one op ----------===//
//
// Every sublayer of a transformer ends in a residual add whose sum a layer
// norm reads (post-norm: this sublayer's, pre-norm: the next one's). Fused,
// each row is summed and normalised while it is in cache.
//
//===----------------------------------------------------------------------===//

#include "PassRemarks.h"
#include "tfm/Transforms/Passes.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMFUSERESIDUALNORM
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Where one tfm.add_layer_norm can stand for `norm` and the add it reads:
/// at the norm if the sum's other readers all come after it, else right
/// after the add if the norm's weights are already defined there.
struct FusionPlan {
  AddOp add;
  bool atNorm;
};

/// The plan for `norm`, or why there is none.
FailureOr<FusionPlan> planFusion(LayerNormOp norm, std::string &whyNot) {
  // The rewrite erases the add before the norm: in a graph region the add
  // may come after it, where the walk is about to go.
  if (!mayHaveSSADominance(*norm->getParentRegion())) {
    whyNot = "it is in a graph region, where its input may be defined after "
             "it";
    return failure();
  }
  Value input = norm.getInput();
  auto add = input.getDefiningOp<AddOp>();
  if (!add) {
    if (Operation *def = input.getDefiningOp())
      whyNot = "its input comes from '" + def->getName().getStringRef().str() +
               "', not from a tfm.add";
    else if (isa<FunctionOpInterface>(input.getParentBlock()->getParentOp()))
      whyNot = "its input is an argument of the function: the add that made "
               "it, if any, is in a caller";
    else
      whyNot = "its input is a block argument, not the sum of a tfm.add";
    return failure();
  }
  DominanceInfo dominance;
  bool atNorm = llvm::all_of(add->getUsers(), [&](Operation *user) {
    return user == norm ||
           dominance.properlyDominates(norm.getOperation(), user);
  });
  if (atNorm)
    return FusionPlan{add, true};
  bool weightsReady =
      llvm::all_of(norm->getOperands().drop_front(), [&](Value v) {
        return dominance.properlyDominates(v, add);
      });
  if (weightsReady)
    return FusionPlan{add, false};
  whyNot = "its gamma/beta are defined after another reader of the sum, so "
           "no one position can serve both";
  return failure();
}

struct FuseAddLayerNorm : OpRewritePattern<LayerNormOp> {
  FuseAddLayerNorm(MLIRContext *context, bool remarks)
      : OpRewritePattern(context), remarks(remarks) {}

  LogicalResult matchAndRewrite(LayerNormOp norm,
                                PatternRewriter &rewriter) const override {
    std::string whyNot;
    FailureOr<FusionPlan> plan = planFusion(norm, whyNot);
    if (failed(plan))
      return rewriter.notifyMatchFailure(norm, whyNot);
    AddOp add = plan->add;
    if (plan->atNorm)
      rewriter.setInsertionPoint(norm);
    else
      rewriter.setInsertionPointAfter(add);
    Type type = add.getType();
    auto fused = AddLayerNormOp::create(
        rewriter, rewriter.getFusedLoc({add.getLoc(), norm.getLoc()}), type,
        type, norm.getRmsAttr(), add.getLhs(), add.getRhs(), norm.getGamma(),
        norm.getBeta(), norm.getEpsAttr());
    if (remarks) {
      size_t otherReaders = llvm::count_if(
          add->getUsers(), [&](Operation *u) { return u != norm; });
      InFlightDiagnostic remark =
          remarkAt(norm) << "fused the residual add and this layer norm";
      if (otherReaders)
        remark << " (" << otherReaders << " more op(s) read the sum)";
    }
    rewriter.replaceOp(norm, fused.getResult());
    rewriter.replaceOp(add, fused.getSum());
    return success();
  }

  bool remarks;
};

struct FuseResidualNormPass
    : mlir::tfm::impl::TfmFuseResidualNormBase<FuseResidualNormPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseResidualNormPatterns(patterns, remarks);
    // One walk, no folding or dead-code removal: the pass changes only what
    // it fuses.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    if (!remarks)
      return;
    getOperation()->walk([](Operation *op) {
      std::string whyNot;
      if (auto norm = dyn_cast<LayerNormOp>(op)) {
        if (failed(planFusion(norm, whyNot)))
          remarkAt(norm) << "layer norm not fused: " << whyNot;
      } else if (auto add = dyn_cast<AddOp>(op)) {
        if (llvm::none_of(add->getUsers(), llvm::IsaPred<LayerNormOp>))
          remarkAt(add) << "residual add not fused with a layer norm: no "
                           "tfm.layer_norm reads its sum";
      }
    });
  }
};

} // namespace

void mlir::tfm::populateFuseResidualNormPatterns(RewritePatternSet &patterns,
                                                 bool remarks) {
  patterns.add<FuseAddLayerNorm>(patterns.getContext(), remarks);
}
