//===- ModelBuilder.cpp - ModelConfig -> tfm IR ---------------------------===//
//
// Layers of one kind share a private function that takes the layer's
// weights as arguments (a stack whose layers have kinds of their own,
// `layers`, has one function per distinct kinds); `forward` reads each layer's
// weights by name and calls it. The IR (and later the generated code) then does
// not grow with the number of layers.
//
//===----------------------------------------------------------------------===//

#include "tfm/Frontend/ModelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace tfm {

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// One weight of a layer: its name below the layer prefix and its shape.
struct WeightSpec {
  std::string suffix;
  SmallVector<int64_t> shape;
  /// Integer key-block ids in the file (tfm.param's `block_ids`).
  bool blockIds = false;
};

/// Which attention blocks a layer has.
struct LayerKind {
  StringRef funcName;
  bool causal;
  bool crossAttention;
  /// Incremental decoding: the layer takes the position of its first row and
  /// its self-attention's key/value cache (and its cross-attention's).
  bool cached = false;
  /// Cached cross-attention reads the memory's keys and values from its
  /// cache (the decode steps of encoder_decoder) instead of taking `memory`
  /// and appending them (its prefill).
  bool memoryFromCache = false;
  /// Padding masks (contract section 8): the layer takes its keys' mask
  /// ([batch, seq], 1 real, 0 padding), and its memory's when it has one.
  bool masked = false;
  /// Attention weights on request (contract section 9): the layer takes
  /// the runtime's map slot of its self-attention (when its kind is full)
  /// and of its cross-attention.
  bool mapped = false;
  /// A layer of the decoder stack (whose layers `layers` may give kinds of
  /// their own), or of the encoder stack.
  bool decoderStack = false;
};

/// The layer functions of a stack: which one each layer calls (one per
/// distinct kinds of its layers).
struct StackFuncs {
  SmallVector<func::FuncOp> perLayer;
};

class ModelBuilder {
public:
  ModelBuilder(MLIRContext &context, const ModelConfig &config,
               const CompileLimits &limits, StringRef sourcePath)
      : c(config), limits(limits), builder(&context),
        fileLoc(FileLineColLoc::get(&context, sourcePath, 1, 1)) {}

  OwningOpRef<ModuleOp> build();

private:
  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }
  RankedTensorType activations() { return f32({kDyn, kDyn, c.dModel}); }
  /// A padding mask: [batch, seq], 1 for a real token, 0 for padding.
  RankedTensorType paddingMask() { return f32({kDyn, kDyn}); }
  Location named(StringRef name) {
    return NameLoc::get(builder.getStringAttr(name), fileLoc);
  }

  /// Declares `name` once at module level (with the name a weights file may
  /// use instead, if any) and reads it into the current function.
  Value weight(OpBuilder &b, StringRef name, ArrayRef<int64_t> shape,
               StringRef alias = "", bool blockIds = false);

  /// An attention's weights; a self-attention's (`self`) also linformer's
  /// projections.
  std::vector<WeightSpec> attentionWeights(StringRef prefix, bool self,
                                           const LayerKinds &k);
  std::vector<WeightSpec> feedForwardWeights(const LayerKinds &k);
  /// A mamba layer's weights: its norm's, then its mixer's (Hugging Face
  /// MambaMixer names, contract section 7).
  std::vector<WeightSpec> mambaWeights();
  /// The function of the mamba layers (of form `kind`: cached or not).
  func::FuncOp buildMambaLayerFunc(const LayerKind &kind, StringRef name);
  /// A mamba layer's conv window and scan state, and a handle to the one
  /// named `name`, declared once at module level.
  MambaStateType mambaStateType();
  Value mambaState(OpBuilder &b, StringRef name);
  /// A norm's weight, and its bias for a layer norm.
  std::vector<WeightSpec> normWeights(StringRef name);
  std::vector<WeightSpec> layerWeights(const LayerKind &kind,
                                       const LayerKinds &k);
  /// The function of the layers of form `kind` and kinds `k`.
  func::FuncOp buildLayerFunc(const LayerKind &kind, const LayerKinds &k,
                              StringRef name);
  /// The functions of a stack of `layers` layers of form `kind`: the first
  /// named kind.funcName, each other kinds' after its first layer.
  StackFuncs buildStackFuncs(const LayerKind &kind, int64_t layers);
  /// With a read-only `cache`, cross-attention over the `position` first
  /// positions held there (`memory` is null).
  /// `keyPadding`: the keys' padding mask, or null.
  /// `weightsSlot`: where its weights go when the runtime asks, or null.
  Value attention(OpBuilder &b, Location loc, const LayerKinds &k, Value x,
                  Value memory, ValueRange weights, bool causal,
                  Value keyPadding, Value weightsSlot = Value(),
                  Value cache = Value(), Value position = Value(),
                  bool readOnlyCache = false);
  /// The map slot named `name` (a constant index), appended to the
  /// module's tfm.attention_maps.
  Value weightsSlot(OpBuilder &b, std::string name);
  /// The mask of a self-attention (`self`): causal when asked, and the
  /// model's sliding window with its global tokens; none for
  /// cross-attention, which sees every key.
  MaskAttr selfAttentionMask(OpBuilder &b, bool causal, bool self,
                             const LayerKinds &k);
  Value feedForward(OpBuilder &b, Location loc, Value x, ValueRange weights,
                    const LayerKinds &k);
  /// The model's norm of x, with `weights` as normWeights lists them.
  Value norm(OpBuilder &b, Location loc, Value x, ValueRange weights);

  /// Embeds the stack's input, adds its token types' embeddings (when
  /// `tokenTypes` is given) and absolute positions (from `offset` when
  /// given), and norms the sum when the model asks.
  Value embed(OpBuilder &b, Value input, StringRef tokenTable,
              StringRef positionTable, Value offset = Value(),
              Value tokenTypes = Value());
  /// Runs `layers` layers of `kind` (weights under `prefix`) and the final
  /// norm `finalNorm` if the model has one. Cached layers also get
  /// `position` and their caches, and `memoryLength` when they read the
  /// memory's keys and values from a cache. Masked layers also get `mask`
  /// (x's) and `memoryMask`.
  Value stack(OpBuilder &b, Value x, Value memory, const LayerKind &kind,
              const StackFuncs &funcs, StringRef prefix, StringRef finalNorm,
              Value position = Value(), Value memoryLength = Value(),
              Value mask = Value(), Value memoryMask = Value());
  /// The cache of a self-attention (`self`) or of a cross-attention.
  KVCacheType cacheType(bool self, const LayerKinds &k);
  /// A handle to the cache of `name`, declared once at module level.
  Value cache(OpBuilder &b, StringRef name, bool self, const LayerKinds &k);
  /// A handle to the buffer `name` of `type` kept across calls (a cache or
  /// a mixer's state), declared once at module level.
  Value stateBuffer(OpBuilder &b, StringRef name, Type type);
  /// The LM head over `x`: the tied table `tiedTable` or `lm_head.weight`.
  Value lmHead(OpBuilder &b, Value x, StringRef tiedTable);
  /// `@prefill(ids)` and `@decode(ids, position)`: a decoder's entry points
  /// for generation, sharing the weights and one cache per layer.
  void buildDecoderGeneration();
  /// `@prefill(src, tgt)` runs the encoder once and fills every decoder
  /// layer's caches (the cross-attention's with the memory's keys and
  /// values); `@decode(tgt, position, memory_length)` runs new target tokens
  /// over them.
  void buildEncoderDecoderGeneration(const StackFuncs &encoderLayers,
                                     const LayerKind &encoderKind);

  const ModelConfig &c;
  const CompileLimits &limits;
  OpBuilder builder;
  Location fileLoc;
  ModuleOp module;
  llvm::StringSet<> declared;
  /// tfm.attention_maps: the names of the runtime's map slots, in order.
  SmallVector<Attribute> attentionMaps;
};

