//===- LLVMPasses.td - the LLVM backend's passes -------------*- tablegen -*-===//
//
// tfm IR -> upstream MLIR dialects -> LLVM dialect; the `tfm-lower-to-llvm`
// pipeline strings them together with upstream passes. Each one runs alone
// in tfm-opt.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LOWERING_LLVMPASSES_TD
#define TFM_LOWERING_LLVMPASSES_TD

include "mlir/Pass/PassBase.td"

def TfmWeightsToArguments : Pass<"tfm-weights-to-arguments", "mlir::ModuleOp"> {
  let summary = "make the weights an entry point reads its arguments";
  let description = [{
    Each public function's `tfm.weight @p` reads become one new argument per
    parameter (after the existing ones, in order of first use), marked
    `{tfm.param = "p"}`, so the function computes on what its caller passes:
    the runtime's weight pointers; public functions are marked
    `llvm.emit_c_interface`, the entry the glue calls. The `tfm.param` and
    `tfm.kv_cache`
    declarations go, as nothing refers to them afterwards.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def ConvertTfmToLinalg : Pass<"convert-tfm-to-linalg"> {
  let summary = "lower tfm ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Matmuls (linear, the Q/K/V and output projections, the feed-forward
    layers, attention scores and their product with V) become contractions
    as `linalg.generic`; layer norm and softmax a reduction and an
    elementwise op; heads reshapes and transposes; positional encodings
    elementwise ops over `linalg.index`. Key/value caches are not lowered
    yet: an op that uses one is an error.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::tensor::TensorDialect",
  ];
}

#endif // TFM_LOWERING_LLVMPASSES_TD
