//===- ConvertTfmToLinalg.cpp - tfm ops -> linalg on tensors --------------===//
//
// The first step of the LLVM backend: every tfm op becomes linalg.generic
// ops (matmuls as contractions, norms and softmax as a reduction then an
// elementwise op) plus tensor reshapes, on tensors; later passes tile,
// vectorise and bufferize them with upstream machinery. Each lowering keeps
// the arithmetic of the PyTorch reference (the bias added after the
// product, the angles of positional encodings in double).
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "MixtureOfExpertsBuilder.h"
#include "PerformerBuilder.h"
#include "ScanBuilder.h"
#include "tfm/Lowering/LLVMBackend.h"
#include "tfm/Transforms/GemmTiling.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::tfm {
#define GEN_PASS_DEF_CONVERTTFMTOLINALG
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

//===----------------------------------------------------------------------===//
// Patterns, one per op
//===----------------------------------------------------------------------===//

/// The layer norm, or the RMS norm, of x.
Value normalize(TensorBuilder &tb, bool rms, Value x, Value gamma, Value beta,
                float eps) {
  return rms ? tb.rmsNorm(x, gamma, eps) : tb.layerNorm(x, gamma, beta, eps);
}

template <typename Op> struct TfmLowering : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    TensorBuilder tb(rewriter, op.getLoc());
    FailureOr<Value> result = lower(op, tb);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, *result);
    return success();
  }
  virtual FailureOr<Value> lower(Op op, TensorBuilder &tb) const = 0;
};

struct LowerAdd : TfmLowering<AddOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(AddOp op, TensorBuilder &tb) const override {
    return tb.add(op.getLhs(), op.getRhs());
  }
};

struct LowerLinear : TfmLowering<LinearOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(LinearOp op, TensorBuilder &tb) const override {
    // Rows of a stacked weight are segments of its packed panels.
    GemmWeight w = gemmWeight(op);
    Value panels = tb.packedOf(w.packed);
    Value y = panels
                  ? tb.linearSegments(op.getBf16Inputs()
                                          ? tb.roundedToBFloat16(op.getInput())
                                          : op.getInput(),
                                      panels, w.firstSegment, w.usedSegments,
                                      w.segmentRows, op.getBias())
                  : tb.linear(op.getInput(), op.getWeight(), op.getBias(),
                              op.getBf16Inputs());
    if (std::optional<Activation> act = op.getActivation())
      y = tb.activation(y, *act);
    if (Value residual = op.getResidual())
      y = tb.add(y, residual);
    return y;
  }
};

struct LowerLayerNorm : TfmLowering<LayerNormOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(LayerNormOp op, TensorBuilder &tb) const override {
    return normalize(tb, op.getRms(), op.getInput(), op.getGamma(),
                     op.getBeta(), op.getEps().convertToFloat());
  }
};

struct LowerGlu : TfmLowering<GluOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(GluOp op, TensorBuilder &tb) const override {
    return tb.glu(op.getInput(), op.getActivation());
  }
};

struct LowerAddLayerNorm : OpRewritePattern<AddLayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddLayerNormOp op,
                                PatternRewriter &rewriter) const override {
    TensorBuilder tb(rewriter, op.getLoc());
    Value sum = tb.elementwise(
        {op.getLhs(), op.getRhs()},
        [](OpBuilder &nb, Location nl, ValueRange a) {
          return arith::AddFOp::create(nb, nl, a[0], a[1]).getResult();
        });
    Value norm = normalize(tb, op.getRms(), sum, op.getGamma(), op.getBeta(),
                           op.getEps().convertToFloat());
    rewriter.replaceOp(op, {sum, norm});
    return success();
  }
};

struct LowerSoftmax : TfmLowering<SoftmaxOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(SoftmaxOp op, TensorBuilder &tb) const override {
    int64_t rank = op.getInput().getType().getRank();
    int64_t dim = op.getDim() < 0 ? op.getDim() + rank : op.getDim();
    return tb.softmax(op.getInput(), dim);
  }
};

