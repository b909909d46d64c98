//===- DecomposeAttention.cpp - multi-head attention -> its parts ---------===//
//
// Every form of tfm.multi_head_attention (self, cross over a memory, with a
// key/value cache that it appends to or only reads) becomes the same few
// ops, which are all a backend lowers: tfm.linear projections (one GEMM
// over the stacked Q/K/V weight where the rows are the same; tfm.slice_rows
// picks the rows of a projection otherwise), tfm.split_heads views of the
// heads, tfm.rotary, tfm.cache_append / tfm.cache_read, one tfm.attention
// core and the out_proj tfm.linear over tfm.merge_heads. A new kind of
// attention is one more rewrite here, not one more lowering per backend.
//
//===----------------------------------------------------------------------===//

#include "PassRemarks.h"
#include "tfm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMDECOMPOSEATTENTION
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct DecomposeMultiHeadAttention : OpRewritePattern<MultiHeadAttentionOp> {
  DecomposeMultiHeadAttention(MLIRContext *context, bool remarks)
      : OpRewritePattern(context), remarks(remarks) {}

  /// x times rows [first, first + count) of the stacked in_proj weight, its
  /// bias (if any) added: one GEMM for those projections.
  static Value project(PatternRewriter &rewriter, Location loc,
                       MultiHeadAttentionOp op, Value x, int64_t first,
                       int64_t count) {
    Value w = op.getInProjWeight(), b = op.getInProjBias();
    if (count != op.getInProjWeight().getType().getDimSize(0)) {
      auto rows = [&](Value t) -> Value {
        if (!t)
          return t;
        auto type = cast<RankedTensorType>(t.getType());
        SmallVector<int64_t> shape(type.getShape());
        shape[0] = count;
        return SliceRowsOp::create(
            rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
            t, rewriter.getI64IntegerAttr(first));
      };
      w = rows(w);
      b = rows(b);
    }
    return LinearOp::create(rewriter, loc, x, w, b);
  }

  LogicalResult matchAndRewrite(MultiHeadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t heads = op.getNumHeads(), kvHeads = op.getKeyValueHeads();
    int64_t d = op.getQuery().getType().getShape().back(), dk = d / heads;
    Value cache = op.getCache(), position = op.getPosition();
    Value memory = op.getMemory();
    bool self = op.isSelfAttention();
    auto split = [&](Value rows, int64_t count, int64_t part, int64_t parts) {
      return SplitHeadsOp::create(rewriter, loc, rows, count, part, parts)
          .getResult();
    };

    // in_proj's rows: heads x dk of Q, then kvHeads x dk of K and of V.
    int64_t qRows = heads * dk, kvRows = 2 * kvHeads * dk;
    Value q, k, v;
    if (self && kvHeads == heads) {
      Value qkv = project(rewriter, loc, op, op.getQuery(), 0, 3 * d);
      q = split(qkv, heads, 0, 3);
      k = split(qkv, heads, 1, 3);
      v = split(qkv, heads, 2, 3);
    } else {
      // Grouped-query self-attention projects Q and K/V by two GEMMs:
      // their heads differ, and tfm.split_heads cuts equal parts.
      q = split(project(rewriter, loc, op, op.getQuery(), 0, qRows), heads, 0,
                1);
      if (Value source = self ? op.getQuery() : memory) {
        Value kv = project(rewriter, loc, op, source, qRows, kvRows);
        k = split(kv, kvHeads, 0, 2);
        v = split(kv, kvHeads, 1, 2);
      }
    }
    if (std::optional<RopeStyle> rope = op.getRope()) {
      APFloat base(ropeBaseOrDefault(op.getRopeBase()));
      auto rotate = [&](Value t) {
        return RotaryOp::create(rewriter, loc, t.getType(), *rope, t, base,
                                cache ? position : Value())
            .getResult();
      };
      q = rotate(q);
      k = rotate(k);
    }
    if (Value e = op.getProjE()) {
      // Linformer: every head's keys and values along the sequence, E_n k
      // and F_n v; the queries attend those rows.
      k = SequenceProjectionOp::create(rewriter, loc, k, e);
      v = SequenceProjectionOp::create(rewriter, loc, v, op.getProjF());
    }
    Value queryOffset;
    Value features = op.getFeatures();
    if (cache && features) {
      // Performer's cache holds running sums, not positions: the step's
      // own keys are added to them (tfm.linear_attention's `sums`).
      queryOffset = position;
    } else if (cache && cast<KVCacheType>(cache.getType()).isWindowed()) {
      // A windowed cache keeps the globals and the last W positions: the
      // rows attend those (read before this call's positions replace any)
      // and their own keys, gathered; then their positions go in.
      auto window = CacheWindowOp::create(rewriter, loc, cache, k, v, position);
      CacheAppendOp::create(rewriter, loc, cache, k, v, position);
      k = window.getWindowKeys();
      v = window.getWindowValues();
      queryOffset = window.getOffset();
    } else if (cache) {
      // The new keys and values go in at `position`; attention reads every
      // position the cache holds then (a read-only cache: the first
      // `position`, appended by an earlier call).
      Value length = position;
      if (!op.getCacheReadOnly())
        length = CacheAppendOp::create(rewriter, loc, cache, k, v, position);
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      Value batch = tensor::DimOp::create(rewriter, loc, op.getQuery(), zero);
      auto read = CacheReadOp::create(rewriter, loc, cache, batch, length);
      k = read.getKeys();
      v = read.getValues();
      if (self)
        queryOffset = position;
    }
    Value core;
    if (features) {
      // Performer: both sides' feature rows, then attention through their
      // products, over the cache's sums in a decode step.
      Value fq = FeatureMapOp::create(rewriter, loc, q, features);
      Value fk = FeatureMapOp::create(rewriter, loc, k, features);
      core = LinearAttentionOp::create(rewriter, loc, fq, fk, v, op.isCausal(),
                                       queryOffset, cache);
    } else {
      core = AttentionOp::create(rewriter, loc, op.getScore(), q, k, v,
                                 op.getScoreParams(), op.getMaskAttr(),
                                 queryOffset, op.getBlockPattern(),
                                 op.getKeyPadding(), op.getWeightsSlot());
    }
    Value merged = MergeHeadsOp::create(rewriter, loc, core);
    Value out = LinearOp::create(rewriter, loc, merged, op.getOutProjWeight(),
                                 op.getOutProjBias());
    if (remarks)
      remarkAt(op) << describe(op);
    rewriter.replaceOp(op, out);
    return success();
  }

  static std::string describe(MultiHeadAttentionOp op) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "decomposed into ";
    int64_t heads = op.getNumHeads(), kvHeads = op.getKeyValueHeads();
    if (op.isSelfAttention() && kvHeads == heads)
      os << "one Q/K/V GEMM over the stacked in_proj weight";
    else if (kvHeads == heads && op.getMemory())
      os << "a Q GEMM over in_proj's first d_model rows and one K/V GEMM "
            "of the memory over the other 2 x d_model";
    else if (op.isSelfAttention() || op.getMemory())
      os << "a Q GEMM over in_proj's query rows and one K/V GEMM "
         << (op.isSelfAttention() ? "" : "of the memory ")
         << "over its key and value rows";
    else
      os << "a Q GEMM over in_proj's "
         << (kvHeads == heads ? "first d_model" : "query") << " rows";
    if (kvHeads != heads)
      os << " (grouped-query: " << kvHeads << " key/value heads for " << heads
         << " query heads, each read by " << heads / kvHeads << ")";
    if (op.getRope())
      os << ", rotary positions of Q and K";
    if (op.getCache() && op.getFeatures())
      os << ", the step's keys and values added to the running sums the "
            "cache holds";
    else if (op.getCache() &&
             cast<KVCacheType>(op.getCache().getType()).isWindowed())
      os << ", the global tokens' and the window's keys and values the "
            "cache keeps gathered with the new ones (tfm.cache_window), "
            "then the new ones stored in its ring";
    else if (op.getCache())
      os << (op.getCacheReadOnly()
                 ? ", the keys and values read from the cache"
                 : ", the new keys and values appended to the cache and "
                   "every position so far read from it");
    if (op.getProjE())
      os << ", the keys and values of every head projected along the "
            "sequence to "
         << cast<RankedTensorType>(op.getProjE().getType()).getDimSize(0)
         << " rows (linformer, tfm.sequence_projection)";
    if (Value features = op.getFeatures()) {
      os << ", the queries and keys of every head mapped to "
         << cast<RankedTensorType>(features.getType()).getDimSize(1)
         << " positive random features (performer, tfm.feature_map), one "
            "tfm.linear_attention ("
         << (op.isCausal() ? "running sums of the keys' features and their "
                             "products with V, carried from row to row"
                           : "the keys' features times V summed once")
         << "; no score matrix) and the out_proj GEMM";
      return text;
    }
    os << ", one tfm.attention (scores";
    if (op.getScore() == ScoreKind::ScaledDot)
      os << ", scale";
    if (MaskAttr mask = op.getMaskAttr()) {
      if (mask.getCausal())
        os << ", causal mask";
      std::optional<int64_t> block = mask.getBlock();
      if (block)
        os << ", block-sparse mask in blocks of " << *block
           << " positions: a window of " << *mask.getWindow()
           << " key blocks on each side";
      else if (std::optional<int64_t> window = mask.getWindow())
        os << ", sliding window of " << *window;
      if (std::optional<int64_t> global = mask.getGlobalTokens())
        os << " with " << *global
           << (block ? " global blocks" : " global tokens");
      if (std::optional<int64_t> random = mask.getRandomBlocks())
        os << " and " << *random
           << " random key blocks a query block (its row of the pattern)";
    }
    if (op.getKeyPadding())
      os << ", padded keys masked";
    os << ", softmax, product with V; the score matrix never stored) and "
          "the out_proj GEMM";
    return text;
  }

  bool remarks;
};

struct DecomposeAttentionPass
    : mlir::tfm::impl::TfmDecomposeAttentionBase<DecomposeAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeAttentionPatterns(patterns, remarks);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void mlir::tfm::populateDecomposeAttentionPatterns(RewritePatternSet &patterns,
                                                   bool remarks) {
  patterns.add<DecomposeMultiHeadAttention>(patterns.getContext(), remarks);
}
