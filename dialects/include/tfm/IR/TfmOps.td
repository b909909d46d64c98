//===- TfmOps.td - tfm operations --------------------------*- tablegen -*-===//
//
// Shape rules live in the C++ verifiers and inferReturnTypes (TfmOps.cpp);
// each one has a negative test in test/lit/dialect/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_OPS_TD
#define TFM_OPS_TD

include "tfm/IR/TfmDialect.td"
include "tfm/IR/TfmEnums.td"
include "tfm/IR/TfmInterfaces.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tfm_KVCacheType : TypeDef<Tfm_Dialect, "KVCache",
    [Tfm_StateBufferTypeInterface]> {
  let mnemonic = "kv_cache";
  let summary = "the keys and values of one attention, kept across calls";
  let description = [{
    Storage for incremental decoding: the keys and values of every position
    seen so far, for up to `maxBatch` sequences of `maxSeq` positions, per
    head. Values of this type are handles to one `tfm.kv_cache` declaration;
    `tfm.cache_append` writes new positions into it and `tfm.cache_read`
    views the positions written so far.

    The type defines the layout, which every backend and the runtime share:
    one buffer of `2 x maxBatch x heads x slots x headDim` floats (`slots`
    = `maxSeq`, fewer with a window), the keys first, transposed
    (`[maxBatch, heads, headDim, slots]`: a block of keys' dot products with
    a query are `headDim` vector FMAs along positions), then the values as
    rows (`[maxBatch, heads, slots, headDim]`).

    With `window = W` (a sliding window, `globals = G` its global tokens)
    the cache keeps only the positions a later call can attend:
    the first G, and the last W before the call (a ring). Its `slots` are
    G + W instead of `maxSeq`: position j < G is in slot j, a later one in
    slot G + (j - G) mod W, the latest position written there. A window
    that keeps every position (G + W >= maxSeq) is no window: leave it out.
    `tfm.cache_window` reads such a cache, `tfm.cache_append` writes it.

    With `features = M` (performer's causal linear attention) the cache
    keeps what its attention needs of the keys and values instead of the
    positions: their sums over the positions seen so far (up to `maxSeq`),
    a fixed size at any position. For each sequence and (query) head, `M`
    rows of `headDim` floats (sum_j phi(k_j)[m] v_j), then the `M` sums of
    the features (sum_j phi(k_j)): `M x (headDim + 1)` floats.
    `tfm.linear_attention`'s `sums` reads and updates it;
    `tfm.cache_append` and `tfm.cache_read` take only caches of positions.

    ```mlir
    !tfm.kv_cache<maxBatch = 1, heads = 12, maxSeq = 1024, headDim = 64>
    !tfm.kv_cache<maxBatch = 1, heads = 12, maxSeq = 1024, headDim = 64, features = 256>
    !tfm.kv_cache<maxBatch = 1, heads = 12, maxSeq = 4096, headDim = 64, window = 256, globals = 2>
    ```
  }];
  let parameters = (ins "int64_t":$maxBatch, "int64_t":$heads,
                        "int64_t":$maxSeq, "int64_t":$headDim,
                        DefaultValuedParameter<"int64_t", "0">:$features,
                        OptionalParameter<"std::optional<int64_t>">:$window,
                        DefaultValuedParameter<"int64_t", "0">:$globals);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether it holds feature sums (performer) rather than positions.
    bool holdsFeatureSums() const { return getFeatures() > 0; }
    /// Whether it keeps only a sliding window's positions (a ring).
    bool isWindowed() const { return getWindow().has_value(); }
    /// Positions one sequence and head keeps: G + W in a ring, else maxSeq.
    int64_t getSlots() const {
      return isWindowed() ? getGlobals() + *getWindow() : getMaxSeq();
    }
    /// Floats of one sequence and head's feature sums.
    int64_t getSumsFloats() const {
      return getFeatures() * (getHeadDim() + 1);
    }
    /// Strides, in floats, of sum element (sequence, head, feature, value
    /// column), from the buffer's start.
    std::array<int64_t, 4> getSumsStrides() const {
      return {getHeads() * getSumsFloats(), getSumsFloats(), getHeadDim(), 1};
    }
    /// Where the first feature sum (sum_j phi(k_j)[0] of sequence 0, head
    /// 0) is, in floats from the buffer's start, and the strides of
    /// feature-sum element (sequence, head, feature).
    int64_t getFeatureSumsOffset() const {
      return getFeatures() * getHeadDim();
    }
    std::array<int64_t, 3> getFeatureSumsStrides() const {
      return {getHeads() * getSumsFloats(), getSumsFloats(), 1};
    }
    /// Floats of the whole buffer, keys and values (or their sums).
    int64_t getFloats() const {
      if (holdsFeatureSums())
        return getMaxBatch() * getHeads() * getSumsFloats();
      return 2 * getMaxBatch() * getHeads() * getSlots() * getHeadDim();
    }
    /// Where the values start, in floats from the buffer's start (the keys
    /// start at 0).
    int64_t getValuesOffset() const { return getFloats() / 2; }
    /// Strides, in floats, of key element (sequence, head, slot, feature)
    /// and of value element (the same).
    std::array<int64_t, 4> getKeyStrides() const {
      return {getHeads() * getHeadDim() * getSlots(),
              getHeadDim() * getSlots(), 1, getSlots()};
    }
    std::array<int64_t, 4> getValueStrides() const {
      return {getHeads() * getSlots() * getHeadDim(),
              getSlots() * getHeadDim(), getHeadDim(), 1};
    }
  }];
}


def Tfm_MambaStateType : TypeDef<Tfm_Dialect, "MambaState",
    [Tfm_StateBufferTypeInterface]> {
  let mnemonic = "mamba_state";
  let summary = "a Mamba mixer's conv window and scan state, kept across calls";
  let description = [{
    What a Mamba mixer carries from one call to the next in incremental
    decoding, for up to `maxBatch` sequences: the last `convWidth - 1`
    inputs of its causal depthwise convolution (`channels` = d_inner each)
    and the selective scan's state h (`stateSize` = d_state per channel).
    Its size does not depend on the position: a decode step costs the same
    at any position. Declared with `tfm.kv_cache` like a key/value cache;
    `tfm.causal_conv1d` and `tfm.selective_scan` read and update it.

    The type defines the layout, which every backend shares: first the
    conv windows, `[maxBatch, convWidth - 1, channels]` (oldest input
    first), then the scan states, `[maxBatch, stateSize, channels]` (a
    state's channels contiguous: the scan's vectors run across channels).

    ```mlir
    !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 16>
    ```
  }];
  let parameters = (ins "int64_t":$maxBatch, "int64_t":$channels,
                        "int64_t":$convWidth, "int64_t":$stateSize);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Floats of one sequence's conv window and of its scan state.
    int64_t getWindowFloats() const {
      return (getConvWidth() - 1) * getChannels();
    }
    int64_t getScanFloats() const { return getStateSize() * getChannels(); }
    /// Where the scan states start, in floats from the buffer's start (the
    /// conv windows start at 0).
    int64_t getScanOffset() const { return getMaxBatch() * getWindowFloats(); }
    int64_t getFloats() const {
      return getMaxBatch() * (getWindowFloats() + getScanFloats());
    }
  }];
}

def Tfm_StateBuffer : Type<
    CPred<"::llvm::isa<::mlir::tfm::StateBufferTypeInterface>($_self)">,
    "a buffer kept across calls (!tfm.kv_cache or !tfm.mamba_state)",
    "::mlir::tfm::StateBufferTypeInterface">;

