//===- ScratchBuffers.cpp - the scratch the Highway code of tfm ops takes -===//
//
// ScratchBuffersOpInterface for the tfm ops whose Highway code needs
// scratch besides its results, attached by the tfm_codegen dialect so the
// tfm dialect stays free of frames. The Highway emitter takes the same
// FrameBuffer kinds in the same order; tfm-plan-memory places them.
//
//===----------------------------------------------------------------------===//

#include "tfm/Codegen/Codegen.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace {

uint64_t product(std::initializer_list<uint64_t> factors) {
  uint64_t n = 1;
  for (uint64_t f : factors)
    n = llvm::SaturatingMultiply(n, f);
  return n;
}

/// The rows (dimension -2) of `keys` at most: a cache's positions when
/// they are read from one.
uint64_t maxKeys(Value keys, const FrameBounds &bounds) {
  if (auto read = keys.getDefiningOp<CacheReadOp>())
    return uint64_t(read.getCache().getType().getMaxSeq());
  auto type = cast<RankedTensorType>(keys.getType());
  return bounds.dim(type, type.getRank() - 2);
}

/// The folded or projected queries and keys of bilinear and additive
/// scores; the keys transposed for dot-product scores, unless a cache
/// holds them so (or tfm.cache_window gathered them so).
struct AttentionScratch
    : ScratchBuffersOpInterface::ExternalModel<AttentionScratch, AttentionOp> {
  SmallVector<ScratchBuffer>
  getScratchBuffers(Operation *op, const FrameBounds &bounds) const {
    auto attention = cast<AttentionOp>(op);
    auto query = attention.getQuery().getType();
    if (query.getRank() != 4)
      return {}; // the backend refuses it with its own error
    uint64_t maxBatch = bounds.dim(query, 0), heads = bounds.dim(query, 1),
             maxSq = bounds.dim(query, 2), dk = bounds.dim(query, 3);
    uint64_t maxSk = maxKeys(attention.getKey(), bounds);
    ScoreKind score = attention.getScore();
    SmallVector<ScratchBuffer> buffers;
    if (score == ScoreKind::Bilinear)
      buffers.push_back({FrameBuffer::BilinearQueries,
                         product({maxBatch, heads, maxSq, dk})});
    if (score == ScoreKind::Additive && !attention.getScoreParams().empty()) {
      uint64_t a = bounds.dim(attention.getScoreParams()[0].getType(), 1);
      buffers.push_back(
          {FrameBuffer::AdditiveKeys, product({maxBatch, heads, maxSk, a})});
      buffers.push_back(
          {FrameBuffer::AdditiveQueries, product({maxBatch, heads, maxSq, a})});
    }
    // Once per key head: grouped-query attention has fewer than the
    // queries.
    uint64_t keyHeads = bounds.dim(attention.getKey().getType(), 1);
    if (score != ScoreKind::Additive &&
        !attention.getKey().getDefiningOp<CacheReadOp>() &&
        !attention.getKey().getDefiningOp<CacheWindowOp>())
      buffers.push_back({FrameBuffer::KeysTransposed,
                         product({maxBatch, keyHeads, dk, maxSk})});
    return buffers;
  }
};

/// The cos and sin of every position's angles.
struct RotaryScratch
    : ScratchBuffersOpInterface::ExternalModel<RotaryScratch, RotaryOp> {
  SmallVector<ScratchBuffer>
  getScratchBuffers(Operation *op, const FrameBounds &bounds) const {
    auto type = cast<RotaryOp>(op).getInput().getType();
    uint64_t maxSeq = bounds.dim(type, type.getRank() - 2);
    uint64_t half = bounds.dim(type, type.getRank() - 1) / 2;
    return {{FrameBuffer::RotaryCos, product({maxSeq, half})},
            {FrameBuffer::RotarySin, product({maxSeq, half})}};
  }
};

} // namespace

/// Each (sequence, head)'s sums over the keys' features: the products with
/// the value rows and the features alone.
struct LinearAttentionScratch
    : ScratchBuffersOpInterface::ExternalModel<LinearAttentionScratch,
                                               LinearAttentionOp> {
  SmallVector<ScratchBuffer>
  getScratchBuffers(Operation *op, const FrameBounds &bounds) const {
    auto attention = cast<LinearAttentionOp>(op);
    auto query = attention.getQueryFeatures().getType();
    auto value = attention.getValue().getType();
    // Sums a cache carries need none.
    if (query.getRank() != 4 || attention.getSums())
      return {}; // (a rank the backend refuses with its own error)
    uint64_t maxBatch = bounds.dim(query, 0), heads = bounds.dim(query, 1),
             features = bounds.dim(query, 3), dv = bounds.dim(value, 3);
    return {{FrameBuffer::FeatureSums,
             product({maxBatch, heads, features, dv + 1})}};
  }
};

/// The features' weights transposed, one W_h^T (dk x M) a head, where a
/// call may map kFeatureMapTransposeRows rows.
struct FeatureMapScratch
    : ScratchBuffersOpInterface::ExternalModel<FeatureMapScratch,
                                               FeatureMapOp> {
  SmallVector<ScratchBuffer>
  getScratchBuffers(Operation *op, const FrameBounds &bounds) const {
    auto featureMap = cast<FeatureMapOp>(op);
    auto features = featureMap.getFeatures().getType();
    auto input = featureMap.getInput().getType();
    if (features.getRank() != 3 || input.getRank() < 3)
      return {}; // (a rank the verifier refuses)
    // Rows a call maps: the sequence's, in every batch ([..., H, n, dk]);
    // keys a cache holds, at its own maxima. The Highway code emits its
    // transposed form only where this gives it the slot.
    uint64_t rows;
    if (auto read = featureMap.getInput().getDefiningOp<CacheReadOp>()) {
      KVCacheType cache = read.getCache().getType();
      rows =
          product({uint64_t(cache.getMaxBatch()), uint64_t(cache.getMaxSeq())});
    } else {
      rows = bounds.dim(input, input.getRank() - 2);
      for (int64_t i = 0; i + 3 < input.getRank(); ++i)
        rows = product({rows, bounds.dim(input, i)});
    }
    if (rows < kFeatureMapTransposeRows)
      return {};
    return {{FrameBuffer::FeaturesTransposed,
             product({bounds.dim(features, 0), bounds.dim(features, 1),
                      bounds.dim(features, 2)})}};
  }
};

void TfmCodegenDialect::attachScratchBufferModels() {
  MLIRContext &context = *getContext();
  FeatureMapOp::attachInterface<FeatureMapScratch>(context);
  LinearAttentionOp::attachInterface<LinearAttentionScratch>(context);
  AttentionOp::attachInterface<AttentionScratch>(context);
  RotaryOp::attachInterface<RotaryScratch>(context);
}