struct LowerSliceRows : TfmLowering<SliceRowsOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(SliceRowsOp op, TensorBuilder &tb) const override {
    // The rows of a GEMM weight are read from its packed panels
    // (LowerLinear; a K of 1 has none); the slice then dies.
    if (op.getType().getDimSize(1) != 1 &&
        llvm::all_of(op->getUses(), [](OpOperand &use) {
          auto linear = dyn_cast<LinearOp>(use.getOwner());
          return linear && use.get() == linear.getWeight();
        }))
      return failure();
    return tb.rows(op.getInput(), op.getOffset(), op.getType().getDimSize(0));
  }
};

struct LowerSplitHeads : TfmLowering<SplitHeadsOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(SplitHeadsOp op, TensorBuilder &tb) const override {
    Value x = op.getInput();
    if (op.getPartCount() != 1) {
      int64_t d = cast<RankedTensorType>(x.getType()).getShape().back() /
                  op.getPartCount();
      x = tb.features(x, op.getPartIndex() * d, d);
    }
    return tb.splitHeads(x, op.getNumHeads());
  }
};

struct LowerMergeHeads : TfmLowering<MergeHeadsOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(MergeHeadsOp op, TensorBuilder &tb) const override {
    return tb.mergeHeads(op.getInput());
  }
};

struct LowerRotary : TfmLowering<RotaryOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(RotaryOp op, TensorBuilder &tb) const override {
    return tb.rotary(op.getInput(), op.getStyle(),
                     op.getBase().convertToFloat(), op.getOffset());
  }
};

struct LowerSequenceProjection : TfmLowering<SequenceProjectionOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(SequenceProjectionOp op,
                         TensorBuilder &tb) const override {
    return tb.sequenceProjection(op.getInput(), op.getProjection());
  }
};

/// Runtime service `name` (kRuntimeCallPrefix), declared once in the
/// module with a C interface of `type`.
func::FuncOp runtimeCall(Operation *at, OpBuilder &b, StringRef name,
                         FunctionType type) {
  auto module = at->getParentOfType<ModuleOp>();
  std::string symbol = (::tfm::kRuntimeCallPrefix + name).str();
  if (auto existing = module.lookupSymbol<func::FuncOp>(symbol))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto decl = func::FuncOp::create(b, at->getLoc(), symbol, type);
  decl.setPrivate();
  decl->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  return decl;
}

/// `weights_to`: while the runtime collects map `slot` (the executable's
/// --dump-attention), the attention's softmax weights over every key,
/// [batch, heads, queries, keys] (a key its rules mask gets exactly 0),
/// computed apart from the attention itself and handed to the runtime;
/// otherwise one call that answers no. `q` and `k` are as the attention
/// reads them: grouped queries [L..., kv heads, group, s, dk] over their
/// key heads, merged back into heads here.
void writeAttentionWeights(AttentionOp op, TensorBuilder &tb, ScoreKind score,
                           Value q, Value k, ValueRange params,
                           const KeySpan &span, const RandomKeyBlocks &random,
                           bool groupedQueries) {
  OpBuilder &b = tb.b;
  Location loc = tb.loc;
  Value slot = op.getWeightsSlot();
  auto memrefType =
      MemRefType::get(SmallVector<int64_t>(4, ShapedType::kDynamic), tb.f32());
  func::FuncOp wanted =
      runtimeCall(op, b, "attention_weights_wanted",
                  b.getFunctionType({b.getIndexType()}, {b.getIndexType()}));
  func::FuncOp write =
      runtimeCall(op, b, "attention_weights_write",
                  b.getFunctionType({b.getIndexType(), memrefType}, {}));
  Value answer =
      func::CallOp::create(b, loc, wanted, ValueRange{slot}).getResult(0);
  Value collect =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, answer,
                            arith::ConstantIndexOp::create(b, loc, 0));
  auto ifOp = scf::IfOp::create(b, loc, collect, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  Value weights = tb.attentionWeights(
      score, q, k, params, span, Value(), op.getQueryOffset(),
      /*keysTransposed=*/false, {}, op.getKeyPadding(), random);
  if (groupedQueries)
    weights = tb.mergeHeadGroups(weights);
  auto type = cast<RankedTensorType>(weights.getType());
  if (type.getRank() == 3) {
    // An unbatched input: its map is [1, heads, queries, keys].
    SmallVector<int64_t> shape = {1};
    shape.append(type.getShape().begin(), type.getShape().end());
    SmallVector<OpFoldResult> outSizes = {b.getIndexAttr(1)};
    llvm::append_range(outSizes, tb.sizes(weights));
    weights = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, tb.f32()), weights,
        SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}}, outSizes);
  }
  weights = tensor::CastOp::create(
      b, loc,
      RankedTensorType::get(SmallVector<int64_t>(4, ShapedType::kDynamic),
                            tb.f32()),
      weights);
  Value buffer = bufferization::ToBufferOp::create(b, loc, memrefType, weights,
                                                   /*readOnly=*/true);
  func::CallOp::create(b, loc, write, ValueRange{slot, buffer});
}

