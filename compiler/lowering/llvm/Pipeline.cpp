//===- Pipeline.cpp - the tfm-lower-to-llvm pipeline ----------------------===//
//
// tfm IR -> linalg on tensors (our passes) -> buffers (one-shot
// bufferization; ownership-based deallocation frees every temporary and
// hands the result to the caller) -> loops -> the LLVM dialect (upstream
// conversions). Every step is a pass a user can stop after with
// --print-ir-after.
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/LLVMBackend.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
/// Adds `pipeline` (upstream passes by their registered names: the textual
/// form is the one tfm-opt users read in the docs) to `pm`.
void addPipeline(OpPassManager &pm, StringRef pipeline) {
  if (failed(parsePassPipeline(pipeline, pm)))
    llvm::report_fatal_error("tfm-lower-to-llvm: a pass is not registered");
}
} // namespace

void mlir::tfm::buildLLVMEntryPasses(OpPassManager &pm) {
  pm.addPass(createTfmWeightsToArguments());
  pm.addPass(createTfmPackGemmWeights());
}

void mlir::tfm::buildLLVMLoweringPasses(OpPassManager &pm) {
  pm.addPass(createConvertTfmToLinalg());
  addPipeline(pm, "canonicalize,cse");
  pm.addPass(createTfmVectorizeGemm());
  pm.addPass(createTfmParallelizeRows());
  // (Not linalg-fuse-elementwise-ops: its reshape propagation moves the
  // GEMM epilogue's expand_shape onto a strided slice, which upstream's
  // expand-strided-metadata crashes on.)
  addPipeline(pm, "one-shot-bufferize{bufferize-function-boundaries=1 "
                  "function-boundary-type-conversion=identity-layout-map},"
                  "canonicalize,cse,canonicalize,"
                  "buffer-deallocation-pipeline");
  pm.addPass(createTfmLowerVectors());
  pm.addPass(createTfmStridedCopiesToLinalg());
  pm.addPass(createTfmOutlineParallelLoops());
  pm.addPass(createTfmApproximateMath());
  // Math ops with an LLVM intrinsic first: the approximations' math.fma
  // must become an FMA instruction, not a call to libm's fmaf.
  addPipeline(pm, "convert-linalg-to-loops,"
                  "convert-math-to-llvm,convert-math-to-libm,"
                  "expand-strided-metadata,lower-affine,convert-scf-to-cf,"
                  "convert-to-llvm,reconcile-unrealized-casts,"
                  "canonicalize,cse");
}

void mlir::tfm::buildLowerToLLVMPipeline(OpPassManager &pm) {
  buildLLVMEntryPasses(pm);
  buildLLVMLoweringPasses(pm);
}

void mlir::tfm::registerLLVMBackendDependencies(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<TfmDialect>();
  static bool passesRegistered = [] {
    registerAllPasses();
    return true;
  }();
  (void)passesRegistered;
}

void mlir::tfm::registerLLVMBackendPassesAndPipelines() {
  registerTfmLLVMPasses();
  PassPipelineRegistration<>(
      "tfm-lower-to-llvm",
      "the LLVM backend: tfm IR to the LLVM dialect, through linalg, "
      "bufferization and loops",
      buildLowerToLLVMPipeline);
}