def Tfm_MaskAttr : AttrDef<Tfm_Dialect, "Mask"> {
  let mnemonic = "mask";
  let summary = "which keys each query row of an attention sees";
  let description = [{
    The attention mask as rules, one structured description that both
    backends, the FLOP count and the attention-tiling pass read through
    one helper, `getKeySpan()`: the keys query row `i` (at
    position `offset + i` among the keys) attends to, as bounds affine in
    `i` and `offset`, clamped to the keys there are. An attention without a
    mask sees every key.

    - `causal`: keys `0 ..= offset + i` (none after the query's own
      position).
    - `window W` (W >= 0, Longformer's sliding window): keys
      `offset + i - W ..= offset + i + W`, with `causal` up to
      `offset + i`.
    - `global G` (G >= 1, with a window: Longformer's global tokens): the
      first G positions attend and are attended both ways: every row sees
      the keys `0 .. G`, and a row at a position below G sees every key
      (with `causal`, up to its own). A key reached by two rules counts
      once.

    - `block B` (B >= 1, BigBird's block sparsity): the positions in
      blocks of B (the last may be partial), and `window` and `global`
      count blocks: query block `qb = (offset + i) / B` sees the key
      blocks `qb - W ..= qb + W` and the first G blocks, and a row of the
      first G blocks sees every key. `window` is required with `block`.
    - `random R` (R >= 1, with `block`): also the key blocks of row `qb`
      of the attention's `block_pattern` operand (`[rows, R]`, block ids
      as floats; ids outside `[0, ceil(keys / B))` are ignored), read at
      run time.

    A backend visits only the key blocks the spans allow: the window's
    band, the global keys as a block of their own, the global rows as rows
    of every key, the pattern's blocks one by one. On the attention ops the
    mask is written by its rules (`... causal window 4 global 1 ...`);
    standalone:

    ```mlir
    #tfm.mask<causal>
    #tfm.mask<window 4, global 1>
    #tfm.mask<causal, window 0>
    #tfm.mask<block 64, window 1, global 1, random 3>
    ```
  }];
  let parameters = (ins "bool":$causal,
                        OptionalParameter<"std::optional<int64_t>">:$window,
                        OptionalParameter<"std::optional<int64_t>">:$globalTokens,
                        OptionalParameter<"std::optional<int64_t>">:$block,
                        OptionalParameter<"std::optional<int64_t>">:$randomBlocks);
  let builders = [
    AttrBuilder<(ins "bool":$causal,
                     CArg<"std::optional<int64_t>", "std::nullopt">:$window,
                     CArg<"std::optional<int64_t>", "std::nullopt">:$globalTokens,
                     CArg<"std::optional<int64_t>", "std::nullopt">:$block,
                     CArg<"std::optional<int64_t>", "std::nullopt">:$randomBlocks), [{
      return $_get($_ctxt, causal, window, globalTokens, block, randomBlocks);
    }]>
  ];
  let skipDefaultBuilders = 1;
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The keys query row `i` attends to, for every row.
    ::mlir::tfm::KeySpan getKeySpan() const;
  }];
}