struct LowerAttention : TfmLowering<AttentionOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(AttentionOp op, TensorBuilder &tb) const override {
    KeySpan span = op.getMaskAttr() ? op.getMaskAttr().getKeySpan() : KeySpan();
    RandomKeyBlocks random;
    if (Value pattern = op.getBlockPattern()) {
      // Blocks of query rows gather their pattern's key blocks after the
      // band; a few rows (decode steps) mask every key by the pattern's
      // table instead.
      MaskAttr mask = op.getMaskAttr();
      random.pattern = pattern;
      random.block = mask.getBlock().value_or(1);
      random.randomBlocks = mask.getRandomBlocks().value_or(0);
      random.windowBlocks = mask.getWindow().value_or(0);
      random.globalBlocks = mask.getGlobalTokens().value_or(0);
      random.allowed =
          tb.randomKeyBlocksTable(pattern, op.getKey(), random.block);
      if (op.isCausal())
        random.limit = span.end; // causal: the diagonal
    }
    RankedTensorType qType = op.getQuery().getType();
    int64_t rank = qType.getRank();
    int64_t heads = rank >= 3 ? qType.getDimSize(rank - 3) : 1;
    int64_t kvHeads =
        rank >= 3 ? op.getKey().getType().getDimSize(rank - 3) : 1;
    if (kvHeads == heads) {
      if (op.getWeightsSlot())
        writeAttentionWeights(op, tb, op.getScore(), op.getQuery(), op.getKey(),
                              op.getScoreParams(), span, random,
                              /*groupedQueries=*/false);
      return tb.attention(op.getScore(), op.getQuery(), op.getKey(),
                          op.getValue(), op.getScoreParams(), span,
                          op.getQueryOffset(), op.getKeyPadding(), random);
    }
    int64_t group = heads / kvHeads;
    if (op.getScore() == ScoreKind::Additive) {
      // Additive scores project the keys per query head: each key/value
      // head repeated for the queries that read it.
      Value keys = tb.repeatHeads(op.getKey(), group);
      if (op.getWeightsSlot())
        writeAttentionWeights(op, tb, op.getScore(), op.getQuery(), keys,
                              op.getScoreParams(), span, random,
                              /*groupedQueries=*/false);
      return tb.attention(op.getScore(), op.getQuery(), keys,
                          tb.repeatHeads(op.getValue(), group),
                          op.getScoreParams(), span, op.getQueryOffset(),
                          op.getKeyPadding(), random);
    }
    // Grouped-query attention: the queries as [L..., kv heads, group, s,
    // dk], each group over its key/value head. A bilinear W_h is per query
    // head: folded into the queries first, it leaves a dot product.
    Value q = op.getQuery();
    ScoreKind score = op.getScore();
    ValueRange params = op.getScoreParams();
    if (score == ScoreKind::Bilinear) {
      q = tb.perHeadProject(q, params[0], /*transposedW=*/false);
      score = ScoreKind::Dot;
      params = {};
    }
    Value grouped = tb.groupHeads(q, group);
    if (op.getWeightsSlot())
      writeAttentionWeights(op, tb, score, grouped, op.getKey(), params, span,
                            random, /*groupedQueries=*/true);
    Value out =
        tb.attention(score, grouped, op.getKey(), op.getValue(), params, span,
                     op.getQueryOffset(), op.getKeyPadding(), random);
    return tb.mergeHeadGroups(out);
  }
};

