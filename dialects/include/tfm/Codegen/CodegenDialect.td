//===- CodegenDialect.td - lowering configuration ----------*- tablegen -*-===//
//
// What the compiler decided for the machine, kept apart from the graph
// (tfm, which knows nothing of CPUs): register tiles, prefetch, the frame
// plan. Passes set these as discardable attributes on tfm ops; the
// backends follow them and refuse an op that lacks one it needs.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_DIALECT_TD
#define TFM_CODEGEN_DIALECT_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def TfmCodegen_Dialect : Dialect {
  let name = "tfm_codegen";
  let cppNamespace = "::mlir::tfm::codegen";
  let summary = "How tfm ops are lowered: tiles, prefetch, the frame plan";
  let description = [{
    The lowering configuration of `tfm` ops, set by the selection and
    planning passes as discardable attributes, as IREE keeps its lowering
    configs apart from its input ops:

    - `tfm_codegen.gemm_tiling` on a `tfm.linear` (`--tfm-select-gemm-tiling`),
    - `tfm_codegen.attention_tiling` on a dot-product `tfm.attention`
      (`--tfm-select-attention-tiling`),
    - `tfm_codegen.frame` on an op (its `#tfm_codegen.slot` list),
      `tfm_codegen.frame_floats` on a function and `tfm_codegen.in_place` on
      a `tfm.rotary` (`--tfm-plan-memory`).

    The Highway backend follows them; where one it needs is missing, it
    reports a compile error rather than choosing for itself. Which scratch
    buffers an op's code takes is declared by the op
    (`ScratchBuffersOpInterface`, attached to the tfm ops by this dialect)
    and planned from there.
  }];
  let dependentDialects = ["::mlir::tfm::TfmDialect"];
  let discardableAttrs = (ins
    "::mlir::tfm::codegen::GemmTilingAttr":$gemm_tiling,
    "::mlir::tfm::codegen::AttentionTilingAttr":$attention_tiling,
    "::mlir::ArrayAttr":$frame,
    "::mlir::IntegerAttr":$frame_floats,
    "::mlir::UnitAttr":$in_place
  );
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
  private:
    void attachScratchBufferModels();
  public:
  }];
}

def TfmCodegen_GemmPrefetch : I32EnumAttr<"GemmPrefetch",
    "what a GEMM's tiles prefetch of the next weight panel", [
    I32EnumAttrCase<"None", 0, "none">,
    // The last row block of a panel: the whole next panel, into L1.
    I32EnumAttrCase<"L1", 1, "l1">,
    // Every row block of a panel: its share of the next panel's lines,
    // into L2.
    I32EnumAttrCase<"L2", 2, "l2">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tfm::codegen";
}

def TfmCodegen_FrameBuffer : I32EnumAttr<"FrameBuffer",
    "what a frame slot holds", [
    // One of the op's results (its number is the slot's `index`).
    I32EnumAttrCase<"Result", 0, "result">,
    // Dot-product scores: the keys transposed, [B, H, dk, Sk], unless a
    // cache holds them so.
    I32EnumAttrCase<"KeysTransposed", 1, "keys_transposed">,
    // Bilinear scores: the queries times W, [B, H, Sq, dk].
    I32EnumAttrCase<"BilinearQueries", 2, "bilinear_queries">,
    // Additive scores: the keys and queries projected, [B, H, S, a].
    I32EnumAttrCase<"AdditiveKeys", 3, "additive_keys">,
    I32EnumAttrCase<"AdditiveQueries", 4, "additive_queries">,
    // Rotary: the cos and sin of every position's angles, [S, dk / 2].
    I32EnumAttrCase<"RotaryCos", 5, "rotary_cos">,
    I32EnumAttrCase<"RotarySin", 6, "rotary_sin">,
    // Linear attention (performer): each (sequence, head)'s sums over the
    // keys' features, [B, H, M, dv + 1] (M rows of products with V, then
    // the features summed).
    I32EnumAttrCase<"FeatureSums", 7, "feature_sums">,
    // Feature map (performer): the features' weights W_h transposed,
    // [H, dk, M], so that a register tile of a block of rows takes the
    // features along its lanes.
    I32EnumAttrCase<"FeaturesTransposed", 8, "features_transposed">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tfm::codegen";
}