Value ModelBuilder::weightsSlot(OpBuilder &b, std::string name) {
  // The encoder of an encoder_decoder's prefill shares forward's slots.
  StringAttr attr = builder.getStringAttr(name);
  auto *it = llvm::find(attentionMaps, attr);
  if (it == attentionMaps.end())
    it = attentionMaps.insert(it, attr);
  return arith::ConstantIndexOp::create(b, fileLoc, it - attentionMaps.begin());
}

Value ModelBuilder::weight(OpBuilder &b, StringRef name,
                           ArrayRef<int64_t> shape, StringRef alias,
                           bool blockIds) {
  if (declared.insert(name).second) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(module.getBody(), module.getBody()->end());
    auto param = ParamOp::create(builder, fileLoc, builder.getStringAttr(name),
                                 TypeAttr::get(f32(shape)),
                                 alias.empty() ? StringAttr()
                                               : builder.getStringAttr(alias));
    if (blockIds)
      param.setBlockIds(true);
  }
  return WeightOp::create(b, fileLoc, f32(shape), name);
}

std::vector<WeightSpec> ModelBuilder::attentionWeights(StringRef prefix,
                                                       bool self,
                                                       const LayerKinds &k) {
  int64_t d = c.dModel, h = c.numHeads, dk = c.headDim();
  // Q rows, then K and V rows of the key/value heads.
  int64_t inRows = (h + 2 * c.numKVHeads) * dk;
  std::string p = prefix.str() + ".";
  std::vector<WeightSpec> specs = {{p + "in_proj_weight", {inRows, d}}};
  if (c.bias)
    specs.push_back({p + "in_proj_bias", {inRows}});
  specs.push_back({p + "out_proj.weight", {d, d}});
  if (c.bias)
    specs.push_back({p + "out_proj.bias", {d}});
  if (c.score == ScoreKind::Bilinear) {
    specs.push_back({p + "score.weight", {h, dk, dk}});
  } else if (c.score == ScoreKind::Additive) {
    specs.push_back({p + "score.w_key", {h, c.additiveDim, dk}});
    specs.push_back({p + "score.w_query", {h, c.additiveDim, dk}});
    specs.push_back({p + "score.v", {h, c.additiveDim}});
  }
  if (self && k.linformerK) {
    specs.push_back({p + "proj_e", {*k.linformerK, c.maxSeqLen}});
    specs.push_back({p + "proj_f", {*k.linformerK, c.maxSeqLen}});
  }
  if (self && k.performerFeatures)
    specs.push_back({p + "features", {h, *k.performerFeatures, dk}});
  if (self && k.block && k.randomBlocks)
    specs.push_back({p + "block_pattern",
                     {(c.maxSeqLen + *k.block - 1) / *k.block, k.randomBlocks},
                     /*blockIds=*/true});
  return specs;
}

/// The weights of a layer in the order its function takes them:
/// self-attention, [cross-attention], feed-forward, then the norms in
/// PyTorch's numbering.
std::vector<WeightSpec> ModelBuilder::layerWeights(const LayerKind &kind,
                                                   const LayerKinds &k) {
  if (k.mamba)
    return mambaWeights();
  std::vector<WeightSpec> specs = attentionWeights("self_attn", true, k);
  if (kind.crossAttention)
    llvm::append_range(specs, attentionWeights("multihead_attn", false, k));
  llvm::append_range(specs, feedForwardWeights(k));
  int norms = kind.crossAttention ? 3 : 2;
  for (int i = 1; i <= norms; ++i)
    llvm::append_range(specs, normWeights("norm" + std::to_string(i)));
  return specs;
}