def Tfm_Tensor : RankedTensorOf<[F32]>;
def Tfm_TokenTensor : RankedTensorOf<[I32, I64]>;
def Tfm_IndexTensor : RankedTensorOf<[I32]>;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def Tfm_ParamOp : Tfm_Op<"param", [Symbol, HasParent<"ModuleOp">]> {
  let summary = "declares a model weight by its state_dict name";
  let description = [{
    Declares one weight tensor of the model, named exactly as PyTorch's
    `state_dict()` names it (e.g. `layers.0.self_attn.in_proj_weight`), with
    its static shape. The weights file must provide a tensor of that name and
    shape. Functions read it with `tfm.weight`.

    `alias` names another tensor a weights file may provide instead: an
    encoder-decoder's `src_embed.weight` and `tgt_embed.weight` both accept a
    single shared `embed.weight`.

    `sources` says where a checkpoint in another layout (a Hugging Face
    folder) keeps the weight: the file's tensors of those names, stacked
    along the first dimension in that order (LLaMA's q_proj, k_proj and
    v_proj make in_proj_weight). With `transposed`, each source is stored
    transposed (`[in, out]`, GPT-2's Conv1D). The weight's own name is then
    not looked up in the file.

    With `block_ids`, the file holds integer ids (int32 or int64, not
    floats): key-block ids of BigBird's `block_pattern`, `[rows, R]`. They
    are loaded as floats, every id outside `[0, rows)` as -1 (no block), so
    each value is exact.

    `format` (tfm-select-weight-format, `tfm-compile --weight-dtype`) is
    the format the compiled model keeps a GEMM weight's values in: they are
    converted once, at load, from whatever the file holds (bf16 and f16
    rounded to nearest even, int8 in blocks of 32 columns with a scale
    each); the computation reads the converted values. Without it the
    weight stays f32.

    ```mlir
    tfm.param @"layers.0.self_attn.block_pattern" {block_ids} : tensor<8x3xf32>
    tfm.param @"layers.0.linear2.weight" {format = #tfm.weight_format<int8>} : tensor<32x64xf32>
    tfm.param @"layers.0.linear1.weight" : tensor<64x32xf32>
    tfm.param @"src_embed.weight" {alias = "embed.weight"} : tensor<100x32xf32>
    tfm.param @"layers.0.linear1.weight" {sources = ["model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"]} : tensor<128x32xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttr:$type,
                       OptionalAttr<StrAttr>:$alias,
                       OptionalAttr<StrArrayAttr>:$sources,
                       UnitAttr:$transposed, UnitAttr:$block_ids,
                       OptionalAttr<Tfm_WeightFormatAttr>:$format);
  let builders = [
    // A weight under its own name (or its alias) in the weights file.
    OpBuilder<(ins "StringAttr":$sym_name, "TypeAttr":$type,
                   CArg<"StringAttr", "{}">:$alias), [{
      build($_builder, $_state, sym_name, type, alias, /*sources=*/ArrayAttr(),
            /*transposed=*/UnitAttr(), /*block_ids=*/UnitAttr(),
            /*format=*/WeightFormatAttr());
    }]>
  ];
  let assemblyFormat = "$sym_name attr-dict `:` $type";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Tfm_WeightOp : Tfm_Op<"weight",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a weight declared by tfm.param";
  let description = [{
    The value of the `tfm.param` named by `$param`. The result type must equal
    the declared type.

    ```mlir
    %w = tfm.weight @"layers.0.linear1.weight" : tensor<64x32xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = "$param attr-dict `:` type($result)";
}

def Tfm_KVCacheDeclOp : Tfm_Op<"kv_cache", [Symbol, HasParent<"ModuleOp">]> {
  let summary = "declares the state one block keeps across calls";
  let description = [{
    One attention's key/value cache for incremental decoding (or a Mamba
    mixer's conv window and scan state, `!tfm.mamba_state`), allocated once
    with the model and kept across calls. Functions get a handle to it with
    `tfm.cache`.

    ```mlir
    tfm.kv_cache @"layers.0.self_attn.cache"
        : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>
    tfm.kv_cache @"layers.1.mixer.state"
        : !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Tfm_StateBuffer>:$type);
  let assemblyFormat = "$sym_name attr-dict `:` $type";
  let hasVerifier = 1;
}

def Tfm_CacheOp : Tfm_Op<"cache",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a handle to a cache declared by tfm.kv_cache";
  let description = [{
    ```mlir
    %c = tfm.cache @"layers.0.self_attn.cache"
        : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Tfm_StateBuffer:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Tfm_TakeLastOp : Tfm_Op<"take_last", [Tfm_SizedResultsOpInterface,
     Pure, InferTypeOpAdaptor]> {
  let summary = "the last position of each sequence: [..., seq, d] -> [..., 1, d]";
  let description = [{
    What generation needs of a prefill: only the last position's logits.

    ```mlir
    %last = tfm.take_last %h : tensor<?x?x32xf32> -> tensor<?x1x32xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Embeddings and positions
//===----------------------------------------------------------------------===//

def Tfm_EmbeddingOp : Tfm_Op<"embedding", [Tfm_SizedResultsOpInterface,
     Pure, InferTypeOpAdaptor]> {
  let summary = "token embedding lookup";
  let description = [{
    Looks up each token id in `table` (`[vocab_size, d_model]`) and multiplies
    the row by `scale` (1 by default; `sqrt(d_model)` for `embedding_scale`).
    The result has the shape of `ids` with `d_model` appended. Ids outside
    `[0, vocab_size)` are a run-time input error, not undefined behaviour.

    ```mlir
    %e = tfm.embedding %ids, %table {scale = 5.65685415 : f32}
        : (tensor<?x?xi32>, tensor<100x32xf32>) -> tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Tfm_TokenTensor:$ids, Tfm_Tensor:$table,
                       DefaultValuedAttr<F32Attr, "1.0">:$scale);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` functional-type(operands, results)
  }];
}

def Tfm_PositionEncodingOp : Tfm_Op<"position_encoding",
    [Tfm_SizedResultsOpInterface,
     Pure, AllTypesMatch<["input", "result"]>, AttrSizedOperandSegments]> {
  let summary = "adds absolute positional encodings to embeddings";
  let description = [{
    Adds a position vector to each row of `input` (`[..., seq, d_model]`);
    position `p` is the row's index along `seq`, plus `offset` when given
    (the position of the first row during incremental decoding).

    - `sinusoidal`: PE(p, 2i) = sin(p / 10000^(2i/d_model)), PE(p, 2i+1) =
      cos(the same angle); no table.
    - `learned`: row `p` of `table` (`[max_seq_len, d_model]`).

    ```mlir
    %0 = tfm.position_encoding <sinusoidal> %x : tensor<?x?x32xf32>
    %1 = tfm.position_encoding <learned> %x, %t : tensor<?x?x32xf32>, tensor<64x32xf32>
    ```
  }];
  let arguments = (ins Tfm_PositionKindAttr:$kind, Tfm_Tensor:$input,
                       Optional<Tfm_Tensor>:$table, Optional<Index>:$offset);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $kind $input (`,` $table^)? (`offset` $offset^)? attr-dict `:` type($input)
    (`,` type($table)^)?
  }];
  let hasVerifier = 1;
}

def Tfm_RotaryOp : Tfm_Op<"rotary", [Tfm_SizedResultsOpInterface,
     Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of per-head queries or keys";
  let description = [{
    Rotates pairs of features of `input` (`[..., seq, head_dim]`) by the angle
    p * base^(-2i/head_dim), where `p` is the row's index along `seq` plus
    `offset` when given (the position of the first row during incremental
    decoding) and `i` the pair's index. `half` pairs feature `i` with `i + head_dim/2`
    (LLaMA/NeoX); `interleaved` pairs `2i` with `2i+1` (RoFormer/GPT-J).
    `head_dim` must be even.

    ```mlir
    %q2 = tfm.rotary <half> %q {base = 1.0e+04 : f32} : tensor<1x4x?x8xf32>
    %k2 = tfm.rotary <interleaved> %k offset %pos : tensor<1x4x?x8xf32>
    ```
  }];
  let arguments = (ins Tfm_RopeStyleAttr:$style, Tfm_Tensor:$input,
                       DefaultValuedAttr<F32Attr, "10000.0">:$base,
                       Optional<Index>:$offset);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $style $input (`offset` $offset^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and heads
//===----------------------------------------------------------------------===//

def Tfm_LinearOp : Tfm_Op<"linear",
    [Tfm_SizedResultsOpInterface, DeclareOpInterfaceMethods<Tfm_MatmulFlopsOpInterface>,
     Pure, InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "y = act(x Wᵀ + b) + residual";
  let description = [{
    A fully connected layer as PyTorch's `nn.Linear` computes it: `weight` is
    `[out_features, in_features]`, the optional `bias` `[out_features]`, and
    the last dimension of `input` is `in_features`.

    Two optional epilogues, applied to each tile of the result as it is
    stored (formed by `--tfm-fuse-epilogue`): `activation` (`relu`, `gelu`,
    `gelu_tanh`, `silu`, as in `tfm.ffn`), then adding `residual`, a tensor of the
    result's shape (a residual connection).

    With `bf16_inputs` (`--tfm-select-gemm-precision`, `tfm-compile
    --compute=bf16`) both operands are rounded to bfloat16 (nearest, ties
    to even) before they are multiplied, and the products summed in f32:
    the weight once, as it is packed, the input as the GEMM reads it.

    `weight_format` (`--tfm-select-gemm-precision`, from the weight's
    `tfm.param`) is the format its weight's values are kept in: the
    Highway backend packs a bf16 or f16 weight in 16-bit panels, half the
    bytes, and widens them to f32 as it reads them.

    The Highway backend takes its register tile and the order of the
    weight's panels from `tfm_codegen.gemm_tiling` (set by
    `--tfm-select-gemm-tiling`).

    ```mlir
    %y = tfm.linear %x, %w, %b
        : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    %h = tfm.linear %x, %w, %b activation <gelu>
        : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    %z = tfm.linear %h, %w2, %b2 residual %x
        : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, Tfm_Tensor:$weight,
                       Optional<Tfm_Tensor>:$bias,
                       OptionalAttr<Tfm_ActivationAttr>:$activation,
                       Optional<Tfm_Tensor>:$residual,
                       UnitAttr:$bf16_inputs,
                       OptionalAttr<Tfm_WeightFormatAttr>:$weight_format);
  let results = (outs Tfm_Tensor:$result);
  let builders = [
    // A plain linear layer, no epilogue.
    OpBuilder<(ins "Value":$input, "Value":$weight, CArg<"Value", "{}">:$bias), [{
      build($_builder, $_state, input, weight, bias, /*activation=*/nullptr,
            /*residual=*/Value(), /*bf16_inputs=*/false,
            /*weight_format=*/WeightFormatAttr());
    }]>
  ];
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`activation` $activation^)?
    (`residual` $residual^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Tfm_SliceRowsOp : Tfm_Op<"slice_rows", [Pure]> {
  let summary = "rows [offset, offset + n) of a weight or bias";
  let description = [{
    The rows of a stacked weight that one projection uses: the query rows
    of an `in_proj_weight` ([3*d, d]), or its key and value rows, and the
    same rows of its bias. `n` is the result's first dimension; the other
    dimensions are the input's. The input's rows must be static.

    ```mlir
    %wkv = tfm.slice_rows %w from 32 : tensor<96x32xf32> -> tensor<64x32xf32>
    %bkv = tfm.slice_rows %b from 32 : tensor<96xf32> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, I64Attr:$offset);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $input `from` $offset attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_SplitHeadsOp : Tfm_Op<"split_heads", [DeclareOpInterfaceMethods<Tfm_SizedResultsOpInterface, ["getResultSize"]>,
     Pure, InferTypeOpAdaptor]> {
  let summary = "[..., seq, heads*dk] -> [..., heads, seq, dk]";
  let description = [{
    Splits the feature dimension into `num_heads` heads of `dk` features and
    moves the head dimension in front of the sequence dimension.

    With `part P of N`, the features are first cut into N equal blocks and
    only block P (from 0) is split: the queries, keys or values of rows
    that hold them side by side, as one GEMM over a stacked weight makes
    them (`[..., seq, N*heads*dk]`).

    ```mlir
    %h = tfm.split_heads %x into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, I64Attr:$num_heads,
                       OptionalAttr<I64Attr>:$part, OptionalAttr<I64Attr>:$parts);
  let results = (outs Tfm_Tensor:$result);
  let builders = [
    OpBuilder<(ins "Value":$input, "int64_t":$numHeads,
                   CArg<"int64_t", "0">:$part, CArg<"int64_t", "1">:$parts)>
  ];
  let assemblyFormat = [{
    $input (`part` $part^ `of` $parts)? `into` $num_heads `heads` attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The block of features split (0 without `part`) and the number of
    /// blocks (1).
    int64_t getPartIndex() { return getPart().value_or(0); }
    int64_t getPartCount() { return getParts().value_or(1); }
  }];
}

def Tfm_MergeHeadsOp : Tfm_Op<"merge_heads", [DeclareOpInterfaceMethods<Tfm_SizedResultsOpInterface, ["getResultSize"]>,
     Pure, InferTypeOpAdaptor]> {
  let summary = "[..., heads, seq, dk] -> [..., seq, heads*dk]";
  let description = [{
    The inverse of `tfm.split_heads`.

    ```mlir
    %x = tfm.merge_heads %h : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Tfm_AttentionOp : Tfm_Op<"attention",
    [Tfm_SizedResultsOpInterface, DeclareOpInterfaceMethods<Tfm_MatmulFlopsOpInterface>,
     Pure, InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "attention core: softmax(score(q, k)) v";
  let description = [{
    For each query row `i` and key row `j` (the last two dimensions of
    `query`/`key`, which share their leading dimensions, typically
    `[batch, heads]`), computes a score, masks `j > offset + i` when
    `causal`, and every key outside the mask's other rules (`#tfm.mask`:
    a sliding window, global tokens; `offset` is 0 unless given: the
    position of the first query row among the keys, as in a decode step
    over a key/value cache),
    normalises each row with softmax and returns the weighted sum of `value`
    rows. This is the one attention core every multi-head attention
    decomposes into (`--tfm-decompose-attention`); the backends run it
    without storing the score matrix (a block of query rows at a time, an
    online softmax over blocks of keys), and a causal mask bounds the keys
    each block of rows visits. The score function:

    - `dot`: q·k
    - `scaled_dot`: q·k / sqrt(dk)
    - `bilinear`: qᵀ W_h k, with `score_params` = (W `[heads, dk, dk]`)
    - `additive`: vᵀ tanh(W_key k + W_query q) (Bahdanau), with
      `score_params` = (W_key `[heads, A, dk]`, W_query `[heads, A, dk]`,
      v `[heads, A]`)

    Per-head parameters index the dimension just before the sequence.

    `pattern(%p)` (with a mask's `random R`): BigBird's random key blocks,
    `[rows, R]` f32 block ids (whole numbers; others, and ids outside
    `[0, ceil(keys / B))`, are ignored), row `qb` for query block `qb`;
    `rows` covers every query block (`ceil((offset + queries) / B)`).

    `key_padding(%m)` (a padding mask, `[batch, keys]` f32 of 1 for a real
    key and 0 for padding, the batch the first dimension of `query`): a key
    whose entry is 0 gets no weight in any row of its sequence, on top of
    the mask's rules. A row left with no key has unspecified but finite
    values (the same for any number of threads).

    `weights_to %slot` (an index): when the runtime asks for attention
    weights (the executable's `--dump-attention`), the op also writes its
    softmax weights `[batch, heads, queries, keys]` (0 where a key is
    masked) to the runtime's map `slot` (the module's `tfm.attention_maps`
    names them); otherwise it costs nothing.

    Keys and values may have fewer heads than queries (grouped-query
    attention), a number that divides the queries' heads: query head h
    reads key/value head h / (query heads / key heads).

    The Highway backend takes the query rows of a task and the keys of a
    block from `tfm_codegen.attention_tiling` (set by
    `--tfm-select-attention-tiling`) for dot-product scores; additive
    scores, taken one key at a time, have none.

    ```mlir
    %o = tfm.attention <scaled_dot> %q, %k, %v causal
        : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32>
    %s = tfm.attention <dot> %q, %kc, %vc causal offset %pos
        : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
    ```
  }];
  let arguments = (ins Tfm_ScoreKindAttr:$score, Tfm_Tensor:$query,
                       Tfm_Tensor:$key, Tfm_Tensor:$value,
                       Variadic<Tfm_Tensor>:$score_params,
                       OptionalAttr<Tfm_MaskAttr>:$mask,
                       Optional<Index>:$query_offset,
                       Optional<Tfm_Tensor>:$block_pattern,
                       Optional<Tfm_Tensor>:$key_padding,
                       Optional<Index>:$weights_slot);
  let results = (outs Tfm_Tensor:$result);
  let builders = [
    OpBuilder<(ins "ScoreKind":$score, "Value":$query, "Value":$key,
                   "Value":$value, "ValueRange":$scoreParams,
                   CArg<"bool", "false">:$causal,
                   CArg<"Value", "{}">:$queryOffset)>
  ];
  let assemblyFormat = [{
    $score $query `,` $key `,` $value (`params` `(` $score_params^ `)`)?
    (custom<MaskRules>($mask)^)? (`offset` $query_offset^)?
    (`pattern` `(` $block_pattern^ `)`)?
    (`key_padding` `(` $key_padding^ `)`)? (`weights_to` $weights_slot^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the mask is causal.
    bool isCausal() { return getMaskAttr() && getMaskAttr().getCausal(); }
  }];
}

//===----------------------------------------------------------------------===//
// Key/value caches
//===----------------------------------------------------------------------===//

def Tfm_CacheAppendOp : Tfm_Op<"cache_append",
    [DeclareOpInterfaceMethods<Tfm_SizedResultsOpInterface, ["getResultSize"]>,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     AllTypesMatch<["keys", "values"]>]> {
  let summary = "writes new positions' keys and values into a cache";
  let description = [{
    Writes `keys` and `values` (`[batch, heads, n, headDim]`) into the
    cache at positions `position, ..., position + n - 1` of each of the
    first `batch` sequences, in the layout `!tfm.kv_cache` defines (a
    windowed cache: each into its slot, where it replaces the position W
    before it; positions the same call replaces are not written). The
    result is `position + n`: the positions the cache has seen now, what a
    `tfm.cache_read` after it reads.

    ```mlir
    %len = tfm.cache_append %c, %k, %v at %pos
        : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x?x8xf32>
    ```
  }];
  let arguments = (ins Tfm_KVCacheType:$cache, Tfm_Tensor:$keys,
                       Tfm_Tensor:$values, Index:$position);
  let results = (outs Index:$length);
  let assemblyFormat = [{
    $cache `,` $keys `,` $values `at` $position attr-dict `:` type($cache) `,`
    type($keys)
  }];
  let hasVerifier = 1;
}

def Tfm_CacheReadOp : Tfm_Op<"cache_read",
    [DeclareOpInterfaceMethods<Tfm_SizedResultsOpInterface, ["getResultSize"]>,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>, InferTypeOpAdaptor]> {
  let summary = "the keys and values of a cache's first positions";
  let description = [{
    The keys and values (`[batch, heads, length, headDim]` each) of
    positions `0, ..., length - 1` of the first `batch` sequences of a
    cache that keeps every position (not windowed), as earlier `tfm.cache_append`s (in this call or an earlier one)
    wrote them. The backends read them where they are, in the layout
    `!tfm.kv_cache` defines.

    ```mlir
    %k, %v = tfm.cache_read %c[%batch, %len]
        : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>
    ```
  }];
  let arguments = (ins Tfm_KVCacheType:$cache, Index:$batch, Index:$length);
  let results = (outs Tfm_Tensor:$keys, Tfm_Tensor:$values);
  let assemblyFormat = [{
    $cache `[` $batch `,` $length `]` attr-dict `:` type($cache)
  }];
  let hasVerifier = 1;
}

def Tfm_CacheWindowOp : Tfm_Op<"cache_window",
    [DeclareOpInterfaceMethods<Tfm_SizedResultsOpInterface, ["getResultSize"]>,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>, InferTypeOpAdaptor,
     AllTypesMatch<["keys", "values"]>]> {
  let summary = "the keys and values a sliding window of new rows attends";
  let description = [{
    For the call's rows at positions `position, ..., position + n - 1`
    (`keys` and `values`, `[batch, heads, n, headDim]`, theirs), the keys
    and values a sliding window over a windowed cache (`window = W`,
    `globals = G`) reads, along dimension 2 in the order of their positions:
    the global positions `[0, min(G, position))` and the window
    `[max(G, position - W), position)` the cache keeps, then the call's
    own. `offset` is the index of `position` among them: tfm.attention's
    query offset. Every key after the globals is `position - offset`
    positions later than its index, so the window's rules select the same
    keys by index as by position. It reads the cache as the earlier calls
    left it: a tfm.cache_append after it stores the call's positions.

    ```mlir
    %k, %v, %offset = tfm.cache_window %c, %new_k, %new_v at %pos
        : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 64, headDim = 8, window = 4, globals = 1>, tensor<?x4x?x8xf32>
    ```
  }];
  let arguments = (ins Tfm_KVCacheType:$cache, Tfm_Tensor:$keys,
                       Tfm_Tensor:$values, Index:$position);
  let results = (outs Tfm_Tensor:$windowKeys, Tfm_Tensor:$windowValues,
                      Index:$offset);
  let assemblyFormat = [{
    $cache `,` $keys `,` $values `at` $position attr-dict `:` type($cache) `,`
    type($keys)
  }];
  let hasVerifier = 1;
}

def Tfm_MultiHeadAttentionOp : Tfm_Op<"multi_head_attention",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     AllTypesMatch<["query", "result"]>, AttrSizedOperandSegments]> {
  let summary = "multi-head self- or cross-attention with Q/K/V projections";
  let description = [{
    PyTorch's `nn.MultiheadAttention` (batch first) with a choice of score
    function. `query` is `[..., seq, d_model]`. Without `memory` this is
    self-attention: queries, keys and values all come from `query`. With
    `memory` (`[..., mem_seq, d_model]`) it is cross-attention: keys and
    values come from `memory`.

    `in_proj_weight` (`[3*d_model, d_model]`) stacks the Q, K and V
    projections in that order, `in_proj_bias` is `[3*d_model]`;
    `out_proj_weight`/`out_proj_bias` are `[d_model, d_model]`/`[d_model]`.
    Heads have `dk = d_model / num_heads` features. `score_params` are those
    of `tfm.attention` for the chosen score. Both biases are optional (a
    model without linear biases, as LLaMA) but come together.

    `kv_heads N` (grouped-query attention; 1 is multi-query) gives keys and
    values N heads, N dividing `num_heads`: query head h reads key/value head
    h / (num_heads / N). The in-projection then has `(num_heads + 2 N) dk`
    rows (Q, then K, then V) and a cache holds N heads.

    `causal` masks key positions after the query position; `rope` rotates the
    per-head queries and keys (as `tfm.rotary`) before scoring. Both apply to
    self-attention only.

    `key_padding(%m)` (`[batch, keys]` f32, 1 for a real key and 0 for
    padding; the keys are `query`'s rows in self-attention, `memory`'s in
    cross-attention): padded keys get no weight (`tfm.attention`'s
    `key_padding`). Not with a cache or linformer.

    `weights_to %slot`: the attention core's `weights_to` (its weights
    written for the runtime's attention map `slot` when it asks).

    `linformer(%e, %f)` (Linformer, self-attention without a mask or a
    cache, scaled_dot scores): the keys and values of every head, after the
    in-projection (and rotary positions), projected along the sequence to
    K rows, E_n k and F_n v (`tfm.sequence_projection`; E and F are
    `[K, S]`, their first n columns taken for n rows, n <= S); the queries
    attend those K rows.

    `performer(%w)` (Performer's FAVOR+, self-attention, scaled_dot
    scores, no mask but `causal`, no key padding): softmax attention
    replaced by its positive-random-feature estimate. `%w` is
    `[num_heads, M, dk]`, W_h for head h; the queries and keys (after the
    in-projection and rotary positions) are mapped by `tfm.feature_map`
    and attended by `tfm.linear_attention` (causal: key j counts for row
    i when j <= i). Its cache (causal self-attention, `cache(%c at
    %pos)`) holds the running sums (`features` = M, heads = num_heads),
    not the positions: a decode step adds its own keys to them.

    `pattern(%p)` (self-attention with a block-sparse mask's `random R`):
    the core's `pattern`, BigBird's random key blocks `[rows, R]`.

    A key/value cache (incremental decoding) comes in two forms:
    - `cache(%c at %pos)` appends: the new keys and values (of `query`'s rows
      for causal self-attention, of `memory`'s rows for cross-attention) are
      written into the cache at positions `pos, pos+1, ...`, and attention
      reads the keys and values of every position up to the last one
      written. In self-attention `query`'s rows are those positions and each
      attends up to its own. This form reads and writes the cache.
    - `cache(%c upto %len)` only reads: cross-attention without `memory`,
      over the `len` positions an earlier call appended (the encoder output
      of a prefill, attended by every later decode step).

    ```mlir
    %y = tfm.multi_head_attention <scaled_dot> %x heads 4
        in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<half>}
        : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>,
           tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Tfm_ScoreKindAttr:$score, Tfm_Tensor:$query,
                       Optional<Tfm_Tensor>:$memory, I64Attr:$num_heads,
                       OptionalAttr<I64Attr>:$num_kv_heads,
                       Tfm_Tensor:$in_proj_weight,
                       Optional<Tfm_Tensor>:$in_proj_bias,
                       Tfm_Tensor:$out_proj_weight,
                       Optional<Tfm_Tensor>:$out_proj_bias,
                       Variadic<Tfm_Tensor>:$score_params,
                       OptionalAttr<Tfm_MaskAttr>:$mask,
                       OptionalAttr<Tfm_RopeStyleAttr>:$rope,
                       OptionalAttr<F32Attr>:$rope_base,
                       Optional<Tfm_KVCacheType>:$cache,
                       Optional<Index>:$position, UnitAttr:$cache_read_only,
                       Optional<Tfm_Tensor>:$proj_e,
                       Optional<Tfm_Tensor>:$proj_f,
                       Optional<Tfm_Tensor>:$features,
                       Optional<Tfm_Tensor>:$block_pattern,
                       Optional<Tfm_Tensor>:$key_padding,
                       Optional<Index>:$weights_slot);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $score $query (`memory` $memory^)? `heads` $num_heads
    (`kv_heads` $num_kv_heads^)?
    (`cache` `(` $cache^ custom<CacheAccess>($position, $cache_read_only) `)`)?
    `in_proj` `(` $in_proj_weight (`,` $in_proj_bias^)? `)`
    `out_proj` `(` $out_proj_weight (`,` $out_proj_bias^)? `)`
    (`params` `(` $score_params^ `)`)? (custom<MaskRules>($mask)^)?
    (`linformer` `(` $proj_e^ `,` $proj_f `)`)?
    (`performer` `(` $features^ `)`)? (`pattern` `(` $block_pattern^ `)`)?
    (`key_padding` `(` $key_padding^ `)`)? (`weights_to` $weights_slot^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Queries, keys and values all from `query` (not cross-attention over
    /// `memory` or over a read-only cache).
    bool isSelfAttention() { return !getMemory() && !getCacheReadOnly(); }
    /// Whether the mask is causal.
    bool isCausal() { return getMaskAttr() && getMaskAttr().getCausal(); }
    /// The heads of keys and values (num_heads without `kv_heads`).
    int64_t getKeyValueHeads() {
      return getNumKvHeads().value_or(getNumHeads());
    }
  }];
}

def Tfm_SequenceProjectionOp : Tfm_Op<"sequence_projection",
    [Tfm_SizedResultsOpInterface, DeclareOpInterfaceMethods<Tfm_MatmulFlopsOpInterface>,
     Pure, InferTypeOpAdaptor]> {
  let summary = "rows projected along the sequence: E_n x (Linformer)";
  let description = [{
    For `input` `[..., n, d]` (per-head keys or values) and `projection` E
    `[K, S]` (n <= S, checked at run time against the compiled maximum):
    result `[..., K, d]`, row k the sum over j < n of E[k, j] times input
    row j. Only E's first n columns take part (E_n, Linformer's projection
    of a sequence of run-time length n).

    ```mlir
    %kp = tfm.sequence_projection %k by %e
        : tensor<?x4x?x8xf32>, tensor<16x128xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, Tfm_Tensor:$projection);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $input `by` $projection attr-dict `:` type($input) `,` type($projection)
  }];
}

def Tfm_FeatureMapOp : Tfm_Op<"feature_map",
    [Tfm_SizedResultsOpInterface, DeclareOpInterfaceMethods<Tfm_MatmulFlopsOpInterface>,
     Pure, InferTypeOpAdaptor]> {
  let summary = "positive random features of per-head rows (Performer, FAVOR+)";
  let description = [{
    For `input` `[..., Hx, n, dk]` (per-head queries or keys) and `features`
    W `[H, M, dk]` (Hx dividing H): result `[..., H, n, M]`, where row i of
    head h is

        phi(x) = exp(x W_h^T - |x|^2 / 2) / sqrt(M),  x = input[h', i] / dk^(1/4)

    with h' = h / (H / Hx) (grouped-query keys are read by every query
    head of their group, each with its own W_h). The dk^(1/4) puts the
    1 / sqrt(dk) of scaled_dot scores half on the queries and half on the
    keys, so that phi(q) . phi(k) estimates exp(q . k / sqrt(dk)). No
    stabiliser is subtracted (the contract's definition).

    ```mlir
    %fq = tfm.feature_map %q by %w : tensor<?x4x?x8xf32>, tensor<4x16x8xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, Tfm_Tensor:$features);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $input `by` $features attr-dict `:` type($input) `,` type($features)
  }];
}

def Tfm_LinearAttentionOp : Tfm_Op<"linear_attention",
    [Tfm_SizedResultsOpInterface, DeclareOpInterfaceMethods<Tfm_MatmulFlopsOpInterface>,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>, InferTypeOpAdaptor,
     AttrSizedOperandSegments]> {
  let summary = "attention through feature products: D^-1 phi(Q) (phi(K)^T V)";
  let description = [{
    For feature rows `query_features` `[..., H, n, M]`, `key_features`
    `[..., H, s, M]` (as `tfm.feature_map` makes them) and `value`
    `[..., Hv, s, dv]` (Hv dividing H; query head h reads value head
    h / (H / Hv)): result `[..., H, n, dv]`, row i

        out_i = sum_j (fq_i . fk_j) v_j / sum_j (fq_i . fk_j)

    over every key j, or with `causal` over j <= offset + i (`offset` 0
    unless given: the first query row's position among the keys, as in a
    decode step over a cache; the keys are then the `offset` earlier
    positions and one per query row, s = offset + n). Computed without the n x s matrix: the M x dv summary
    fk^T v and the M sums fk^T 1, once (not causal) or carried from row to
    row as running sums (causal).

    `sums(%c)` (causal, with `offset`; a `!tfm.kv_cache` with `features`
    M, heads H and headDim dv): a decode step's state. The keys are then
    this call's n positions only (s = n, at positions offset, ...), the
    sums start from those the cache holds of the `offset` positions before
    (none at offset 0), and the cache holds them with this call's keys
    added afterwards: a step costs the same at any position.

    ```mlir
    %o = tfm.linear_attention %fq, %fk, %v causal
        : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$query_features, Tfm_Tensor:$key_features,
                       Tfm_Tensor:$value, UnitAttr:$causal,
                       Optional<Index>:$query_offset,
                       Optional<Tfm_KVCacheType>:$sums);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $query_features `,` $key_features `,` $value (`causal` $causal^)?
    (`offset` $query_offset^)? (`sums` `(` $sums^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_SoftmaxOp : Tfm_Op<"softmax", [Tfm_SizedResultsOpInterface,
     Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one dimension";
  let description = [{
    exp(x - max) / sum(exp(x - max)) along `dim` (negative counts from the
    end; -1 by default).

    ```mlir
    %p = tfm.softmax %s {dim = -1 : i64} : tensor<1x4x?x?xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, DefaultValuedAttr<I64Attr, "-1">:$dim);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Norms, feed-forward, residual
//===----------------------------------------------------------------------===//

def Tfm_LayerNormOp : Tfm_Op<"layer_norm",
    [Tfm_SizedResultsOpInterface,
     Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalisation (or RMS norm) over the last dimension";
  let description = [{
    (x - mean) / sqrt(var + eps) * gamma + beta over the last dimension
    (biased variance, as `nn.LayerNorm`). `gamma` and `beta` are `[d_model]`.

    With `rms`, the RMS norm of LLaMA (Zhang and Sennrich):
    x / sqrt(mean(x^2) + eps) * gamma, no centring and no `beta`.

    ```mlir
    %y = tfm.layer_norm %x, %g, %b {eps = 1.0e-05 : f32}
        : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
    %r = tfm.layer_norm rms %x, %g {eps = 1.0e-06 : f32}
        : tensor<?x?x32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins UnitAttr:$rms, Tfm_Tensor:$input, Tfm_Tensor:$gamma,
                       Optional<Tfm_Tensor>:$beta,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$eps);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    (`rms` $rms^)? $input `,` $gamma (`,` $beta^)? attr-dict `:` type($input)
    `,` type($gamma) (`,` type($beta)^)?
  }];
  let hasVerifier = 1;
}

def Tfm_AddLayerNormOp : Tfm_Op<"add_layer_norm",
    [Tfm_SizedResultsOpInterface,
     Pure, AllTypesMatch<["lhs", "rhs", "sum", "result"]>]> {
  let summary = "residual add and layer normalisation in one pass over a row";
  let description = [{
    `sum = lhs + rhs` and `result = layer_norm(sum, gamma, beta, eps)` (as
    `tfm.add` then `tfm.layer_norm`, `rms` as there), computed row by row so the sum is
    normalised while it is in cache. Formed by `--tfm-fuse-residual-norm`;
    `sum` is what later residual connections read (pre-norm), unused after
    a post-norm sublayer.

    ```mlir
    %s, %y = tfm.add_layer_norm %x, %attn, %g, %b {eps = 1.0e-05 : f32}
        : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins UnitAttr:$rms, Tfm_Tensor:$lhs, Tfm_Tensor:$rhs,
                       Tfm_Tensor:$gamma, Optional<Tfm_Tensor>:$beta,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$eps);
  let results = (outs Tfm_Tensor:$sum, Tfm_Tensor:$result);
  let assemblyFormat = [{
    (`rms` $rms^)? $lhs `,` $rhs `,` $gamma (`,` $beta^)? attr-dict `:`
    type($lhs) `,` type($gamma) (`,` type($beta)^)?
  }];
  let hasVerifier = 1;
}

def Tfm_FeedForwardOp : Tfm_Op<"ffn", [Pure, AllTypesMatch<["input", "result"]>,
     AttrSizedOperandSegments]> {
  let summary = "position-wise feed-forward: linear2(act(linear1(x)))";
  let description = [{
    `linear1` (`w1` `[d_ff, d_model]`, `b1` `[d_ff]`), the activation, then
    `linear2` (`w2` `[d_model, d_ff]`, `b2` `[d_model]`). Activations: `relu`,
    `gelu` (exact, with erf), `gelu_tanh` (the tanh approximation) and
    `silu` (x sigmoid(x)). The biases are optional but come together: two
    weights, or each weight followed by its bias.

    `gated` is a GLU variant (SwiGLU with `silu`, GeGLU with `gelu`):
    linear2(act(x W_gateᵀ + b_gate) * (x W_upᵀ + b_up)), `w1` `[2 d_ff,
    d_model]` holding the gate's rows, then the up projection's (`b1`
    `[2 d_ff]` likewise).

    ```mlir
    %y = tfm.ffn <gelu> %x, %w1, %b1, %w2, %b2
        : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>,
           tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
    %z = tfm.ffn <silu> gated %x, %w13, %w2
        : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<32x64xf32>)
        -> tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Tfm_ActivationAttr:$activation, UnitAttr:$gated,
                       Tfm_Tensor:$input, Tfm_Tensor:$w1,
                       Optional<Tfm_Tensor>:$b1, Tfm_Tensor:$w2,
                       Optional<Tfm_Tensor>:$b2);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $activation (`gated` $gated^)? $input `,`
    custom<FeedForwardWeights>($w1, $b1, $w2, $b2) attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The hidden width d_ff (w2's input features).
    int64_t getHiddenSize() { return getW2().getType().getDimSize(1); }
  }];
}

def Tfm_MixtureOfExpertsOp : Tfm_Op<"moe", [Pure,
     AllTypesMatch<["input", "result"]>, AttrSizedOperandSegments]> {
  let summary = "mixture of experts: each token through its top-k experts' FFNs";
  let description = [{
    Mixtral's routing: per row of `input` (a token), logits = x Gᵀ with the
    router `gate` `[E, d_model]` (no bias); the `top_k` experts with the
    largest logits (on a tie, the lower expert first); their weights are the
    softmax over those k logits, and the result is the weighted sum of the
    chosen experts' FFNs. Expert `e` is `tfm.ffn` over `w1[e]` (`b1[e]`),
    `w2[e]` (`b2[e]`) with this op's `activation` and `gated`: `w1`, `w2`
    (and, when given, `b1`, `b2`) hold one tensor per expert.

    Decomposed by `--tfm-fuse-epilogue` into `tfm.route_experts`,
    `tfm.gather_rows` and two `tfm.grouped_linear`s.

    ```mlir
    %y = tfm.moe <gelu> %x, %gate top 2
        linear1(%w1_0, %w1_1, %w1_2) bias(%b1_0, %b1_1, %b1_2)
        linear2(%w2_0, %w2_1, %w2_2) bias(%b2_0, %b2_1, %b2_2)
        : (tensor<?x?x32xf32>, tensor<3x32xf32>, ...) -> tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Tfm_ActivationAttr:$activation, UnitAttr:$gated,
                       I64Attr:$top_k, Tfm_Tensor:$input, Tfm_Tensor:$gate,
                       Variadic<Tfm_Tensor>:$w1, Variadic<Tfm_Tensor>:$b1,
                       Variadic<Tfm_Tensor>:$w2, Variadic<Tfm_Tensor>:$b2);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $activation (`gated` $gated^)? $input `,` $gate `top` $top_k
    `linear1` `(` $w1 `)` (`bias` `(` $b1^ `)`)?
    `linear2` `(` $w2 `)` (`bias` `(` $b2^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of experts E.
    int64_t getNumExperts() { return getW1().size(); }
  }];
}

def Tfm_RouteExpertsOp : Tfm_Op<"route_experts", [Tfm_SizedResultsOpInterface,
     Pure]> {
  let summary = "top-k routing, the (token, slot) pairs grouped by expert";
  let description = [{
    For router `logits` `[..., E]` (one row per token): each token's
    `top_k` experts (largest logits; on a tie the lower expert) and their
    routing weights, the softmax over those k logits. The `[..., k]`
    results hold the token's pairs grouped by expert, not by token: the
    pairs routed to expert 0 first, then expert 1's, each group in token
    order (so the order is fixed whatever the threads). `tokens` holds the
    flat index of each pair's token (its row of `logits`), `weights` its
    routing weight, and `starts` `[E + 1]` where each expert's group begins
    (the last entry: the number of pairs). An expert no token chose has an
    empty group.

    ```mlir
    %tokens, %weights, %starts = tfm.route_experts %logits top 2
        : tensor<?x?x4xf32> -> tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<5xi32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$logits, I64Attr:$top_k);
  let results = (outs Tfm_IndexTensor:$tokens, Tfm_Tensor:$weights,
                      Tfm_IndexTensor:$starts);
  let assemblyFormat = [{
    $logits `top` $top_k attr-dict `:` type($logits) `->` type($tokens) `,`
    type($weights) `,` type($starts)
  }];
  let hasVerifier = 1;
}

def Tfm_GatherRowsOp : Tfm_Op<"gather_rows",
    [DeclareOpInterfaceMethods<Tfm_SizedResultsOpInterface, ["getResultSize"]>,
     Pure]> {
  let summary = "the rows of `input` that `tokens` names, in its order";
  let description = [{
    For `input` `[..., d]` and `tokens` (flat row indices of `input`, as
    `tfm.route_experts` makes them), the result `tokens.shape + [d]`: row
    i is `input`'s row `tokens[i]`. `tokens` has one more dimension than
    `input`'s rows (the slots of a token), its leading ones `input`'s.

    ```mlir
    %xs = tfm.gather_rows %x, %tokens
        : (tensor<?x?x32xf32>, tensor<?x?x2xi32>) -> tensor<?x?x2x32xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, Tfm_IndexTensor:$tokens);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $tokens attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_GroupedLinearOp : Tfm_Op<"grouped_linear",
    [Tfm_SizedResultsOpInterface,
     DeclareOpInterfaceMethods<Tfm_MatmulFlopsOpInterface>, Pure,
     AttrSizedOperandSegments]> {
  let summary = "a linear per group of rows, each group its own weight";
  let description = [{
    The experts' linears of a mixture of experts: `input` `[..., k, in]`
    holds rows grouped by expert (`tfm.route_experts`); rows
    [starts[e], starts[e + 1]) are multiplied by `weights[e]`
    `[out, in]` (plus `biases[e]`), as `tfm.linear` does, then
    `activation`. A group of no rows reads nothing of its weight.

    With `scatter %tokens, %routing_weights` the rows go back to their
    tokens: the result is `[..., out]` (the input's shape without the slot
    dimension) and its row t is `residual`'s row t (zeros without one) plus,
    for each expert in order, routing_weight x (that expert's row for token
    t): the weighted combine, done as each tile of a group's GEMM is stored.
    Without `scatter` the result is `[..., k, out]`, the rows in the
    input's order.

    The Highway backend takes its register tile from
    `tfm_codegen.gemm_tiling`, as for `tfm.linear`; `bf16_inputs` and
    `weight_format` mean what they mean there.

    ```mlir
    %h = tfm.grouped_linear %xs groups %starts weights(%w0, %w1) bias(%b0, %b1)
        activation <relu>
        : (tensor<?x?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<64x32xf32>,
           tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x2x64xf32>
    %y = tfm.grouped_linear %h groups %starts weights(%v0, %v1)
        scatter %tokens, %weights
        : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>,
           tensor<?x?x2xi32>, tensor<?x?x2xf32>) -> tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, Tfm_IndexTensor:$starts,
                       Variadic<Tfm_Tensor>:$weights,
                       Variadic<Tfm_Tensor>:$biases,
                       OptionalAttr<Tfm_ActivationAttr>:$activation,
                       Optional<Tfm_IndexTensor>:$tokens,
                       Optional<Tfm_Tensor>:$routing_weights,
                       Optional<Tfm_Tensor>:$residual,
                       UnitAttr:$bf16_inputs,
                       OptionalAttr<Tfm_WeightFormatAttr>:$weight_format);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $input `groups` $starts `weights` `(` $weights `)`
    (`bias` `(` $biases^ `)`)? (`activation` $activation^)?
    (`scatter` $tokens^ `,` $routing_weights)? (`residual` $residual^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumGroups() { return getWeights().size(); }
  }];
}

def Tfm_GluOp : Tfm_Op<"glu", [Tfm_SizedResultsOpInterface, Pure,
     InferTypeOpAdaptor]> {
  let summary = "gated linear unit: act(first half) * second half";
  let description = [{
    For `input` `[..., 2n]` (a gated FFN's gate and up projections side by
    side, as one GEMM over the stacked weight makes them), the `[..., n]`
    result act(input[..., :n]) * input[..., n:] (Shazeer, "GLU Variants
    Improve Transformer": SwiGLU with `silu`, GeGLU with `gelu`). The last
    dimension must be static and even.

    ```mlir
    %g = tfm.glu <silu> %h : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_ActivationAttr:$activation, Tfm_Tensor:$input);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $activation $input attr-dict `:` type($input) `->` type($result)
  }];
}

def Tfm_AddOp : Tfm_Op<"add", [Tfm_SizedResultsOpInterface,
     Pure, Commutative, SameOperandsAndResultType]> {
  let summary = "elementwise sum (residual connection)";
  let description = [{
    ```mlir
    %y = tfm.add %x, %attn : tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$lhs, Tfm_Tensor:$rhs);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Mamba (selective state-space) mixers
//===----------------------------------------------------------------------===//

def Tfm_MambaMixerOp : Tfm_Op<"mamba_mixer", [
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     AllTypesMatch<["input", "result"]>, AttrSizedOperandSegments]> {
  let summary = "a Mamba-1 mixer (Hugging Face's MambaMixer, sequential path)";
  let description = [{
    For `input` x `[..., n, d_model]`, with C = d_inner channels, N = the
    state size, R = dt_rank and K = the conv width (all read off the
    weights' shapes):

        u, z = halves of x in_projᵀ              (in_proj [2C, d_model])
        u = SiLU(causal depthwise conv(u) + conv_bias)   (conv_weight [C, 1, K])
        dt, B, Cm = split(u x_projᵀ, [R, N, N])  (x_proj [R + 2N, C])
        delta = softplus(dt dt_projᵀ + dt_bias)  (dt_proj [C, R])
        h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t,  A = -exp(a_log) [C, N]
        y_t = Cm_t . h_t + d u_t                 (d [C])
        result = (y SiLU(z)) out_projᵀ           (out_proj [d_model, C])

    per sequence, from a zero conv window and a zero state; or with
    `offset %p state(%s)` (incremental decoding) the `n` rows are positions
    p.. of their sequences and the mixer starts from the window and state
    `%s` holds (zero at p = 0) and leaves those after its last row there.

    Decomposed by `--tfm-decompose-mamba` into `tfm.linear`s,
    `tfm.causal_conv1d` and `tfm.selective_scan`.

    ```mlir
    %y = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx
        dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout
        : (tensor<?x?x32xf32>, tensor<128x32xf32>, ...) -> tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, Tfm_Tensor:$in_proj,
                       Tfm_Tensor:$conv_weight, Tfm_Tensor:$conv_bias,
                       Tfm_Tensor:$x_proj, Tfm_Tensor:$dt_proj,
                       Tfm_Tensor:$dt_bias, Tfm_Tensor:$a_log, Tfm_Tensor:$d,
                       Tfm_Tensor:$out_proj, Optional<Index>:$offset,
                       Optional<Tfm_MambaStateType>:$state);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $input `in_proj` $in_proj `conv` `(` $conv_weight `,` $conv_bias `)`
    `x_proj` $x_proj `dt_proj` `(` $dt_proj `,` $dt_bias `)` `a_log` $a_log
    `d` $d `out_proj` $out_proj (`offset` $offset^)? (`state` `(` $state^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// d_inner, the mixer's channels (in_proj makes twice as many).
    int64_t getChannels() { return getDtBias().getType().getDimSize(0); }
    /// The scan's state size (a_log's columns).
    int64_t getStateSize() { return getALog().getType().getDimSize(1); }
    /// dt_rank (dt_proj's columns).
    int64_t getDtRank() { return getDtProj().getType().getDimSize(1); }
    /// The conv width (conv_weight's last dimension).
    int64_t getConvWidth() { return getConvWeight().getType().getDimSize(2); }
  }];
}

def Tfm_CausalConv1dOp : Tfm_Op<"causal_conv1d", [Tfm_SizedResultsOpInterface,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     AllTypesMatch<["input", "result"]>, AttrSizedOperandSegments]> {
  let summary = "SiLU(causal depthwise conv1d + bias) along the sequence";
  let description = [{
    For `input` `[..., n, C]` (rows are positions), `weight` `[C, 1, K]`
    (PyTorch's depthwise `Conv1d` layout) and `bias` `[C]`: row t, channel c
    of the result is

        SiLU(bias[c] + sum_{k < K} weight[c, 0, k] input[t - K + 1 + k, c])

    where positions before the sequence's first are zero; or, with `offset
    %p state(%s)`, the rows are positions p.. and the K - 1 positions
    before them come from the conv window `%s` holds (zeros at p = 0),
    which then holds the K - 1 inputs up to the last row. Channels are
    independent: a backend runs them in any split.

    ```mlir
    %u = tfm.causal_conv1d %x, %w, %b
        : (tensor<?x?x64xf32>, tensor<64x1x4xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, Tfm_Tensor:$weight,
                       Tfm_Tensor:$bias, Optional<Index>:$offset,
                       Optional<Tfm_MambaStateType>:$state);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias (`offset` $offset^)? (`state` `(` $state^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_SelectiveScanOp : Tfm_Op<"selective_scan", [Tfm_SizedResultsOpInterface,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     AllTypesMatch<["input", "delta", "gate", "result"]>,
     AttrSizedOperandSegments]> {
  let summary = "Mamba's selective scan, its D skip and its SiLU gate";
  let description = [{
    For `input` u, `delta` and `gate` z `[..., n, C]`, `a_log` `[C, N]`,
    `b` and `c` `[..., n, N]` and `d` `[C]`: per sequence and channel, from
    h = 0 (N floats),

        dt = softplus(delta[t])   (log(1 + e^x); x above 20 taken as is)
        h = exp(dt A) h + dt b[t] u[t],   A = -exp(a_log) (per channel)
        result[t] = (c[t] . h + d u[t]) SiLU(z[t])

    row by row (t = 0..n-1). With `offset %p state(%s)` the rows are
    positions p.. and h starts from the state `%s` holds (zero at p = 0),
    which then holds h after the last row. The time axis is sequential; the
    channels are independent (a backend splits them across threads, never
    the rows).

    ```mlir
    %y = tfm.selective_scan %u, %dt, %a, %b, %c, %d, %z
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x16xf32>,
           tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<64xf32>,
           tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_Tensor:$input, Tfm_Tensor:$delta,
                       Tfm_Tensor:$a_log, Tfm_Tensor:$b, Tfm_Tensor:$c,
                       Tfm_Tensor:$d, Tfm_Tensor:$gate,
                       Optional<Index>:$offset,
                       Optional<Tfm_MambaStateType>:$state);
  let results = (outs Tfm_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $delta `,` $a_log `,` $b `,` $c `,` $d `,` $gate
    (`offset` $offset^)? (`state` `(` $state^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TFM_OPS_TD
