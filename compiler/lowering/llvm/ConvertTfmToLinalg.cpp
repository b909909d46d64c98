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

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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
    Value y = tb.linear(op.getInput(), op.getWeight(), op.getBias());
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
    return tb.layerNorm(op.getInput(), op.getGamma(), op.getBeta(),
                        op.getEps().convertToFloat());
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
    Value norm = tb.layerNorm(sum, op.getGamma(), op.getBeta(),
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

struct LowerFeedForward : TfmLowering<FeedForwardOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(FeedForwardOp op, TensorBuilder &tb) const override {
    Value hidden = tb.linear(op.getInput(), op.getW1(), op.getB1());
    hidden = tb.activation(hidden, op.getActivation());
    return tb.linear(hidden, op.getW2(), op.getB2());
  }
};

struct LowerSplitHeads : TfmLowering<SplitHeadsOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(SplitHeadsOp op, TensorBuilder &tb) const override {
    return tb.splitHeads(op.getInput(), op.getNumHeads());
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
                     op.getBase().convertToFloat(), Value());
  }
};

struct LowerAttention : TfmLowering<AttentionOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(AttentionOp op, TensorBuilder &tb) const override {
    return tb.attention(op.getScore(), op.getQuery(), op.getKey(),
                        op.getValue(), op.getScoreParams(), op.getCausal());
  }
};

struct LowerMultiHeadAttention : TfmLowering<MultiHeadAttentionOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(MultiHeadAttentionOp op,
                         TensorBuilder &tb) const override {
    int64_t d = op.getQuery().getType().getShape().back();
    int64_t heads = op.getNumHeads();
    Value w = op.getInProjWeight(), bias = op.getInProjBias();
    Value cache = op.getCache(), pos = op.getPosition();
    OpFoldResult batch = tb.sizes(op.getQuery())[0];
    Value q, k, v, keyOffset;
    if (cache && op.getCacheReadOnly()) {
      // Cross-attention over the `pos` positions an earlier call appended.
      q = tb.splitHeads(tb.projectSegments(op.getQuery(), w, bias, 0, 1, d)[0],
                        heads);
      k = tb.readCache(cache, 0, batch, pos);
      v = tb.readCache(cache, 1, batch, pos);
    } else {
      Value memory = op.getMemory();
      if (memory) {
        q = tb.projectSegments(op.getQuery(), w, bias, 0, 1, d)[0];
        SmallVector<Value> kv = tb.projectSegments(memory, w, bias, 1, 2, d);
        k = kv[0];
        v = kv[1];
      } else {
        // One GEMM over the stacked Q/K/V weight.
        Value qkv = tb.linear(op.getQuery(), w, bias);
        q = tb.features(qkv, 0, d);
        k = tb.features(qkv, d, d);
        v = tb.features(qkv, 2 * d, d);
      }
      q = tb.splitHeads(q, heads);
      k = tb.splitHeads(k, heads);
      v = tb.splitHeads(v, heads);
      if (auto rope = op.getRope()) {
        float base = ropeBaseOrDefault(op.getRopeBase());
        q = tb.rotary(q, *rope, base, memory ? Value() : pos);
        k = tb.rotary(k, *rope, base, memory ? Value() : pos);
      }
      if (cache) {
        // Append the new keys and values, attend over everything so far.
        tb.writeCache(cache, 0, k, pos);
        tb.writeCache(cache, 1, v, pos);
        Value added =
            getValueOrCreateConstantIndexOp(tb.b, tb.loc, tb.sizes(k)[2]);
        Value total = arith::AddIOp::create(tb.b, tb.loc, pos, added);
        k = tb.readCache(cache, 0, batch, total);
        v = tb.readCache(cache, 1, batch, total);
        if (!memory)
          keyOffset = pos;
      }
    }
    Value o = tb.attention(op.getScore(), q, k, v, op.getScoreParams(),
                           op.getCausal(), keyOffset);
    return tb.linear(tb.mergeHeads(o), op.getOutProjWeight(),
                     op.getOutProjBias());
  }
};