/// A cache is a buffer the runtime keeps across calls, in the layout its
/// type defines.
MemRefType cacheBuffer(StateBufferTypeInterface type) {
  return MemRefType::get({type.getFloats()},
                         Float32Type::get(type.getContext()));
}

/// The buffer of cache handle `cache` (a function argument, which
/// convertCacheArguments makes that buffer once every op is lowered).
Value cacheBufferOf(OpBuilder &rewriter, Location loc, Value cache) {
  return UnrealizedConversionCastOp::create(
             rewriter, loc,
             cacheBuffer(cast<StateBufferTypeInterface>(cache.getType())),
             cache)
      .getResult(0);
}

/// Index arithmetic on a windowed cache's ring (`!tfm.kv_cache`'s
/// `window`, `globals`): where positions are and which runs of slots hold
/// consecutive ones.
struct RingIndex {
  OpBuilder &b;
  Location loc;
  int64_t globals, window;

  RingIndex(OpBuilder &b, Location loc, KVCacheType type)
      : b(b), loc(loc), globals(type.getGlobals()), window(*type.getWindow()) {}
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  /// The slot of position j >= globals (window > 0).
  Value slot(Value j) {
    return add(c(globals),
               arith::RemSIOp::create(b, loc, sub(j, c(globals)), c(window)));
  }
  /// `count` consecutive positions from `first` (>= globals, count <=
  /// window) as two runs of slots, where the ring wraps: `f(slot, offset,
  /// length)` for each, `offset` counted from `first`.
  void runs(Value first, Value count,
            llvm::function_ref<void(Value, Value, Value)> f) {
    Value start = slot(first);
    Value run = min(count, sub(c(globals + window), start));
    f(start, c(0), run);
    f(c(globals), run, sub(count, run));
  }
};

struct LowerCacheAppend : OpRewritePattern<CacheAppendOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CacheAppendOp op,
                                PatternRewriter &rewriter) const override {
    TensorBuilder tb(rewriter, op.getLoc());
    KVCacheType type = op.getCache().getType();
    Value buffer = cacheBufferOf(rewriter, op.getLoc(), op.getCache());
    Value position = op.getPosition();
    Value added = getValueOrCreateConstantIndexOp(rewriter, op.getLoc(),
                                                  tb.sizes(op.getKeys())[2]);
    auto write = [&](Value rowsFirst, Value count, Value slot) {
      for (bool values : {false, true}) {
        Value t = values ? op.getValues() : op.getKeys();
        tb.writeCache(buffer, type, values, tb.headRows(t, rowsFirst, count),
                      slot);
      }
    };
    if (!type.isWindowed()) {
      tb.writeCache(buffer, type, /*values=*/false, op.getKeys(), position);
      tb.writeCache(buffer, type, /*values=*/true, op.getValues(), position);
    } else {
      // The globals among the new positions in their own slots; of the
      // others, the last W (those no later one of this call replaces) in
      // the ring.
      RingIndex ring(rewriter, op.getLoc(), type);
      Value end = ring.add(position, added);
      Value zero = ring.c(0);
      // (Empty runs start in bounds too: at slot min(position, G), at row
      // at most n.)
      Value globals = ring.c(ring.globals);
      Value globalEnd = ring.min(globals, end);
      write(zero, ring.max(zero, ring.sub(globalEnd, position)),
            ring.min(position, globals));
      if (ring.window > 0) {
        Value first =
            ring.min(end, ring.max(ring.max(position, globals),
                                   ring.sub(end, ring.c(ring.window))));
        Value count = ring.max(zero, ring.sub(end, first));
        Value row = ring.sub(first, position);
        ring.runs(first, count, [&](Value slot, Value offset, Value length) {
          write(ring.add(row, offset), length, slot);
        });
      }
    }
    rewriter.replaceOpWithNewOp<arith::AddIOp>(op, position, added);
    return success();
  }
};

