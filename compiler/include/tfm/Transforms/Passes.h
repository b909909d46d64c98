//===- Passes.h - tfm passes and the tfm-optimize pipeline ------*- C++ -*-===//

#ifndef TFM_TRANSFORMS_PASSES_H
#define TFM_TRANSFORMS_PASSES_H

#include "tfm/IR/TfmOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "tfm/Transforms/Passes.h.inc"

/// tfm.add + tfm.layer_norm -> tfm.add_layer_norm (with a "fused" remark
/// per rewrite when `remarks`).
void populateFuseResidualNormPatterns(RewritePatternSet &patterns,
                                      bool remarks = false);

struct OptimizePipelineOptions
    : public PassPipelineOptions<OptimizePipelineOptions> {
  Option<bool> remarks{*this, "remarks",
                       llvm::cl::desc("report each fusion done and not done "
                                      "as an MLIR remark"),
                       llvm::cl::init(false)};
};

/// The passes tfm-compile runs before a backend, in order.
void buildOptimizePipeline(OpPassManager &pm,
                           const OptimizePipelineOptions &options);

#define GEN_PASS_REGISTRATION
#include "tfm/Transforms/Passes.h.inc"

/// Registers every tfm pass and the `tfm-optimize` pipeline.
void registerTfmPassesAndPipelines();

} // namespace mlir::tfm

#endif // TFM_TRANSFORMS_PASSES_H
