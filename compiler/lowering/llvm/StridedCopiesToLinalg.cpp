//===- StridedCopiesToLinalg.cpp - memref.copy of strided views -> loops --===//
//
// The LLVM lowering turns a memref.copy between contiguous buffers into a
// memcpy, but one with a strided view (a key/value cache's slice) into a call
// to MLIR's C runner library, which a compiled model does not link. As a
// linalg.copy it becomes loops like every other linalg op.
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/LLVMBackend.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMSTRIDEDCOPIESTOLINALG
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct StridedCopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp copy,
                                PatternRewriter &rewriter) const override {
    auto contiguous = [](Value v) {
      return cast<MemRefType>(v.getType()).getLayout().isIdentity();
    };
    if (contiguous(copy.getSource()) && contiguous(copy.getTarget()))
      return failure();
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
    return success();
  }
};

struct StridedCopiesToLinalgPass
    : mlir::tfm::impl::TfmStridedCopiesToLinalgBase<StridedCopiesToLinalgPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<StridedCopyToLinalg>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