/// The globals and the window a windowed cache keeps, then the new rows,
/// gathered into one tensor along the positions.
struct LowerCacheWindow : OpRewritePattern<CacheWindowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CacheWindowOp op,
                                PatternRewriter &rewriter) const override {
    TensorBuilder tb(rewriter, op.getLoc());
    KVCacheType type = op.getCache().getType();
    Value buffer = cacheBufferOf(rewriter, op.getLoc(), op.getCache());
    RingIndex ring(rewriter, op.getLoc(), type);
    Value position = op.getPosition(), zero = ring.c(0);
    SmallVector<OpFoldResult> sizes = tb.sizes(op.getKeys());
    Value added =
        getValueOrCreateConstantIndexOp(rewriter, op.getLoc(), sizes[2]);
    // Globals [0, min(G, position)); the window [position - kept, position).
    Value globals = ring.min(ring.c(ring.globals), position);
    Value kept =
        ring.max(zero, ring.min(ring.c(ring.window),
                                ring.sub(position, ring.c(ring.globals))));
    Value offset = ring.add(globals, kept);
    // The cache's pieces: (first slot, index among the gathered rows, rows).
    SmallVector<std::array<Value, 3>> pieces = {{zero, zero, globals}};
    if (ring.window > 0)
      ring.runs(ring.max(ring.c(ring.globals), ring.sub(position, kept)), kept,
                [&](Value slot, Value from, Value length) {
                  pieces.push_back({slot, ring.add(globals, from), length});
                });
    SmallVector<Value> gathered;
    for (bool values : {false, true}) {
      SmallVector<OpFoldResult> all(sizes);
      all[2] = OpFoldResult(ring.add(offset, added));
      Value out = tb.empty(all);
      auto insert = [&](Value rows, Value at) {
        SmallVector<OpFoldResult> offsets(4, rewriter.getIndexAttr(0));
        SmallVector<OpFoldResult> sz = tb.sizes(rows);
        SmallVector<OpFoldResult> ones(4, rewriter.getIndexAttr(1));
        offsets[2] = at;
        out = tensor::InsertSliceOp::create(rewriter, op.getLoc(), rows, out,
                                            offsets, sz, ones);
      };
      for (auto [slot, at, length] : pieces)
        insert(tb.readCache(buffer, type, values, sizes[0], length, slot), at);
      insert(values ? op.getValues() : op.getKeys(), offset);
      // The result's type: a static batch of the new keys is left open.
      gathered.push_back(tensor::CastOp::create(
          rewriter, op.getLoc(), op.getWindowKeys().getType(), out));
    }
    rewriter.replaceOp(op, {gathered[0], gathered[1], offset});
    return success();
  }
};

struct LowerCacheRead : OpRewritePattern<CacheReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CacheReadOp op,
                                PatternRewriter &rewriter) const override {
    TensorBuilder tb(rewriter, op.getLoc());
    KVCacheType type = op.getCache().getType();
    Value buffer = cacheBufferOf(rewriter, op.getLoc(), op.getCache());
    Value keys = tb.readCache(buffer, type, /*values=*/false, op.getBatch(),
                              op.getLength());
    Value values = tb.readCache(buffer, type, /*values=*/true, op.getBatch(),
                                op.getLength());
    rewriter.replaceOp(op, {keys, values});
    return success();
  }
};

struct LowerFeatureMap : TfmLowering<FeatureMapOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(FeatureMapOp op, TensorBuilder &tb) const override {
    RankedTensorType input = op.getInput().getType();
    if (input.isDynamicDim(input.getRank() - 3))
      return op.emitError("the LLVM backend maps the features of a static "
                          "number of heads");
    return PerformerBuilder(tb).featureMap(op.getInput(), op.getFeatures());
  }
};

struct LowerLinearAttention : TfmLowering<LinearAttentionOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(LinearAttentionOp op,
                         TensorBuilder &tb) const override {
    RankedTensorType value = op.getValue().getType();
    if (value.getRank() < 3 || value.isDynamicDim(value.getRank() - 3) ||
        op.getType().isDynamicDim(value.getRank() - 3))
      return op.emitError("the LLVM backend attends over a static number of "
                          "heads");
    PerformerBuilder pb(tb);
    if (TypedValue<KVCacheType> sums = op.getSums()) {
      KVCacheType type = sums.getType();
      Value buffer = cacheBufferOf(tb.b, op.getLoc(), sums);
      return pb.linearAttentionWithSums(op.getQueryFeatures(),
                                        op.getKeyFeatures(), op.getValue(),
                                        op.getQueryOffset(), buffer, type);
    }
    return pb.linearAttention(op.getQueryFeatures(), op.getKeyFeatures(),
                              op.getValue(), op.getCausal(),
                              op.getQueryOffset());
  }
};

