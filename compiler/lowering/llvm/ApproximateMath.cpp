//===- ApproximateMath.cpp - f32 exp/erf/tanh as polynomials --------------===//
//
// The exponentials of softmax and the erf or tanh of GELU would otherwise
// become one libm call per element (convert-math-to-libm), which keeps LLVM
// from vectorising their loops. Upstream's polynomial approximations turn
// them into arithmetic (f32 only; f64 ops, the positions' angles, keep their
// libm calls).
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/LLVMBackend.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMAPPROXIMATEMATH
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

struct ApproximateMathPass
    : mlir::tfm::impl::TfmApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == math::ExpOp::getOperationName() ||
             name == math::ErfOp::getOperationName() ||
             name == math::TanhOp::getOperationName();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
