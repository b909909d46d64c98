//===- Pipeline.cpp - the tfm-optimize pipeline ---------------------------===//

#include "tfm/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::tfm::buildOptimizePipeline(OpPassManager &pm,
                                      const OptimizePipelineOptions &options) {
  TfmDecomposeAttentionOptions decomposeAttention;
  decomposeAttention.remarks = options.remarks;
  pm.addPass(createTfmDecomposeAttention(decomposeAttention));
  TfmDecomposeMambaOptions decomposeMamba;
  decomposeMamba.remarks = options.remarks;
  pm.addPass(createTfmDecomposeMamba(decomposeMamba));
  TfmFuseResidualNormOptions fuseNorm;
  fuseNorm.remarks = options.remarks;
  pm.addPass(createTfmFuseResidualNorm(fuseNorm));
  TfmFuseEpilogueOptions fuseEpilogue;
  fuseEpilogue.remarks = options.remarks;
  pm.addPass(createTfmFuseEpilogue(fuseEpilogue));
}

void mlir::tfm::registerTfmPassesAndPipelines() {
  registerTfmPasses();
  PassPipelineRegistration<OptimizePipelineOptions>(
      "tfm-optimize",
      "the passes tfm-compile runs between the frontend and a backend",
      buildOptimizePipeline);
}