/// The flat buffer of a Mamba op's `state` (null without one); the op's
/// rows must then be [batch, n, C], the state's sequences.
template <typename Op> FailureOr<Value> mambaStateOf(Op op, TensorBuilder &tb) {
  TypedValue<MambaStateType> state = op.getState();
  if (!state)
    return Value();
  if (op.getInput().getType().getRank() != 3)
    return op.emitError("the LLVM backend carries the state of [batch, seq, "
                        "channels] rows");
  return cacheBufferOf(tb.b, op.getLoc(), state);
}

struct LowerCausalConv1d : TfmLowering<CausalConv1dOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(CausalConv1dOp op, TensorBuilder &tb) const override {
    FailureOr<Value> state = mambaStateOf(op, tb);
    if (failed(state))
      return failure();
    return ScanBuilder(tb).causalConv1d(
        op.getInput(), op.getWeight(), op.getBias(), op.getOffset(), *state,
        *state ? op.getState().getType() : MambaStateType());
  }
};

struct LowerSelectiveScan : TfmLowering<SelectiveScanOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(SelectiveScanOp op, TensorBuilder &tb) const override {
    FailureOr<Value> state = mambaStateOf(op, tb);
    if (failed(state))
      return failure();
    return ScanBuilder(tb).selectiveScan(
        op.getInput(), op.getDelta(), op.getALog(), op.getB(), op.getC(),
        op.getD(), op.getGate(), op.getOffset(), *state,
        *state ? op.getState().getType() : MambaStateType());
  }
};

struct LowerRouteExperts : OpRewritePattern<RouteExpertsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RouteExpertsOp op,
                                PatternRewriter &rewriter) const override {
    TensorBuilder tb(rewriter, op.getLoc());
    MixtureOfExpertsBuilder::Routing routing =
        MixtureOfExpertsBuilder(tb).route(op.getLogits(), op.getTopK());
    rewriter.replaceOp(op,
                       {tb.castTo(routing.tokens, op.getTokens().getType()),
                        tb.castTo(routing.weights, op.getWeights().getType()),
                        routing.starts});
    return success();
  }
};

struct LowerGatherRows : TfmLowering<GatherRowsOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(GatherRowsOp op, TensorBuilder &tb) const override {
    return tb.castTo(
        MixtureOfExpertsBuilder(tb).gatherRows(op.getInput(), op.getTokens()),
        op.getType());
  }
};

struct LowerGroupedLinear : TfmLowering<GroupedLinearOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(GroupedLinearOp op, TensorBuilder &tb) const override {
    return tb.castTo(MixtureOfExpertsBuilder(tb).groupedLinear(op),
                     op.getType());
  }
};

struct LowerEmbedding : TfmLowering<EmbeddingOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(EmbeddingOp op, TensorBuilder &tb) const override {
    return tb.rowsAt(op.getIds(), op.getTable(),
                     op.getScale().convertToFloat());
  }
};

struct LowerPositionEncoding : TfmLowering<PositionEncodingOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(PositionEncodingOp op,
                         TensorBuilder &tb) const override {
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    int64_t d = type.getShape().back();
    Value offset = op.getOffset(), table = op.getTable();
    bool learned = op.getKind() == PositionKind::Learned;
    return tb.elementwise(
        {x}, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value pos = linalg::IndexOp::create(nb, nl, rank - 2);
          if (offset)
            pos = arith::AddIOp::create(nb, nl, pos, offset);
          Value c = linalg::IndexOp::create(nb, nl, rank - 1);
          Value pe;
          if (learned) {
            pe = tensor::ExtractOp::create(nb, nl, table, ValueRange{pos, c});
          } else {
            // PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(same), in
            // double.
            auto toF64 = [&](Value index) -> Value {
              Value i64 =
                  arith::IndexCastOp::create(nb, nl, nb.getI64Type(), index);
              return arith::SIToFPOp::create(nb, nl, nb.getF64Type(), i64);
            };
            Value two = arith::ConstantIndexOp::create(nb, nl, 2);
            Value odd = arith::RemUIOp::create(nb, nl, c, two);
            Value even = arith::SubIOp::create(nb, nl, c, odd);
            Value expo = arith::MulFOp::create(
                nb, nl, toF64(even),
                arith::ConstantOp::create(nb, nl,
                                          nb.getF64FloatAttr(-1.0 / d)));
            Value scale = math::PowFOp::create(
                nb, nl,
                arith::ConstantOp::create(nb, nl, nb.getF64FloatAttr(10000.0)),
                expo);
            Value angle = arith::MulFOp::create(nb, nl, toF64(pos), scale);
            Value isOdd = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::ne, odd,
                arith::ConstantIndexOp::create(nb, nl, 0));
            Value v = arith::SelectOp::create(
                nb, nl, isOdd, math::CosOp::create(nb, nl, angle),
                math::SinOp::create(nb, nl, angle));
            pe = arith::TruncFOp::create(nb, nl, nb.getF32Type(), v);
          }
          return arith::AddFOp::create(nb, nl, a[0], pe);
        });
  }
};

