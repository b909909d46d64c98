//===- TfmSizes.cpp - the ops' result sizes and matmul FLOP counts --------===//
//
// SizedResultsOpInterface and MatmulFlopsOpInterface of the tfm ops: what
// the FLOP count `--bench` reports (compiler/lowering/MatmulFlops.cpp)
// reads, the same for both backends.
//
//===----------------------------------------------------------------------===//

#include "tfm/IR/TfmOps.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Dimension `dim` of the result is dimension `dim` of `operand`.
SizeSum sameDim(Value operand, int64_t dim) { return {{operand, dim}}; }

/// The pairs of query and key rows scored, per `per` (the leading sizes),
/// times `c`: over rows i < sq, the keys of the mask's span (sk for every
/// row without a mask). A span that starts at key 0 and has no global
/// tokens is a polynomial: sum over i of end(i), end(i) = constant +
/// perRow i + perOffset offset, which a causal mask keeps within the keys
/// (sk = offset + sq). Others (a window's bounds clamp to the keys there
/// are) count row by row at run time.
void addPairs(FlopCount &flops, double c, ArrayRef<SizeAtom> per,
              AttentionOp op) {
  int64_t rank = op.getQuery().getType().getRank();
  SizeAtom sq{op.getQuery(), rank - 2}, sk{op.getKey(), rank - 2};
  KeySpan span = op.getMaskAttr() ? op.getMaskAttr().getKeySpan() : KeySpan();
  auto sizes = [&](ArrayRef<SizeAtom> more) {
    SmallVector<SizeAtom> all(per);
    all.append(more.begin(), more.end());
    return all;
  };
  if (span.hasBegin() || span.globalKeys) {
    KeyPairs pairs{span, sq, sk, std::nullopt};
    if (op.getQueryOffset())
      pairs.offset = SizeAtom{op.getQueryOffset(), -1};
    if (Value pattern = op.getBlockPattern()) {
      pairs.block = op.getMaskAttr().getBlock().value_or(1);
      pairs.randomKeys = *op.getMaskAttr().getRandomBlocks() * pairs.block;
      pairs.patternRows =
          cast<RankedTensorType>(pattern.getType()).getDimSize(0);
      pairs.causal = op.isCausal();
    }
    flops.add(c, sizes({}), pairs);
    return;
  }
  if (!span.end) {
    flops.add(c, sizes({sq, sk}));
    return;
  }
  // sum over i < sq of (constant + perRow i + perOffset offset), with
  // sum i = sq (sq - 1) / 2 = (sq^2 - sq) / 2.
  const KeyBound &end = *span.end;
  if (end.constant)
    flops.add(c * double(end.constant), sizes({sq}));
  if (end.perRow)
    flops.add(c * double(end.perRow) / 2, sizes({sq, sq}))
        .add(-c * double(end.perRow) / 2, sizes({sq}));
  if (end.perOffset && op.getQueryOffset())
    flops.add(c * double(end.perOffset),
              sizes({sq, {op.getQueryOffset(), -1}}));
}

} // namespace

SizeSum SplitHeadsOp::getResultSize(unsigned, int64_t dim) {
  // [lead..., heads, seq, dk] of [lead..., seq, features].
  int64_t rank = getType().getRank();
  return sameDim(getInput(), dim == rank - 2 ? rank - 3 : dim);
}
SizeSum MergeHeadsOp::getResultSize(unsigned, int64_t dim) {
  // [lead..., seq, heads*dk] of [lead..., heads, seq, dk].
  int64_t rank = getType().getRank();
  return sameDim(getInput(), dim == rank - 2 ? rank - 1 : dim);
}
SizeSum CacheAppendOp::getResultSize(unsigned, int64_t) {
  return {{getPosition(), -1}, {getKeys(), 2}};
}
SizeSum CacheReadOp::getResultSize(unsigned, int64_t dim) {
  return {{dim == 0 ? getBatch() : getLength(), -1}};
}

SizeSum CacheWindowOp::getResultSize(unsigned result, int64_t dim) {
  // In positions: the keys [0, position + n), the rows at `position`. The
  // window's rules count the same (query, key) pairs over them as over the
  // gathered keys, whose indices past the globals are the positions
  // shifted by one constant; the sequences are the keys'.
  if (result == 2)
    return {{getPosition(), -1}};
  if (dim == 0)
    return {{getKeys(), 0}};
  return {{getPosition(), -1}, {getKeys(), 2}};
}