std::vector<WeightSpec> ModelBuilder::feedForwardWeights(const LayerKinds &k) {
  int64_t d = c.dModel, ff = c.dFF;
  // A gated FFN's linear1 holds the gate rows, then the up rows.
  int64_t firstRows = c.ffnGated ? 2 * ff : ff;
  auto linears = [&](const std::string &prefix) {
    std::vector<WeightSpec> specs = {
        {prefix + "linear1.weight", {firstRows, d}}};
    if (c.bias)
      specs.push_back({prefix + "linear1.bias", {firstRows}});
    specs.push_back({prefix + "linear2.weight", {d, ff}});
    if (c.bias)
      specs.push_back({prefix + "linear2.bias", {d}});
    return specs;
  };
  if (!k.experts)
    return linears("");
  // The router, then each expert's linears (contract section 7).
  std::vector<WeightSpec> specs = {
      {"moe.gate.weight", {k.experts->experts, d}}};
  for (int64_t e = 0; e < k.experts->experts; ++e)
    llvm::append_range(specs,
                       linears("moe.experts." + std::to_string(e) + "."));
  return specs;
}

std::vector<WeightSpec> ModelBuilder::mambaWeights() {
  const MambaSizes &m = *c.mamba;
  int64_t d = c.dModel, ch = c.mambaChannels(), n = m.stateSize;
  std::vector<WeightSpec> specs = normWeights("norm");
  llvm::append_range(specs, std::vector<WeightSpec>{
                                {"mixer.in_proj.weight", {2 * ch, d}},
                                {"mixer.conv1d.weight", {ch, 1, m.convWidth}},
                                {"mixer.conv1d.bias", {ch}},
                                {"mixer.x_proj.weight", {m.dtRank + 2 * n, ch}},
                                {"mixer.dt_proj.weight", {ch, m.dtRank}},
                                {"mixer.dt_proj.bias", {ch}},
                                {"mixer.A_log", {ch, n}},
                                {"mixer.D", {ch}},
                                {"mixer.out_proj.weight", {d, ch}},
                            });
  return specs;
}

MambaStateType ModelBuilder::mambaStateType() {
  return MambaStateType::get(builder.getContext(), limits.maxBatch,
                             c.mambaChannels(), c.mamba->convWidth,
                             c.mamba->stateSize);
}

Value ModelBuilder::mambaState(OpBuilder &b, StringRef name) {
  return stateBuffer(b, name, mambaStateType());
}

func::FuncOp ModelBuilder::buildMambaLayerFunc(const LayerKind &kind,
                                               StringRef name) {
  std::vector<WeightSpec> specs = mambaWeights();
  SmallVector<Type> argTypes = {activations()};
  // Cached: position, the mixer's state.
  if (kind.cached) {
    argTypes.push_back(builder.getIndexType());
    argTypes.push_back(mambaStateType());
  }
  size_t firstWeight = argTypes.size();
  for (const WeightSpec &s : specs)
    argTypes.push_back(f32(s.shape));

  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(module.getBody(), module.getBody()->end());
  auto func =
      func::FuncOp::create(builder, named(name), name,
                           builder.getFunctionType(argTypes, {activations()}));
  func.setPrivate();
  func.setArgAttr(0, "tfm.input", builder.getStringAttr("x"));
  if (kind.cached)
    func.setArgAttr(1, "tfm.input", builder.getStringAttr("position"));
  for (auto [i, s] : llvm::enumerate(specs))
    func.setArgAttr(firstWeight + i, "tfm.weight",
                    builder.getStringAttr(s.suffix));

  OpBuilder b = OpBuilder::atBlockEnd(func.addEntryBlock());
  Value x = func.getArgument(0);
  Value position = kind.cached ? func.getArgument(1) : Value();
  Value state = kind.cached ? func.getArgument(2) : Value();
  ValueRange w = func.getArguments().drop_front(firstWeight);
  size_t perNorm = normWeights("norm").size();
  // x + Mixer(Norm(x)), whatever `norm` places (contract section 7).
  Value normed = norm(b, named("norm"), x, w.take_front(perNorm));
  ValueRange m = w.drop_front(perNorm);
  Value mixed = MambaMixerOp::create(b, named("mixer"), activations(), normed,
                                     m[0], m[1], m[2], m[3], m[4], m[5], m[6],
                                     m[7], m[8], position, state);
  func::ReturnOp::create(b, fileLoc,
                         Value(AddOp::create(b, x.getLoc(), x, mixed)));
  return func;
}

std::vector<WeightSpec> ModelBuilder::normWeights(StringRef name) {
  std::vector<WeightSpec> specs = {{name.str() + ".weight", {c.dModel}}};
  // An RMS norm has no bias.
  if (c.normType == NormType::LayerNorm)
    specs.push_back({name.str() + ".bias", {c.dModel}});
  return specs;
}

MaskAttr ModelBuilder::selfAttentionMask(OpBuilder &b, bool causal, bool self,
                                         const LayerKinds &k) {
  if (self && k.block) {
    // BigBird: window and global count blocks.
    std::optional<int64_t> global, random;
    if (k.globalBlocks > 0)
      global = k.globalBlocks;
    if (k.randomBlocks > 0)
      random = k.randomBlocks;
    return MaskAttr::get(b.getContext(), causal, k.windowBlocks, global,
                         k.block, random);
  }
  std::optional<int64_t> window = self ? k.window : std::nullopt;
  if (!causal && !window)
    return MaskAttr();
  std::optional<int64_t> global;
  if (window && k.globalTokens > 0)
    global = k.globalTokens;
  return MaskAttr::get(b.getContext(), causal, window, global);
}

