//===- DecomposeMamba.cpp - Mamba mixers as GEMMs, conv and scan ----------===//
//
// A Mamba mixer is five matrix products around two sequence ops. The
// products go to the GEMM every backend already runs near peak; the conv
// and the scan are ops of their own, each one pass over its rows with every
// elementwise step (bias, SiLU, softplus, the D skip, the gate) fused in.
//
//===----------------------------------------------------------------------===//

#include "PassRemarks.h"
#include "tfm/Transforms/Passes.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMDECOMPOSEMAMBA
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct DecomposeMambaMixer : OpRewritePattern<MambaMixerOp> {
  DecomposeMambaMixer(MLIRContext *context, bool remarks)
      : OpRewritePattern(context), remarks(remarks) {}

  LogicalResult matchAndRewrite(MambaMixerOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType input = op.getInput().getType();
    Type f32 = input.getElementType();
    int64_t channels = op.getChannels(), states = op.getStateSize(),
            rank = op.getDtRank();
    // Rows [offset, offset + n) of weight `w`.
    auto rows = [&](Value w, int64_t offset, int64_t n) -> Value {
      auto type = cast<RankedTensorType>(w.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = n;
      return SliceRowsOp::create(rewriter, loc,
                                 RankedTensorType::get(shape, f32), w,
                                 rewriter.getI64IntegerAttr(offset));
    };
    auto linear = [&](Value x, Value w, Value bias = Value()) -> Value {
      return LinearOp::create(rewriter, loc, x, w, bias);
    };
    Value u = linear(op.getInput(), rows(op.getInProj(), 0, channels));
    Value z = linear(op.getInput(), rows(op.getInProj(), channels, channels));
    Value offset = op.getOffset();
    TypedValue<MambaStateType> state = op.getState();
    u = CausalConv1dOp::create(rewriter, loc, u.getType(), u,
                               op.getConvWeight(), op.getConvBias(), offset,
                               state);
    Value dt = linear(u, rows(op.getXProj(), 0, rank));
    Value b = linear(u, rows(op.getXProj(), rank, states));
    Value c = linear(u, rows(op.getXProj(), rank + states, states));
    Value delta = linear(dt, op.getDtProj(), op.getDtBias());
    Value y = SelectiveScanOp::create(rewriter, loc, u.getType(), u, delta,
                                      op.getALog(), b, c, op.getD(), z, offset,
                                      state);
    Value out = linear(y, op.getOutProj());
    if (remarks)
      remarkAt(op) << "mamba mixer (" << channels << " channels, state "
                   << states << ", dt_rank " << rank << ", conv width "
                   << op.getConvWidth()
                   << "): in_proj, x_proj, dt_proj and out_proj as GEMMs; "
                      "the causal conv with its bias and SiLU in one pass "
                      "(tfm.causal_conv1d); softplus, the recurrence, C . h, "
                      "the D skip and the SiLU(z) gate in one scan over the "
                      "sequence (tfm.selective_scan)"
                   << (state ? ", both carrying the mixer's state from step "
                               "to step (a step costs the same at any "
                               "position)"
                             : "");
    rewriter.replaceOp(op, out);
    return success();
  }

  bool remarks;
};

struct DecomposeMambaPass
    : mlir::tfm::impl::TfmDecomposeMambaBase<DecomposeMambaPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeMambaPatterns(patterns, remarks);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void mlir::tfm::populateDecomposeMambaPatterns(RewritePatternSet &patterns,
                                               bool remarks) {
  patterns.add<DecomposeMambaMixer>(patterns.getContext(), remarks);
}