struct LowerTakeLast : TfmLowering<TakeLastOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(TakeLastOp op, TensorBuilder &tb) const override {
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    SmallVector<OpFoldResult> sz = tb.sizes(x);
    SmallVector<OpFoldResult> offsets(rank, tb.b.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(rank, tb.b.getIndexAttr(1));
    Value seq = getValueOrCreateConstantIndexOp(tb.b, tb.loc, sz[rank - 2]);
    offsets[rank - 2] =
        arith::SubIOp::create(tb.b, tb.loc, seq,
                              arith::ConstantIndexOp::create(tb.b, tb.loc, 1))
            .getResult();
    sz[rank - 2] = tb.b.getIndexAttr(1);
    return tensor::ExtractSliceOp::create(tb.b, tb.loc, op.getType(), x,
                                          offsets, sz, strides)
        .getResult();
  }
};

/// Function arguments of !tfm.kv_cache type become buffers (the handles
/// were only ever passed along, down to the cache accesses, whose casts to
/// the buffer then fold away).
void convertCacheArguments(Operation *root) {
  root->walk([](func::FuncOp f) {
    if (f.isExternal())
      return;
    SmallVector<Type> inputs;
    for (BlockArgument arg : f.getArguments()) {
      if (auto cache = dyn_cast<StateBufferTypeInterface>(arg.getType()))
        arg.setType(cacheBuffer(cache));
      inputs.push_back(arg.getType());
    }
    f.setFunctionType(FunctionType::get(f.getContext(), inputs,
                                        f.getFunctionType().getResults()));
  });
  root->walk([](UnrealizedConversionCastOp cast) {
    if (cast->getNumOperands() == 1 && cast->getNumResults() == 1 &&
        cast.getOperand(0).getType() == cast.getResult(0).getType()) {
      cast.getResult(0).replaceAllUsesWith(cast.getOperand(0));
      cast.erase();
    }
  });
}

struct ConvertTfmToLinalgPass
    : mlir::tfm::impl::ConvertTfmToLinalgBase<ConvertTfmToLinalgPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateTfmToLinalgPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    convertCacheArguments(getOperation());
    // Weights, parameters and caches are the ABI's business; everything
    // that computes must be gone.
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (!isa<TfmDialect>(op->getDialect()) ||
          isa<WeightOp, ParamOp, KVCacheDeclOp, CacheOp>(op))
        return WalkResult::advance();
      op->emitError("the LLVM backend cannot lower '")
          << op->getName() << "' in this form";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void mlir::tfm::populateTfmToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerAdd, LowerLinear, LowerLayerNorm, LowerAddLayerNorm,
               LowerGlu, LowerSoftmax, LowerSliceRows, LowerSplitHeads,
               LowerMergeHeads, LowerRotary, LowerSequenceProjection,
               LowerFeatureMap, LowerLinearAttention, LowerAttention,
               LowerCacheAppend, LowerCacheRead, LowerCacheWindow,
               LowerEmbedding, LowerPositionEncoding, LowerTakeLast,
               LowerRouteExperts, LowerGatherRows, LowerGroupedLinear,
               LowerCausalConv1d, LowerSelectiveScan>(patterns.getContext());
}