Value ModelBuilder::attention(OpBuilder &b, Location loc, const LayerKinds &k,
                              Value x, Value memory, ValueRange w, bool causal,
                              Value keyPadding, Value weightsSlot, Value cache,
                              Value position, bool readOnlyCache) {
  bool self = !memory && !readOnlyCache;
  RopeStyleAttr rope;
  FloatAttr ropeBase;
  if (self && c.positional == Positional::Rope) {
    rope = RopeStyleAttr::get(b.getContext(), c.ropeStyle);
    ropeBase = b.getF32FloatAttr(static_cast<float>(c.ropeBase));
  }
  // in_proj and out_proj weights, each followed by its bias if there are
  // biases; then the score parameters.
  unsigned perProjection = c.bias ? 2 : 1;
  Value inBias = c.bias ? w[1] : Value();
  Value outBias = c.bias ? w[3] : Value();
  IntegerAttr kvHeads;
  if (c.numKVHeads != c.numHeads)
    kvHeads = b.getI64IntegerAttr(c.numKVHeads);
  // Linformer's projections follow a self-attention's score parameters.
  ValueRange scoreParams = w.drop_front(2 * perProjection);
  Value projE, projF;
  if (self && k.linformerK) {
    projE = w[w.size() - 2];
    projF = w[w.size() - 1];
    scoreParams = scoreParams.drop_back(2);
  }
  // Performer's feature weights likewise, and BigBird's block pattern.
  Value features;
  if (self && k.performerFeatures) {
    features = w.back();
    scoreParams = scoreParams.drop_back(1);
  }
  Value blockPattern;
  if (self && k.block && k.randomBlocks) {
    blockPattern = w.back();
    scoreParams = scoreParams.drop_back(1);
  }
  return MultiHeadAttentionOp::create(
      b, loc, activations(), c.score, x, memory, c.numHeads, kvHeads, w[0],
      inBias, w[perProjection], outBias, scoreParams,
      selfAttentionMask(b, causal && self, self, k), rope, ropeBase, cache,
      position, readOnlyCache, projE, projF, features, blockPattern, keyPadding,
      weightsSlot);
}

KVCacheType ModelBuilder::cacheType(bool self, const LayerKinds &k) {
  // Performer's self-attention keeps the running sums of every query head
  // instead of the positions.
  if (self && k.performerFeatures)
    return KVCacheType::get(builder.getContext(), limits.maxBatch, c.numHeads,
                            limits.maxSeqLen, c.headDim(), *k.performerFeatures,
                            std::nullopt, 0);
  // A sliding window's self-attention keeps its global tokens and the last
  // W positions (memory O(W + G), not O(max_seq_len)), where that is fewer.
  std::optional<int64_t> window;
  int64_t globals = 0;
  if (self && k.cachesWindowOnly(limits.maxSeqLen)) {
    window = *k.window;
    globals = k.globalTokens;
  }
  return KVCacheType::get(builder.getContext(), limits.maxBatch, c.numKVHeads,
                          limits.maxSeqLen, c.headDim(), 0, window, globals);
}

Value ModelBuilder::stateBuffer(OpBuilder &b, StringRef name, Type type) {
  if (declared.insert(name).second) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(module.getBody(), module.getBody()->end());
    KVCacheDeclOp::create(builder, fileLoc, builder.getStringAttr(name),
                          TypeAttr::get(type));
  }
  return CacheOp::create(b, fileLoc, type, name);
}

Value ModelBuilder::cache(OpBuilder &b, StringRef name, bool self,
                          const LayerKinds &k) {
  return stateBuffer(b, name, cacheType(self, k));
}

Value ModelBuilder::feedForward(OpBuilder &b, Location loc, Value x,
                                ValueRange w, const LayerKinds &k) {
  if (k.experts) {
    // w: the gate, then per expert linear1 (bias), linear2 (bias).
    size_t perExpert = c.bias ? 4 : 2;
    SmallVector<Value> w1, b1, w2, b2;
    for (int64_t e = 0; e < k.experts->experts; ++e) {
      ValueRange expert = w.slice(1 + e * perExpert, perExpert);
      w1.push_back(expert[0]);
      w2.push_back(expert[c.bias ? 2 : 1]);
      if (c.bias) {
        b1.push_back(expert[1]);
        b2.push_back(expert[3]);
      }
    }
    return MixtureOfExpertsOp::create(b, loc, activations(), c.activation,
                                      c.ffnGated, k.experts->topK, x, w[0], w1,
                                      b1, w2, b2);
  }
  if (!c.bias)
    return FeedForwardOp::create(b, loc, activations(), c.activation,
                                 c.ffnGated, x, w[0], Value(), w[1], Value());
  return FeedForwardOp::create(b, loc, activations(), c.activation, c.ffnGated,
                               x, w[0], w[1], w[2], w[3]);
}

Value ModelBuilder::norm(OpBuilder &b, Location loc, Value x,
                         ValueRange weights) {
  bool rms = c.normType == NormType::RmsNorm;
  return LayerNormOp::create(b, loc, rms ? b.getUnitAttr() : UnitAttr(), x,
                             weights[0], rms ? Value() : weights[1],
                             b.getF32FloatAttr(static_cast<float>(c.normEps)));
}

StackFuncs ModelBuilder::buildStackFuncs(const LayerKind &kind,
                                         int64_t layers) {
  SmallVector<std::pair<const LayerKinds *, func::FuncOp>> distinct;
  StackFuncs funcs;
  for (int64_t i = 0; i < layers; ++i) {
    const LayerKinds &k = c.layerKinds(kind.decoderStack, i);
    auto *same =
        llvm::find_if(distinct, [&](const auto &d) { return *d.first == k; });
    if (same == distinct.end()) {
      std::string name = distinct.empty()
                             ? kind.funcName.str()
                             : (kind.funcName + "_" + Twine(i)).str();
      distinct.push_back({&k, buildLayerFunc(kind, k, name)});
      same = distinct.end() - 1;
    }
    funcs.perLayer.push_back(same->second);
  }
  return funcs;
}