FlopCount LinearOp::getMatmulFlops() {
  // 2 x rows x out_features x in_features.
  SmallVector<SizeAtom> sizes;
  int64_t rank = getInput().getType().getRank();
  for (int64_t i = 0; i + 1 < rank; ++i)
    sizes.push_back({getInput(), i});
  sizes.push_back({getWeight(), 0});
  sizes.push_back({getWeight(), 1});
  return FlopCount().add(2.0, sizes);
}

FlopCount GroupedLinearOp::getMatmulFlops() {
  // 2 x rows x out x in over every (token, slot) row: each row goes
  // through one group's weight.
  SmallVector<SizeAtom> sizes;
  int64_t rank = getInput().getType().getRank();
  for (int64_t i = 0; i + 1 < rank; ++i)
    sizes.push_back({getInput(), i});
  sizes.push_back({getWeights()[0], 0});
  sizes.push_back({getWeights()[0], 1});
  return FlopCount().add(2.0, sizes);
}

FlopCount SequenceProjectionOp::getMatmulFlops() {
  // 2 x K x n x d per leading index.
  RankedTensorType input = getInput().getType();
  int64_t rank = input.getRank();
  SmallVector<SizeAtom> sizes;
  for (int64_t i = 0; i < rank; ++i)
    sizes.push_back({getInput(), i});
  sizes.push_back({getProjection(), 0});
  return FlopCount().add(2.0, sizes);
}

FlopCount FeatureMapOp::getMatmulFlops() {
  // x W_h^T: 2 x M x dk per row of every result head.
  RankedTensorType input = getInput().getType();
  RankedTensorType features = getFeatures().getType();
  int64_t rank = input.getRank();
  SmallVector<SizeAtom> sizes;
  for (int64_t i = 0; i + 3 < rank; ++i)
    sizes.push_back({getInput(), i});
  sizes.push_back({getFeatures(), 0});
  sizes.push_back({getInput(), rank - 2});
  return FlopCount().add(2.0 * double(features.getDimSize(1)) *
                             double(features.getDimSize(2)),
                         sizes);
}

FlopCount LinearAttentionOp::getMatmulFlops() {
  // Each key row adds M x (dv + 1) products to the summary and the sums;
  // each query row takes as many from them, causal or not.
  RankedTensorType query = getQueryFeatures().getType();
  int64_t rank = query.getRank();
  double dv = double(getValue().getType().getDimSize(rank - 1));
  FlopCount flops;
  for (Value rows : {getKeyFeatures(), getQueryFeatures()}) {
    SmallVector<SizeAtom> sizes;
    for (int64_t i = 0; i + 2 < rank; ++i)
      sizes.push_back({getQueryFeatures(), i});
    sizes.push_back({rows, rank - 2});
    sizes.push_back({getQueryFeatures(), rank - 1});
    flops.add(2.0 * (dv + 1.0), sizes);
  }
  return flops;
}

FlopCount AttentionOp::getMatmulFlops() {
  RankedTensorType query = getQuery().getType();
  int64_t rank = query.getRank(), dk = query.getDimSize(rank - 1);
  // Per pair of query and key row: the score, and the product with V.
  SmallVector<SizeAtom> lead;
  for (int64_t i = 0; i + 2 < rank; ++i)
    lead.push_back({getQuery(), i});
  FlopCount flops;
  SizeAtom sq{getQuery(), rank - 2}, sk{getKey(), rank - 2};
  switch (getScore()) {
  case ScoreKind::Bilinear: {
    // W_h folded into each query row: dk x dk per row.
    SmallVector<SizeAtom> rows = lead;
    rows.push_back(sq);
    flops.add(2.0 * double(dk) * double(dk), rows);
    addPairs(flops, 2.0 * double(dk), lead, *this);
    break;
  }
  case ScoreKind::Additive: {
    // W_key k and W_query q once per key and query row (A x dk), then A
    // per pair.
    int64_t a =
        cast<RankedTensorType>(getScoreParams()[0].getType()).getDimSize(1);
    for (SizeAtom rowsOf : {sq, sk}) {
      SmallVector<SizeAtom> rows = lead;
      rows.push_back(rowsOf);
      flops.add(2.0 * double(a) * double(dk), rows);
    }
    addPairs(flops, 2.0 * double(a), lead, *this);
    break;
  }
  case ScoreKind::Dot:
  case ScoreKind::ScaledDot:
    addPairs(flops, 2.0 * double(dk), lead, *this);
    break;
  }
  addPairs(flops, 2.0 * double(dk), lead, *this);
  return flops;
}
