//===- Passes.td - tfm passes -------------------------------*- tablegen -*-===//
//
// The passes tfm-compile runs between the frontend and a backend (the
// `tfm-optimize` pipeline); each one runs alone in tfm-opt.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TRANSFORMS_PASSES_TD
#define TFM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfmDecomposeAttention : Pass<"tfm-decompose-attention"> {
  let summary = "every multi-head attention as projections, heads, cache "
                "accesses and one attention core";
  let description = [{
    Rewrites each `tfm.multi_head_attention`, whatever its form, into the
    ops the backends lower (the graph-level op is gone after this pass):

    - Projections as `tfm.linear`: self-attention's Q, K and V as one GEMM
      over the stacked `in_proj_weight` (`[..., seq, 3*d]`, the input read
      once); cross-attention's Q over the weight's first `d` rows and the
      memory's K and V as one GEMM over the other `2*d`
      (`tfm.slice_rows` picks them).
    - `tfm.split_heads ... part P of N`: each head's queries, keys and
      values where the GEMM put them (the backends read them in place).
    - Rotary positions (`rope`) as `tfm.rotary` of Q and K, offset by the
      cache position in a decode step.
    - A key/value cache as explicit accesses: `tfm.cache_append` of the new
      keys and values at the position, then `tfm.cache_read` of every
      position the cache holds (a read-only cache: its first `position`).
    - One `tfm.attention` core (scores, causal mask with the queries'
      offset in the cache, softmax, product with V), which the backends run
      without storing the score matrix; then `tfm.merge_heads` and the
      out_proj `tfm.linear`.

    With `remarks=true`, each rewrite is reported with what it became.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect"];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report each rewrite as an MLIR remark">,
  ];
}