func::FuncOp ModelBuilder::buildLayerFunc(const LayerKind &kind,
                                          const LayerKinds &k, StringRef name) {
  if (k.mamba)
    return buildMambaLayerFunc(kind, name);
  std::vector<WeightSpec> specs = layerWeights(kind, k);
  bool takesMemory = kind.crossAttention && !kind.memoryFromCache;
  SmallVector<Type> argTypes = {activations()};
  if (takesMemory)
    argTypes.push_back(activations());
  // Cached: position, self-attention cache[, cross-attention cache
  // [, memory length]].
  size_t firstCacheArg = argTypes.size();
  if (kind.cached) {
    argTypes.push_back(builder.getIndexType());
    argTypes.push_back(cacheType(true, k));
    if (kind.crossAttention)
      argTypes.push_back(cacheType(false, k));
    if (kind.memoryFromCache)
      argTypes.push_back(builder.getIndexType());
  }
  size_t firstWeight = argTypes.size();
  for (const WeightSpec &s : specs)
    argTypes.push_back(f32(s.shape));
  // Last, the padding masks of the keys (x's) and of the memory, then the
  // attention map slots.
  size_t firstMaskArg = argTypes.size();
  if (kind.masked) {
    argTypes.push_back(paddingMask());
    if (takesMemory)
      argTypes.push_back(paddingMask());
  }
  size_t firstSlotArg = argTypes.size();
  bool selfSlot = kind.mapped && k.fullAttention(),
       crossSlot = kind.mapped && takesMemory;
  if (selfSlot)
    argTypes.push_back(builder.getIndexType());
  if (crossSlot)
    argTypes.push_back(builder.getIndexType());

  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(module.getBody(), module.getBody()->end());
  auto func =
      func::FuncOp::create(builder, named(name), name,
                           builder.getFunctionType(argTypes, {activations()}));
  func.setPrivate();
  func.setArgAttr(0, "tfm.input", builder.getStringAttr("x"));
  if (takesMemory)
    func.setArgAttr(1, "tfm.input", builder.getStringAttr("memory"));
  if (kind.masked) {
    func.setArgAttr(firstMaskArg, "tfm.input", builder.getStringAttr("mask"));
    if (takesMemory)
      func.setArgAttr(firstMaskArg + 1, "tfm.input",
                      builder.getStringAttr("memory_mask"));
  }
  if (selfSlot)
    func.setArgAttr(firstSlotArg, "tfm.input",
                    builder.getStringAttr("self_weights_slot"));
  if (crossSlot)
    func.setArgAttr(firstSlotArg + selfSlot, "tfm.input",
                    builder.getStringAttr("cross_weights_slot"));

  for (auto [i, s] : llvm::enumerate(specs))
    func.setArgAttr(firstWeight + i, "tfm.weight",
                    builder.getStringAttr(s.suffix));

  OpBuilder b = OpBuilder::atBlockEnd(func.addEntryBlock());
  Value x = func.getArgument(0);
  Value memory = takesMemory ? func.getArgument(1) : Value();
  Value mask = kind.masked ? func.getArgument(firstMaskArg) : Value();
  Value memoryMask =
      kind.masked && takesMemory ? func.getArgument(firstMaskArg + 1) : Value();
  Value selfMap = selfSlot ? func.getArgument(firstSlotArg) : Value();
  Value crossMap =
      crossSlot ? func.getArgument(firstSlotArg + selfSlot) : Value();
  Value position, selfCache, crossCache, memoryLength;
  if (kind.cached) {
    position = func.getArgument(firstCacheArg);
    selfCache = func.getArgument(firstCacheArg + 1);
    func.setArgAttr(firstCacheArg, "tfm.input",
                    builder.getStringAttr("position"));
    if (kind.crossAttention)
      crossCache = func.getArgument(firstCacheArg + 2);
    if (kind.memoryFromCache) {
      memoryLength = func.getArgument(firstCacheArg + 3);
      func.setArgAttr(firstCacheArg + 3, "tfm.input",
                      builder.getStringAttr("memory_length"));
    }
  }
  ValueRange w = func.getArguments().slice(firstWeight, specs.size());
  size_t selfWeights = attentionWeights("self_attn", true, k).size();
  ValueRange selfW = w.take_front(selfWeights);
  w = w.drop_front(selfWeights);
  ValueRange crossW;
  if (kind.crossAttention) {
    size_t crossWeights = attentionWeights("multihead_attn", false, k).size();
    crossW = w.take_front(crossWeights);
    w = w.drop_front(crossWeights);
  }
  size_t ffWeights = feedForwardWeights(k).size();
  ValueRange ffW = w.take_front(ffWeights);
  ValueRange normW = w.drop_front(ffWeights);
  size_t perNorm = normWeights("norm").size();
  auto layerNorm = [&](int i, Value v) {
    return norm(b, named("norm" + std::to_string(i + 1)), v,
                normW.slice(perNorm * i, perNorm));
  };

  // Each sublayer f: post-norm x = LN(x + f(x)); pre-norm x = x + f(LN(x)).
  int normIndex = 0;
  auto sublayer = [&](llvm::function_ref<Value(Value)> f) {
    int i = normIndex++;
    if (c.norm == NormPlacement::Pre)
      return Value(AddOp::create(b, x.getLoc(), x, f(layerNorm(i, x))));
    return layerNorm(i, AddOp::create(b, x.getLoc(), x, f(x)));
  };
  x = sublayer([&](Value in) {
    return attention(b, named("self_attn"), k, in, Value(), selfW, kind.causal,
                     mask, selfMap, selfCache, position);
  });
  if (kind.crossAttention)
    x = sublayer([&](Value in) {
      Location loc = named("multihead_attn");
      if (!kind.cached)
        return attention(b, loc, k, in, memory, crossW, false, memoryMask,
                         crossMap);
      if (kind.memoryFromCache)
        return attention(b, loc, k, in, Value(), crossW, false, Value(),
                         Value(), crossCache, memoryLength,
                         /*readOnlyCache=*/true);
      // The memory's keys and values go into the cache from position 0.
      Value zero = arith::ConstantIndexOp::create(b, fileLoc, 0);
      return attention(b, loc, k, in, memory, crossW, false, Value(), Value(),
                       crossCache, zero);
    });
  x = sublayer(
      [&](Value in) { return feedForward(b, named("ffn"), in, ffW, k); });
  func::ReturnOp::create(b, fileLoc, x);
  return func;
}

