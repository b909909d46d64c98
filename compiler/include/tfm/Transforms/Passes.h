//===- Passes.h - tfm passes and the tfm-optimize pipeline ------*- C++ -*-===//

#ifndef TFM_TRANSFORMS_PASSES_H
#define TFM_TRANSFORMS_PASSES_H

#include "tfm/Codegen/Codegen.h"
#include "tfm/IR/TfmOps.h"
#include "tfm/Transforms/GemmTiling.h"

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

/// Every tfm.multi_head_attention -> tfm.linear projections,
/// tfm.split_heads, tfm.rotary, tfm.cache_append / tfm.cache_read, one
/// tfm.attention and the out_proj tfm.linear.
void populateDecomposeAttentionPatterns(RewritePatternSet &patterns,
                                        bool remarks = false);

/// Every tfm.mamba_mixer -> tfm.linear projections, tfm.causal_conv1d and
/// tfm.selective_scan.
void populateDecomposeMambaPatterns(RewritePatternSet &patterns,
                                    bool remarks = false);

/// tfm.ffn -> two tfm.linear (the activation in the first one's store);
/// tfm.add of a tfm.linear's result -> the linear with a residual.
void populateFuseEpiloguePatterns(RewritePatternSet &patterns,
                                  bool remarks = false);

/// Whether `linear` is a mixture of experts' router (the GEMM whose logits
/// tfm.route_experts reads): contract section 10 keeps its weight and its
/// products in f32, unlike every other GEMM's.
inline bool isRouterGemm(LinearOp linear) {
  return llvm::any_of(linear->getUsers(), llvm::IsaPred<RouteExpertsOp>);
}

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