def TfmDecomposeMamba : Pass<"tfm-decompose-mamba"> {
  let summary = "every Mamba mixer as GEMMs, its causal conv and its scan";
  let description = [{
    Rewrites each `tfm.mamba_mixer` into the ops the backends lower:

    - in_proj as two `tfm.linear`s over its halves (`tfm.slice_rows`): the
      scan's input u and its gate z, each a GEMM of its own;
    - `tfm.causal_conv1d`: the depthwise conv, its bias and the SiLU in one
      pass over u (the window carried in the mixer's state in a decode step);
    - x_proj as three `tfm.linear`s over its dt, B and C rows, then dt_proj
      (with its bias) over dt: the scan's step sizes before softplus;
    - `tfm.selective_scan`: softplus, the discretisation, the recurrence
      over the sequence, C . h, the D skip and the SiLU(z) gate, fused (the
      state carried in a decode step);
    - out_proj as a `tfm.linear` (a residual add after it fuses into its
      store in `--tfm-fuse-epilogue`).

    With `remarks=true`, each rewrite is reported with what it became.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect"];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report each rewrite as an MLIR remark">,
  ];
}

def TfmFuseResidualNorm : Pass<"tfm-fuse-residual-norm"> {
  let summary = "fuse a residual tfm.add and the tfm.layer_norm of its sum";
  let description = [{
    Rewrites `%s = tfm.add %a, %b` followed by `tfm.layer_norm %s` into one
    `tfm.add_layer_norm %a, %b`, which normalises each row as it sums it
    (the sum is written once and not read back from memory). The sum stays
    a result for the other readers of `%s`: in a pre-norm layer the next
    residual connection reads it.

    Not fused, with the reason as a remark (`remarks=true`): a layer norm
    whose input is not a `tfm.add`, and a `tfm.add` whose sum no layer norm
    reads; also a pair whose norm weights are defined after the sum's other
    readers, which no single position could serve.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect"];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report each fusion done and not done as an MLIR remark">,
  ];
}

def TfmFuseEpilogue : Pass<"tfm-fuse-epilogue"> {
  let summary = "fuse activations and residual adds into the GEMM that "
                "makes their input";
  let description = [{
    Work that reads a GEMM's result element by element is done as each
    tile of the result is stored, while it is in cache, instead of in
    another pass over memory:

    - A `tfm.ffn` becomes two `tfm.linear`s, the first with its
      `activation` as an epilogue: the hidden layer is written once,
      activated.
    - A `tfm.add` of a `tfm.linear`'s result (read by that add only) and
      another tensor becomes the linear with `residual` set to the other
      tensor: the residual connection is added as the tile is stored.

    Runs after `tfm-fuse-residual-norm`: a sum that a layer norm reads is
    better fused there (sum and norm in one pass over the row).

    Not fused, with the reason as a remark (`remarks=true`): an add neither
    of whose operands is a `tfm.linear` read by it alone, or whose linear
    already adds a residual.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect"];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report each fusion done and not done as an MLIR remark">,
  ];
}

def TfmSelectGemmTiling : Pass<"tfm-select-gemm-tiling"> {
  let summary = "choose each tfm.linear's register tile and, for the "
                "machine's caches, the order it takes its packed weight's "
                "panels";
  let description = [{
    Sets `tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = R,
    cols512 = C, ..., l2Columns = N, prefetch512 = P, ...>` on every
    `tfm.linear`
    and `tfm.grouped_linear` (the Highway
    backend follows it; tfm-compile runs this pass after `tfm-optimize` for
    that backend, with the CPU's cache sizes):

    - The register tile with 512-, 256- and 128-bit vectors: two vectors
      of columns (the width its weight is packed in there) and as many rows
      as fit beside them in the register file (32 registers with AVX-512,
      16 below), at most 8 and at most the GEMM's rows: 8 x 32, 6 x 16 and
      6 x 8 for most GEMMs, one row for a GEMM of one row.

    - L2 blocks where the GEMM's rows (at most `tfm.max_batch` x
      `tfm.max_seq_len` of the module for dynamic dimensions, times the
      depth; for a `tfm.grouped_linear`, the rows a group has when the
      routing is balanced, tokens x slots / groups, while its register
      tiles are sized for all the tokens) do not fit in half of L2: as many
      panels as fill that half, each block over all row blocks, so the rows
      are read from memory once per block instead of once per panel. Else
      panel by panel.
    - Panel by panel, the prefetch of the next panel, for each target its
      own panel width (`prefetch512`, `prefetch256`, `prefetch128`): `l1`
      (the last row block takes all of it into L1) where one and a half
      panels fit in L1 with 512-bit vectors, one panel with narrower ones
      (whose tiles read half the panel bytes a step; measured), since the
      hardware prefetcher has no time to ramp up on short panels; else `l2` (every row block takes its share of the next
      panel's lines into L2, so the next panel's first tile does not wait
      for memory) where two panels and the target's register tile's rows
      fit in L2; else `none`.

    Not touched, with the reason as a remark (`remarks=true`): a linear
    that already has a tiling, one whose weight has no static, non-empty
    shape, and one in a module without `tfm.max_batch` and
    `tfm.max_seq_len` whose rows have a dynamic dimension (their maximum is
    unknown). With `remarks=true`, every choice is reported with
    its reasons.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect",
                           "mlir::tfm::codegen::TfmCodegenDialect"];
  let options = [
    Option<"l1Bytes", "l1-bytes", "int64_t",
           /*default=*/"::mlir::tfm::CacheSizes().l1Bytes",
           "the L1 data cache, in bytes (default: 48 KiB)">,
    Option<"l2Bytes", "l2-bytes", "int64_t",
           /*default=*/"::mlir::tfm::CacheSizes().l2Bytes",
           "the L2 cache, in bytes (default: 1 MiB)">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report each choice, and each linear left alone, as an MLIR "
           "remark">,
  ];
}

def TfmSelectAttentionTiling : Pass<"tfm-select-attention-tiling"> {
  let summary = "choose each blocked tfm.attention's query rows per task "
                "and keys per block";
  let description = [{
    Sets `tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<
    queryRows512 = R, queryRows256 = R', queryRows128 = R'', keyBlock = B>`
    on every `tfm.attention`
    with dot-product scores (`dot`, `scaled_dot`, `bilinear`; the Highway
    backend follows it; tfm-compile runs this pass after `tfm-optimize` for
    that backend):

    - The query rows a task scores together with 512-, 256- and 128-bit
      vectors: each key and value vector loaded serves all of them; the
      kernels keep rows x vectors accumulators within half the register
      file: 8 rows with AVX-512 (x 2 vectors of keys), 2 below (x 4), at
      most the sequence's bound (its static size, else the module's
      `tfm.max_seq_len`). A task is one head's group of query rows: the
      thread pool's tasks follow from it, whatever the thread count.
    - Keys per block: 64 (one online-softmax update per row and block), or
      rounded up to a multiple of 16, the most keys a task's query rows see
      where fewer: the keys' bound (a static length, a cache's `maxSeq`,
      else `tfm.max_seq_len`), narrowed by the mask's key span
      (`KeySpan::maxKeysOfBlock`: a window sees fewer keys; `causal` sees
      them all).

    Not touched, with the reason as a remark (`remarks=true`): an attention
    that already has a tiling, and one with additive scores (taken one key
    at a time). With `remarks=true`, every choice is reported with its
    reasons.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect",
                           "mlir::tfm::codegen::TfmCodegenDialect"];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report each choice, and each attention left alone, as an MLIR "
           "remark">,
  ];
}

def TfmSelectWeightFormat : Pass<"tfm-select-weight-format",
                                  "::mlir::ModuleOp"> {
  let summary = "mark the GEMM weights a model keeps in bf16, f16 or int8";
  let description = [{
    `tfm-compile --weight-dtype` (contract section 10): sets `format` on the
    `tfm.param` of every GEMM weight, a rank-2 weight read as a matrix
    product's second operand: the in/out projections of
    `tfm.multi_head_attention`, the linears of `tfm.ffn`, the experts of
    `tfm.moe` and `tfm.grouped_linear`, and the weight of any other
    `tfm.linear` (the LM head, whose tied table is then converted for the
    token lookups too). The router's `tfm.linear` (the one
    `tfm.route_experts` reads: the MoE gate) stays f32, and so does every
    weight no product reads that way (biases, norms, embedding tables
    nothing multiplies, positional tables, score parameters, linformer's
    projections, performer's features). A weight is followed from the
    product back to its `tfm.param` through `tfm.slice_rows` and through
    the arguments of the functions that take it (the layer functions). It
    runs on graph-level or decomposed IR alike; tfm-compile runs it on the
    frontend's IR, so `--emit=mlir` shows the formats.

    `format=f32` (the default) changes nothing. With `remarks=true`, one
    remark says how many weights (and floats) it marked.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect"];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"f32\"",
           "f32 (nothing marked), bf16, f16 or int8">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report what was marked as an MLIR remark">,
  ];
}

def TfmSelectGemmPrecision : Pass<"tfm-select-gemm-precision"> {
  let summary = "the precision each GEMM reads its operands in";
  let description = [{
    Sets `weight_format` on every `tfm.linear` and `tfm.grouped_linear`
    whose weight's `tfm.param`s (followed back through `tfm.slice_rows` and
    the layer functions' arguments) have a `format`
    (`tfm-select-weight-format`): the format the backend's packed panels
    can keep them in. Weights of one GEMM kept in different formats are an
    error (one kernel reads them all).

    `tfm-compile --compute=bf16` (contract section 10): also sets `bf16_inputs`
    on every `tfm.linear` and `tfm.grouped_linear` but the router's (the
    `tfm.linear` whose logits `tfm.route_experts` reads, which stays f32,
    as its weight does under `--weight-dtype`): both operands are rounded
    to bf16 before the products, which are summed in f32. Attention cores,
    norms and softmax stay f32. Runs on decomposed IR (after
    `tfm-optimize`, where the GEMMs are `tfm.linear` ops); tfm-compile runs
    it before the backends' tiling.

    With `compute=f32` (the default) no GEMM gets `bf16_inputs`. With
    `remarks=true`, one remark per function says how many GEMMs have bf16
    inputs.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect"];
  let options = [
    Option<"compute", "compute", "std::string", /*default=*/"\"f32\"",
           "f32 (nothing marked) or bf16">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report what was marked as an MLIR remark">,
  ];
}

def TfmPlanMemory : Pass<"tfm-plan-memory", "::mlir::ModuleOp"> {
  let summary = "give every buffer of each function a static place in one "
                "frame, reusing the space of dead ones";
  let description = [{
    Memory planning for the Highway backend (tfm-compile runs it last for
    that backend; the backend follows the plan). Each call of a function
    takes one frame from the model's arena: this pass sizes it and places
    in it, at the compiled maxima (`tfm.max_batch`, `tfm.max_seq_len` of
    the module for dynamic batch and sequence dimensions), every buffer the
    function's code needs:

    - each op's results, from the op to the last op that reads them (the
      function's own results are its caller's, not in its frame);
    - the scratch an op's code uses while it runs, as the op declares it
      (`ScratchBuffersOpInterface` of the tfm_codegen dialect): the
      transposed keys (unless a cache holds them so), rotary tables, the
      projected or folded queries and keys of additive and bilinear scores.

    Views take no buffer and keep the one they view alive:
    `tfm.split_heads`, `tfm.merge_heads` (of a `tfm.attention`, which
    stores its heads merged), `tfm.slice_rows`, `tfm.cache_read`, and a
    `tfm.rotary` this pass marks `tfm_codegen.in_place` (its rows are read by
    nothing else: they are rotated where the GEMM wrote them).

    First fit over the free ranges, in program order; every buffer starts
    on a 64-byte line. The plan is `tfm_codegen.frame =
    [#tfm_codegen.slot<...>, ...]` on each op, in the order its code takes
    the buffers, and `tfm_codegen.frame_floats` on the function. The peak of the arena (the deepest
    chain of frames through calls) is what `tfm-compile -v` reports.

    Not touched, with the reason as a remark (`remarks=true`): a function
    that already has `tfm_codegen.frame_floats` (planned before, or by hand), and,
    in a module without positive `tfm.max_batch` and `tfm.max_seq_len`,
    every function (dynamic sizes have no maximum). With `remarks=true`
    each plan is reported with its frame size and how much reuse saved.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect",
                           "mlir::tfm::codegen::TfmCodegenDialect"];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report each function's frame, and each one left alone, as an "
           "MLIR remark">,
  ];
}

#endif // TFM_TRANSFORMS_PASSES_TD