Value ModelBuilder::embed(OpBuilder &b, Value input, StringRef tokenTable,
                          StringRef positionTable, Value offset,
                          Value tokenTypes) {
  Value x = input;
  if (c.vocabSize) {
    bool shared = c.architecture == Architecture::EncoderDecoder;
    Value table = weight(b, tokenTable, {*c.vocabSize, c.dModel},
                         shared ? "embed.weight" : "");
    float scale = c.embeddingScale == EmbeddingScale::SqrtDModel
                      ? std::sqrt(static_cast<float>(c.dModel))
                      : 1.0f;
    x = EmbeddingOp::create(b, named(tokenTable), input, table,
                            b.getF32FloatAttr(scale));
  }
  if (tokenTypes) {
    Value table = weight(b, "type_embed.weight", {*c.typeVocabSize, c.dModel});
    x = AddOp::create(b, named("type_embed.add"), x,
                      EmbeddingOp::create(b, named("type_embed.weight"),
                                          tokenTypes, table,
                                          b.getF32FloatAttr(1.0f)));
  }
  if (c.positional == Positional::Sinusoidal)
    x = PositionEncodingOp::create(b, named("positions"), x.getType(),
                                   PositionKind::Sinusoidal, x, Value(),
                                   offset);
  else if (c.positional == Positional::Learned)
    x = PositionEncodingOp::create(
        b, named(positionTable), x.getType(), PositionKind::Learned, x,
        weight(b, positionTable, {c.maxSeqLen, c.dModel}), offset);
  if (c.embeddingNorm) {
    // "embed.weight" -> "embed_norm", "src_embed.weight" -> "src_embed_norm".
    std::string normName =
        (tokenTable.drop_back(strlen(".weight")) + "_norm").str();
    SmallVector<Value> weights;
    for (const WeightSpec &s : normWeights(normName))
      weights.push_back(weight(b, s.suffix, s.shape));
    x = norm(b, named(normName), x, weights);
  }
  return x;
}

Value ModelBuilder::stack(OpBuilder &b, Value x, Value memory,
                          const LayerKind &kind, const StackFuncs &funcs,
                          StringRef prefix, StringRef finalNorm, Value position,
                          Value memoryLength, Value mask, Value memoryMask) {
  for (auto [i, layerFunc] : llvm::enumerate(funcs.perLayer)) {
    const LayerKinds &k = c.layerKinds(kind.decoderStack, i);
    std::vector<WeightSpec> specs = layerWeights(kind, k);
    std::string layerPrefix = (prefix + std::to_string(i) + ".").str();
    SmallVector<Value> args = {x};
    if (memory)
      args.push_back(memory);
    if (kind.cached && k.mamba) {
      args.push_back(position);
      args.push_back(mambaState(b, layerPrefix + "mixer.state"));
    } else if (kind.cached) {
      args.push_back(position);
      args.push_back(cache(b, layerPrefix + "self_attn.cache", true, k));
      if (kind.crossAttention)
        args.push_back(
            cache(b, layerPrefix + "multihead_attn.cache", false, k));
      if (kind.memoryFromCache)
        args.push_back(memoryLength);
    }
    for (const WeightSpec &s : specs)
      args.push_back(
          weight(b, layerPrefix + s.suffix, s.shape, "", s.blockIds));
    if (kind.masked) {
      args.push_back(mask);
      if (memory)
        args.push_back(memoryMask);
    }
    if (kind.mapped) {
      // "layers.3." -> "layer3", "encoder.layers.3." -> "encoder.layer3".
      std::string map =
          (prefix.drop_back(strlen("layers.")) + "layer" + std::to_string(i))
              .str();
      if (k.fullAttention())
        args.push_back(weightsSlot(b, map + ".self"));
      if (memory)
        args.push_back(weightsSlot(b, map + ".cross"));
    }
    x = func::CallOp::create(b, named(layerPrefix + "call"), layerFunc, args)
            .getResult(0);
  }
  if (c.finalNorm) {
    SmallVector<Value> weights;
    for (const WeightSpec &s : normWeights(finalNorm))
      weights.push_back(weight(b, s.suffix, s.shape));
    x = norm(b, named(finalNorm), x, weights);
  }
  return x;
}

Value ModelBuilder::lmHead(OpBuilder &b, Value x, StringRef tiedTable) {
  Value head = c.tieEmbeddings
                   ? weight(b, tiedTable, {*c.vocabSize, c.dModel})
                   : weight(b, "lm_head.weight", {*c.vocabSize, c.dModel});
  return LinearOp::create(b, named("lm_head"), x, head);
}

void ModelBuilder::buildDecoderGeneration() {
  LayerKind kind{"decoder_layer_cached", true, false, /*cached=*/true};
  kind.decoderStack = true;
  StackFuncs layers = buildStackFuncs(kind, c.numDecoderLayers);
  Type ids = RankedTensorType::get({kDyn, kDyn}, builder.getI32Type());

  // prefill(ids): the prompt at positions 0.., logits of its last position.
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(module.getBody(), module.getBody()->end());
  auto prefill = func::FuncOp::create(
      builder, named("prefill"), "prefill",
      builder.getFunctionType({ids}, {f32({kDyn, 1, *c.vocabSize})}));
  prefill.setArgAttr(0, "tfm.input", builder.getStringAttr("input"));
  {
    OpBuilder b = OpBuilder::atBlockEnd(prefill.addEntryBlock());
    Value zero = arith::ConstantIndexOp::create(b, fileLoc, 0);
    Value x = stack(b,
                    embed(b, prefill.getArgument(0), "embed.weight",
                          "pos_embed.weight", zero),
                    Value(), kind, layers, "layers.", "norm", zero);
    x = TakeLastOp::create(b, named("last_position"), x);
    func::ReturnOp::create(b, fileLoc, lmHead(b, x, "embed.weight"));
  }

  // decode(ids, position): new tokens at `position`.. attend to the cache.
  auto decode = func::FuncOp::create(
      builder, named("decode"), "decode",
      builder.getFunctionType({ids, builder.getIndexType()},
                              {f32({kDyn, kDyn, *c.vocabSize})}));
  decode.setArgAttr(0, "tfm.input", builder.getStringAttr("input"));
  decode.setArgAttr(1, "tfm.input", builder.getStringAttr("position"));
  {
    OpBuilder b = OpBuilder::atBlockEnd(decode.addEntryBlock());
    Value position = decode.getArgument(1);
    Value x = stack(b,
                    embed(b, decode.getArgument(0), "embed.weight",
                          "pos_embed.weight", position),
                    Value(), kind, layers, "layers.", "norm", position);
    func::ReturnOp::create(b, fileLoc, lmHead(b, x, "embed.weight"));
  }
}

