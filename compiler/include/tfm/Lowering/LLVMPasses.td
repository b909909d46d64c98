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
    For every weight argument a `tfm.linear` multiplies by (directly, or
    rows of it through `tfm.slice_rows`: see `gemmWeight`), the function
    gets a second argument `tensor<panels x K x 32>` marked `{tfm.packs =
    i, tfm.segments = s}` (`i` the weight's argument; `s` the segments the
    slices need, 3 for cross-attention's stacked Q/K/V weight, packed
    segment by segment, else 1): for each k, 32
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
    (`!tfm.kv_cache` arguments) becomes the flat buffer the runtime keeps,
    `memref<floats x f32>`, viewed in the layout the type defines (keys
    transposed, then values) through `memref.reinterpret_cast`:
    `tfm.cache_append` writes the new keys and values with
    `bufferization.materialize_in_destination`, `tfm.cache_read` reads the
    positions so far through `bufferization.to_tensor`.

    Attention with more than 64 query rows (or a dynamic number) runs in an
    `scf.forall` over blocks of 64 query rows: each block scores only the
    keys its rows' mask span allows up to its last row (with a causal mask
    the blocks of keys above the diagonal are never computed; only the
    diagonal block is masked), and stores only its own scores. Additive
    scores stay one block. Only the decomposed ops are lowered (run
    tfm-optimize first): no graph-level op has a lowering here.
  }];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::linalg::LinalgDialect", "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect", "mlir::vector::VectorDialect",
  ];
}

def TfmVectorizeGemm : Pass<"tfm-vectorize-gemm", "mlir::ModuleOp"> {
  let summary = "tile and vectorise the GEMMs on packed panels";
  let description = [{
    On tensors, for each `linalg.generic` marked `tfm.gemm` (as
    convert-tfm-to-linalg makes them: x [lead..., blocks, 8, K], the rows
    padded to whole blocks, times panels [P, K, 32]): tiles of one block of
    8 rows by one panel of 32 columns, in one `scf.forall` with the panels
    outermost (consecutive tiles share a panel); unit dimensions folded; k
    tiled by 1;
    vectorised, with the accumulator tile hoisted out of the k loop
    (`vector<8x32xf32>`, 16 zmm registers with AVX-512). Runs upstream
    transform ops (transform.structured.tile_using_for,
    fold_unit_extent_dims_via_reshapes,
    vectorize_children_and_apply_patterns,
    transform.loop.hoist_loop_invariant_subsets).
  }];
  let dependentDialects = [
    "mlir::transform::TransformDialect", "mlir::linalg::LinalgDialect",
    "mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
    "mlir::tensor::TensorDialect", "mlir::arith::ArithDialect",
  ];
}

def TfmParallelizeRows : Pass<"tfm-parallelize-rows", "mlir::ModuleOp"> {
  let summary = "tile the row-wise linalg ops into parallel loops of row blocks";
  let description = [{
    On tensors, after tfm-vectorize-gemm: every linalg op outside a loop
    that is not a GEMM and whose two leading loops are parallel (the bias,
    activation and residual epilogues, layer norms, transposes and fills,
    over [batch, seq, ...] or [batch, heads, ...]) is tiled with upstream's
    TilingInterface into one `scf.forall` over blocks of one batch entry by
    about 8 rows (ceil(seq / 8) blocks of ceil(seq / blocks) rows, the last
    fewer), normalized (from 0 by 1), which tfm-outline-parallel-loops then
    runs on the thread pool. The blocks do not depend on the thread count.

    Left alone: ops inside a loop (the attention's block bodies), GEMMs
    (`tfm.gemm`), ops on buffers, and ops with fewer than two leading
    parallel loops.
  }];
  let dependentDialects = [
    "mlir::scf::SCFDialect", "mlir::tensor::TensorDialect",
    "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
  ];
}

def TfmLowerVectors : Pass<"tfm-lower-vectors", "mlir::ModuleOp"> {
  let summary = "lower vector contractions to FMAs and transfers to loads";
  let description = [{
    After bufferization: vector.contract -> outer products -> vector.fma;
    multi-dimensional transfer_read/transfer_write -> 1-D loads and stores
    (fully unrolled); shape casts and broadcasts lowered. The result is what
    convert-vector-to-llvm takes.
  }];
  let dependentDialects = [
    "mlir::transform::TransformDialect", "mlir::vector::VectorDialect",
    "mlir::scf::SCFDialect", "mlir::memref::MemRefDialect",
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

def TfmOutlineParallelLoops : Pass<"tfm-outline-parallel-loops",
                                   "mlir::ModuleOp"> {
  let summary = "run each scf.forall's iterations on the runtime's thread pool";
  let description = [{
    After bufferization: each outermost `scf.forall` (normalized: from 0 by
    1; no results) becomes a call of `@__tfm_parallel_K(%n, captures...)`,
    a declaration with `llvm.emit_c_interface` whose definition the glue
    provides: it runs `@__tfm_parallel_K_body(%i, captures...)` (the loop's
    body, its induction variables delinearized from `%i`, row-major) for
    every `%i` in `[0, %n)` on the thread pool of the call in progress.
    Captures are the values the body uses from above (memrefs by
    descriptor, indices, integers and floats); constants are cloned into
    the body. Which thread runs an iteration does not change what it
    computes: each writes its own part of the result.

    Left alone (run serially): a forall that is not normalized, that has
    results, or that captures a value of another type (a vector).
  }];
  let dependentDialects = [
    "mlir::func::FuncDialect", "mlir::arith::ArithDialect",
  ];
}

def TfmApproximateMath : Pass<"tfm-approximate-math"> {
  let summary = "math.erf, exp, tanh, log and log1p as polynomials, not libm calls";
  let description = [{
    Upstream's polynomial approximations (arithmetic and bit operations,
    about 1-2 ulp in f32) replace `math.erf`, `math.exp`, `math.tanh`,
    `math.log` and `math.log1p` (a mamba scan's softplus), so the
    element-wise loops of GELU, softmax and the scan call nothing and LLVM
    vectorises them. Other math ops (sqrt, sin, cos, powf) are left alone:
    sqrt is an instruction; sin and cos of rotary positions' large angles
    need libm's range reduction.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::math::MathDialect",
    "mlir::vector::VectorDialect",
  ];
}

#endif // TFM_LOWERING_LLVMPASSES_TD
