//===- Pipeline.cpp - the tfm-optimize pipeline ---------------------------===//

#include "tfm/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::tfm::buildOptimizePipeline(OpPassManager &pm,
                                      const OptimizePipelineOptions &options) {
  TfmFuseResidualNormOptions fuseNorm;
  fuseNorm.remarks = options.remarks;
  pm.addPass(createTfmFuseResidualNorm(fuseNorm));
}

void mlir::tfm::registerTfmPassesAndPipelines() {
  registerTfmPasses();
  PassPipelineRegistration<OptimizePipelineOptions>(
      "tfm-optimize",
      "the passes tfm-compile runs between the frontend and a backend",
      buildOptimizePipeline);
}