void ModelBuilder::buildEncoderDecoderGeneration(
    const StackFuncs &encoderLayers, const LayerKind &encoderKind) {
  LayerKind prefillKind{"decoder_layer_prefill", true, true, /*cached=*/true};
  LayerKind decodeKind{"decoder_layer_cached", true, true, /*cached=*/true,
                       /*memoryFromCache=*/true};
  prefillKind.decoderStack = decodeKind.decoderStack = true;
  StackFuncs prefillLayers = buildStackFuncs(prefillKind, c.numDecoderLayers);
  StackFuncs decodeLayers = buildStackFuncs(decodeKind, c.numDecoderLayers);
  Type ids = RankedTensorType::get({kDyn, kDyn}, builder.getI32Type());
  Type index = builder.getIndexType();

  // prefill(src, tgt[, src_mask]): the encoder over src, then the target
  // prefix at positions 0.., logits of its last position. A masked encoder
  // layer takes the source's mask, the third input as in `forward` (the
  // runtime passes all ones: generation takes no masks yet).
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(module.getBody(), module.getBody()->end());
  SmallVector<Type> prefillInputs = {ids, ids};
  if (encoderKind.masked)
    prefillInputs.push_back(paddingMask());
  auto prefill = func::FuncOp::create(
      builder, named("prefill"), "prefill",
      builder.getFunctionType(prefillInputs, {f32({kDyn, 1, *c.vocabSize})}));
  prefill.setArgAttr(0, "tfm.input", builder.getStringAttr("src"));
  prefill.setArgAttr(1, "tfm.input", builder.getStringAttr("tgt"));
  if (encoderKind.masked) {
    prefill.setArgAttr(2, "tfm.input", builder.getStringAttr("src_mask"));
    prefill.setArgAttr(2, "tfm.mask_of", builder.getI64IntegerAttr(0));
  }
  {
    OpBuilder b = OpBuilder::atBlockEnd(prefill.addEntryBlock());
    Value sourceMask = encoderKind.masked ? prefill.getArgument(2) : Value();
    Value memory = stack(b,
                         embed(b, prefill.getArgument(0), "src_embed.weight",
                               "src_pos_embed.weight"),
                         Value(), encoderKind, encoderLayers, "encoder.layers.",
                         "encoder.norm", Value(), Value(), sourceMask);
    Value zero = arith::ConstantIndexOp::create(b, fileLoc, 0);
    Value x = stack(b,
                    embed(b, prefill.getArgument(1), "tgt_embed.weight",
                          "tgt_pos_embed.weight", zero),
                    memory, prefillKind, prefillLayers, "decoder.layers.",
                    "decoder.norm", zero);
    x = TakeLastOp::create(b, named("last_position"), x);
    func::ReturnOp::create(b, fileLoc, lmHead(b, x, "tgt_embed.weight"));
  }

  // decode(tgt, position, memory_length): new target tokens at `position`..
  // over the caches; the memory is the first `memory_length` positions of
  // each cross-attention cache.
  auto decode = func::FuncOp::create(
      builder, named("decode"), "decode",
      builder.getFunctionType({ids, index, index},
                              {f32({kDyn, kDyn, *c.vocabSize})}));
  decode.setArgAttr(0, "tfm.input", builder.getStringAttr("tgt"));
  decode.setArgAttr(1, "tfm.input", builder.getStringAttr("position"));
  decode.setArgAttr(2, "tfm.input", builder.getStringAttr("memory_length"));
  {
    OpBuilder b = OpBuilder::atBlockEnd(decode.addEntryBlock());
    Value position = decode.getArgument(1);
    Value x = stack(b,
                    embed(b, decode.getArgument(0), "tgt_embed.weight",
                          "tgt_pos_embed.weight", position),
                    Value(), decodeKind, decodeLayers, "decoder.layers.",
                    "decoder.norm", position, decode.getArgument(2));
    func::ReturnOp::create(b, fileLoc, lmHead(b, x, "tgt_embed.weight"));
  }
}