struct LowerFlashAttention : TfmLowering<FlashAttentionOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(FlashAttentionOp op,
                         TensorBuilder &tb) const override {
    int64_t d = op.getQkv().getType().getShape().back() / 3;
    int64_t heads = op.getNumHeads();
    // Each row holds its query, key and value side by side.
    SmallVector<Value, 3> qkv;
    for (int64_t i = 0; i < 3; ++i)
      qkv.push_back(tb.splitHeads(tb.features(op.getQkv(), i * d, d), heads));
    if (auto rope = op.getRope()) {
      float base = ropeBaseOrDefault(op.getRopeBase());
      qkv[0] = tb.rotary(qkv[0], *rope, base, Value());
      qkv[1] = tb.rotary(qkv[1], *rope, base, Value());
    }
    return tb.mergeHeads(tb.attention(op.getScore(), qkv[0], qkv[1], qkv[2],
                                      op.getScoreParams(), op.getCausal(),
                                      Value()));
  }
};

struct LowerEmbedding : TfmLowering<EmbeddingOp> {
  using TfmLowering::TfmLowering;
  FailureOr<Value> lower(EmbeddingOp op, TensorBuilder &tb) const override {
    Value ids = op.getIds(), table = op.getTable();
    auto idsType = cast<RankedTensorType>(ids.getType());
    unsigned rank = idsType.getRank() + 1;
    SmallVector<OpFoldResult> outSizes = tb.sizes(ids);
    outSizes.push_back(tb.b.getIndexAttr(
        cast<RankedTensorType>(table.getType()).getDimSize(1)));
    Value scale = tb.f32Const(op.getScale().convertToFloat());
    bool scaled = op.getScale().convertToFloat() != 1.0f;
    return tb.generic(
        {ids}, tb.empty(outSizes),
        {tb.map(rank, TensorBuilder::range(0, rank - 1)),
         tb.map(rank, TensorBuilder::range(0, rank))},
        TensorBuilder::parallel(rank),
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value row =
              arith::IndexCastOp::create(nb, nl, nb.getIndexType(), a[0]);
          Value col = linalg::IndexOp::create(nb, nl, rank - 1);
          Value e =
              tensor::ExtractOp::create(nb, nl, table, ValueRange{row, col});
          return scaled ? arith::MulFOp::create(nb, nl, e, scale).getResult()
                        : e;
        });
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

/// A cache is a buffer the runtime keeps across calls: keys then values,
/// [2, maxBatch, heads, maxSeq, headDim].
MemRefType cacheBuffer(KVCacheType type) {
  return MemRefType::get({2, type.getMaxBatch(), type.getHeads(),
                          type.getMaxSeq(), type.getHeadDim()},
                         Float32Type::get(type.getContext()));
}

/// Function arguments of !tfm.kv_cache type become buffers (the handles
/// were only ever passed along, down to the attention that uses them).
void convertCacheArguments(Operation *root) {
  root->walk([](func::FuncOp f) {
    if (f.isExternal())
      return;
    SmallVector<Type> inputs;
    for (BlockArgument arg : f.getArguments()) {
      if (auto cache = dyn_cast<KVCacheType>(arg.getType()))
        arg.setType(cacheBuffer(cache));
      inputs.push_back(arg.getType());
    }
    f.setFunctionType(FunctionType::get(f.getContext(), inputs,
                                        f.getFunctionType().getResults()));
  });
}

struct ConvertTfmToLinalgPass
    : mlir::tfm::impl::ConvertTfmToLinalgBase<ConvertTfmToLinalgPass> {
  void runOnOperation() override {
    convertCacheArguments(getOperation());
    RewritePatternSet patterns(&getContext());
    populateTfmToLinalgPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
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
               LowerSoftmax, LowerFeedForward, LowerSplitHeads, LowerMergeHeads,
               LowerRotary, LowerAttention, LowerMultiHeadAttention,
               LowerFlashAttention, LowerEmbedding, LowerPositionEncoding,
               LowerTakeLast>(patterns.getContext());
}
