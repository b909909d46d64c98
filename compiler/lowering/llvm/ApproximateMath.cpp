//===- ApproximateMath.cpp - erf, exp, tanh, log1p as polynomials ---------===//
//
// GELU's erf (or tanh), softmax's exp and the Mamba scan's softplus (log1p,
// which upstream approximates through log, so log too) would otherwise
// become calls into libm, once per element (or per lane of a vector): a
// loop with a call in it stays scalar. As upstream's polynomial
// approximations (arithmetic and bit operations only, about 1-2 ulp in f32:
// far inside the contract's tolerance) the loops are plain arithmetic,
// which LLVM vectorises. sin and cos are left to libm: rotary positions
// take them of angles up to the sequence length, where the approximation's
// range reduction is not accurate enough, and only once per position and
// frequency.
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/LLVMBackend.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMAPPROXIMATEMATH
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct ApproximateMathPass
    : mlir::tfm::impl::TfmApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == math::ErfOp::getOperationName() ||
             name == math::ExpOp::getOperationName() ||
             name == math::TanhOp::getOperationName() ||
             name == math::Log1pOp::getOperationName() ||
             name == math::LogOp::getOperationName();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