OwningOpRef<ModuleOp> ModelBuilder::build() {
  OwningOpRef<ModuleOp> owned = ModuleOp::create(fileLoc, StringRef(c.name));
  module = *owned;
  module->setAttr("tfm.architecture",
                  builder.getStringAttr(stringifyArchitecture(c.architecture)));
  module->setAttr("tfm.max_batch", builder.getI64IntegerAttr(limits.maxBatch));
  module->setAttr("tfm.max_seq_len",
                  builder.getI64IntegerAttr(limits.maxSeqLen));

  Type inputType =
      c.vocabSize
          ? Type(RankedTensorType::get({kDyn, kDyn}, builder.getI32Type()))
          : Type(activations());
  Type outputType =
      c.lmHead ? Type(f32({kDyn, kDyn, *c.vocabSize})) : Type(activations());
  bool encDec = c.architecture == Architecture::EncoderDecoder;
  SmallVector<StringRef> inputNames = encDec
                                          ? SmallVector<StringRef>{"src", "tgt"}
                                          : SmallVector<StringRef>{"input"};
  // The inputs a padding mask can go with; token types come after them.
  size_t maskable = inputNames.size();
  if (c.typeVocabSize)
    inputNames.push_back("token_type_ids");
  SmallVector<Type> inputTypes(inputNames.size(), inputType);
  // Each input's padding mask follows the inputs (contract section 8),
  // unless the attention kind has no keys to hide (linformer mixes every
  // position into each key; performer sums over its features).
  bool linformer =
      c.anyLayer([](const LayerKinds &k) { return bool(k.linformerK); });
  bool performer =
      c.anyLayer([](const LayerKinds &k) { return bool(k.performerFeatures); });
  bool mamba = c.anyLayer([](const LayerKinds &k) { return k.mamba; });
  bool masked = !linformer && !performer && !mamba;
  if (!masked)
    module->setAttr(
        "tfm.padding_masks_refused",
        builder.getStringAttr(
            linformer   ? "linformer attention mixes every position into each "
                          "key"
            : performer ? "performer attention sums every key into its "
                          "features"
                        : "a mamba layer's scan carries every position into "
                          "the next"));
  if (masked)
    inputTypes.append(maskable, paddingMask());

  // Layer functions first, so they read before `forward`, which uses them.
  LayerKind encoderKind{"encoder_layer", c.causal && !encDec, false};
  LayerKind decoderKind{"decoder_layer", c.causal, encDec};
  encoderKind.masked = decoderKind.masked = masked;
  encoderKind.mapped = decoderKind.mapped = true;
  decoderKind.decoderStack = true;
  StackFuncs encoderLayers = buildStackFuncs(encoderKind, c.numEncoderLayers);
  StackFuncs decoderLayers = buildStackFuncs(decoderKind, c.numDecoderLayers);

  builder.setInsertionPoint(module.getBody(), module.getBody()->end());
  auto forward =
      func::FuncOp::create(builder, named("forward"), "forward",
                           builder.getFunctionType(inputTypes, {outputType}));
  for (auto [i, name] : llvm::enumerate(inputNames)) {
    forward.setArgAttr(i, "tfm.input", builder.getStringAttr(name));
    if (i >= maskable) {
      // Token types: optional, zeros shaped like the ids when not given.
      forward.setArgAttr(i, "tfm.zeros_like", builder.getI64IntegerAttr(0));
      continue;
    }
    if (!masked)
      continue;
    size_t maskArg = inputNames.size() + i;
    forward.setArgAttr(
        maskArg, "tfm.input",
        builder.getStringAttr(encDec ? (name + "_mask").str() : "mask"));
    forward.setArgAttr(maskArg, "tfm.mask_of", builder.getI64IntegerAttr(i));
  }
  // The mask of input i, or null.
  auto maskOf = [&](unsigned i) {
    return masked ? forward.getArgument(inputNames.size() + i) : Value();
  };
  forward.setResultAttr(0, "tfm.output",
                        builder.getStringAttr(c.lmHead ? "logits" : "hidden"));
  OpBuilder b = OpBuilder::atBlockEnd(forward.addEntryBlock());

  Value out;
  StringRef targetTable = "embed.weight";
  switch (c.architecture) {
  case Architecture::Encoder:
    out = stack(b,
                embed(b, forward.getArgument(0), "embed.weight",
                      "pos_embed.weight", Value(),
                      c.typeVocabSize ? forward.getArgument(1) : Value()),
                Value(), encoderKind, encoderLayers, "layers.", "norm", Value(),
                Value(), maskOf(0));
    break;
  case Architecture::Decoder:
    out = stack(
        b, embed(b, forward.getArgument(0), "embed.weight", "pos_embed.weight"),
        Value(), decoderKind, decoderLayers, "layers.", "norm", Value(),
        Value(), maskOf(0));
    break;
  case Architecture::EncoderDecoder: {
    Value memory = stack(b,
                         embed(b, forward.getArgument(0), "src_embed.weight",
                               "src_pos_embed.weight"),
                         Value(), encoderKind, encoderLayers, "encoder.layers.",
                         "encoder.norm", Value(), Value(), maskOf(0));
    out = stack(b,
                embed(b, forward.getArgument(1), "tgt_embed.weight",
                      "tgt_pos_embed.weight"),
                memory, decoderKind, decoderLayers, "decoder.layers.",
                "decoder.norm", Value(), Value(), maskOf(1), maskOf(0));
    targetTable = "tgt_embed.weight";
    break;
  }
  }

  if (c.lmHead)
    out = lmHead(b, out, targetTable);
  func::ReturnOp::create(b, fileLoc, out);

  // Generation needs token ids and an LM head. Linformer's projected keys
  // mix every position of the sequence (E_n changes with n), so no cache
  // can hold them: such a model generates by running @forward over the
  // whole sequence so far at each step (tfm.regenerates).
  bool generates = c.vocabSize && c.lmHead &&
                   (c.architecture == Architecture::Decoder || encDec);
  if (generates && linformer)
    module->setAttr("tfm.regenerates", builder.getUnitAttr());
  else if (generates && c.architecture == Architecture::Decoder)
    buildDecoderGeneration();
  else if (generates)
    buildEncoderDecoderGeneration(encoderLayers, encoderKind);

  module->setAttr("tfm.attention_maps", builder.getArrayAttr(attentionMaps));

  // Weights and caches were declared as the functions met them: list them
  // first, so a reader sees the model's state before the code that uses it.
  Operation *firstFunc = *module.getBody()->getOps<func::FuncOp>().begin();
  for (Operation &op :
       llvm::make_early_inc_range(module.getBody()->getOperations()))
    if (isa<ParamOp, KVCacheDeclOp>(op))
      op.moveBefore(firstFunc);
  return owned;
}

} // namespace

OwningOpRef<ModuleOp> buildModel(MLIRContext &context,
                                 const ModelConfig &config,
                                 const CompileLimits &limits,
                                 StringRef sourcePath) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect>();
  return ModelBuilder(context, config, limits, sourcePath).build();
}

} // namespace tfm
