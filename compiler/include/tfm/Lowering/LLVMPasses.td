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
  let summary = "make the weights and caches an entry point reads its arguments";
  let description = [{
    Each public function's `tfm.weight @p` reads become one new argument per
    parameter (after the existing ones, in order of first use), marked
    `{tfm.param = "p"}`, and its `tfm.cache @c` handles one argument per
    cache, marked `{tfm.cache = "c"}`, so the function computes on what its
    caller passes:
    the runtime's weight pointers; public functions are marked
    `llvm.emit_c_interface`, the entry the glue calls. The `tfm.param` and
    `tfm.kv_cache`
    declarations go, as nothing refers to them afterwards.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def TfmPackGemmWeights : Pass<"tfm-pack-gemm-weights", "mlir::ModuleOp"> {
  let summary = "pass each GEMM weight also in the micro-kernel's panel layout";
  let description = [{
    For every weight argument a `tfm.linear`, `tfm.ffn` or
    `tfm.multi_head_attention` multiplies by, the function gets a second
    argument `tensor<panels x K x 32>` marked `{tfm.packs = i,
    tfm.segments = s}` (`i` the weight's argument; `s` 3 for the stacked
    Q/K/V projection, packed segment by segment, else 1): for each k, 32
    consecutive output columns, zero-padded. Callers pass theirs, up to the
    entry points, whose packed arguments the runtime fills once after
    loading the weights. convert-tfm-to-linalg multiplies by the packed form.
  }];
}

def ConvertTfmToLinalg : Pass<"convert-tfm-to-linalg"> {
  let summary = "lower tfm ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Matmuls (linear, the Q/K/V and output projections, the feed-forward
    layers, attention scores and their product with V) become contractions
    as `linalg.generic`; layer norm and softmax a reduction and an
    elementwise op; heads reshapes and transposes; positional encodings
    elementwise ops over `linalg.index`. A key/value cache
    (`!tfm.kv_cache` arguments) becomes the buffer the runtime keeps,
    `memref<2 x maxBatch x heads x maxSeq x headDim>` (keys, then values):
    new keys and values are written into it with
    `bufferization.materialize_in_destination`, and attention reads the
    positions so far through `bufferization.to_tensor`.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::bufferization::BufferizationDialect",
    "mlir::linalg::LinalgDialect", "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect", "mlir::tensor::TensorDialect",
  ];
}

def TfmStridedCopiesToLinalg : Pass<"tfm-strided-copies-to-linalg"> {
  let summary = "rewrite memref.copy of non-contiguous views as linalg.copy";
  let description = [{
    After bufferization: a copy into or out of a strided view (a slice of a
    key/value cache) would lower to a call into MLIR's C runner library;
    as `linalg.copy` it becomes loops. Copies between contiguous buffers
    stay (they become memcpy).
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

#endif // TFM_LOWERING_LLVMPASSES_TD