def TfmCodegen_GemmTilingAttr : AttrDef<TfmCodegen_Dialect, "GemmTiling"> {
  let mnemonic = "gemm_tiling";
  let summary = "a GEMM's register tile and the order it takes its weight's panels";
  let description = [{
    Chosen by `--tfm-select-gemm-tiling` for each SIMD target's register
    file, the machine's caches and the GEMM's rows; the Highway backend
    follows it (the generated C++ is compiled for every target it may run
    on, and each target reads its own fields). A GEMM's weight is packed,
    once after loading, in panels of `cols` output columns (every k) for
    the target that runs, and C is computed in register tiles of `rows`
    rows by one panel, each tile one task of the thread pool's parallel
    loop (the tasks, and so the results, do not depend on the number of
    threads):

    - `rows512`/`cols512`, `rows256`/`cols256`, `rows128`/`cols128`: the
      register tile where the code runs with 512-, 256- or 128-bit vectors.
      Rows 1 to 16; columns a whole number of vectors (16, 8 or 4 lanes)
      from one to four: the width of the panels the weight is packed in
      for that target (GEMMs that read one weight in different widths read
      one packed copy each). A tile has rows x cols / lanes
      accumulators and holds cols / lanes panel vectors and one broadcast
      value beside them: past the register file (32 vectors on AVX-512, 16
      below) they spill (correct, slower).
    - `l2Columns`: 0, the tiles go panel by panel over all row blocks; else
      in blocks of that many weight columns (a multiple of every target's
      `cols`), each block's panels over all row blocks, so a row block of
      the input is read from memory once per block while the block's panels
      stay in L2.
    - `prefetch512`, `prefetch256`, `prefetch128`, panel by panel, where
      the code runs with 512-, 256- or 128-bit vectors (each target's panel
      its own width): `l1`, the last row block of a panel prefetches the
      whole next panel into L1; `l2`, every row block prefetches its share
      of the next panel's lines into L2, so the next panel's first tile
      does not wait for memory; or `none`.

    ```mlir
    %y = tfm.linear %x, %w, %b {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = l2, prefetch256 = l1, prefetch128 = l1>} : ...
    ```
  }];
  let parameters = (ins "int64_t":$rows512, "int64_t":$cols512,
                        "int64_t":$rows256, "int64_t":$cols256,
                        "int64_t":$rows128, "int64_t":$cols128,
                        "int64_t":$l2Columns,
                        EnumParameter<TfmCodegen_GemmPrefetch>:$prefetch512,
                        EnumParameter<TfmCodegen_GemmPrefetch>:$prefetch256,
                        EnumParameter<TfmCodegen_GemmPrefetch>:$prefetch128);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TfmCodegen_AttentionTilingAttr
    : AttrDef<TfmCodegen_Dialect, "AttentionTiling"> {
  let mnemonic = "attention_tiling";
  let summary = "the tiles of a blocked attention: query rows per task, keys per block";
  let description = [{
    Chosen by `--tfm-select-attention-tiling` for the register file and the
    keys a block of query rows sees; the Highway backend follows it.
    Dot-product attention (`dot`, `scaled_dot`, `bilinear`) is computed in
    tasks of a few query rows of one head, one task per thread-pool index
    (batch x heads x query groups: the tasks, and so the results, do not
    depend on the number of threads); a task takes the keys a block at a
    time: the block's scores for all its rows, one online-softmax update
    per row, one pass over the block's value rows for all rows.

    - `queryRows512`, `queryRows256`, `queryRows128`: the query rows of a
      task where the code runs with 512-, 256- or 128-bit vectors (the
      generated C++ is compiled for each SIMD target it may run on), 1 to
      16. Each key and value vector loaded serves all of them.
    - `keyBlock`: keys per block, a multiple of 16 (a whole number of
      vectors on every target) from 16 to 1024. A task's scores take
      query rows x keyBlock floats on its stack.

    ```mlir
    #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>
    ```
  }];
  let parameters = (ins "int64_t":$queryRows512, "int64_t":$queryRows256,
                        "int64_t":$queryRows128, "int64_t":$keyBlock);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TfmCodegen_FrameSlotAttr : AttrDef<TfmCodegen_Dialect, "FrameSlot"> {
  let mnemonic = "slot";
  let summary = "a buffer's place in its function's frame";
  let description = [{
    Set by `--tfm-plan-memory`; the Highway backend follows it. Each
    function takes one frame of `tfm_codegen.frame_floats` floats from the
    model's arena per call; an op's `tfm_codegen.frame` lists, in the order
    its code takes them, the buffers it needs there: its results (`result`,
    with the result's number as `index` when it is not 0) and the scratch
    buffers the op declares (`ScratchBuffersOpInterface`: `keys_transposed`,
    `rotary_cos`, ...). `offset` and `floats` count floats from the frame's
    start; offsets are whole 64-byte lines.

    ```mlir
    #tfm_codegen.slot<result, offset = 0, floats = 2048>
    #tfm_codegen.slot<result, index = 1, offset = 2048, floats = 2048>
    #tfm_codegen.slot<keys_transposed, offset = 4096, floats = 512>
    ```
  }];
  let parameters = (ins EnumParameter<TfmCodegen_FrameBuffer>:$buffer,
                        DefaultValuedParameter<"int64_t", "0">:$index,
                        "int64_t":$offset, "int64_t":$floats);
  let assemblyFormat = "`<` $buffer `,` struct($index, $offset, $floats) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// How diagnostics name the slot: `result 1`, `keys_transposed`.
    std::string describe() const;
  }];
}

#endif // TFM_CODEGEN_DIALECT_TD
