//===- PerformerBuilder.h - FAVOR+ features, linear attention in linalg ---===//
//
// Performer's two ops as linalg on tensors: tfm.feature_map (a per-head
// contraction with W_h, then exp less the row's squared norm) and
// tfm.linear_attention (the keys' feature sums contracted once, or, when
// causal, carried through an scf.for over blocks of query rows: each block
// reads the sums of the keys before it and scores only its own diagonal
// block). Built from TensorBuilder's pieces.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LOWERING_LLVM_PERFORMERBUILDER_H
#define TFM_LOWERING_LLVM_PERFORMERBUILDER_H

#include "LinalgBuilder.h"

namespace mlir::tfm {

class PerformerBuilder {
public:
  explicit PerformerBuilder(TensorBuilder &tb) : tb(tb), b(tb.b), loc(tb.loc) {}

  /// phi(x) = exp(x W_h^T - |x|^2 / 2) / sqrt(M) of x = input / dk^(1/4):
  /// `input` [L..., Hx, n, dk] (Hx dividing W's heads), `w` [H, M, dk].
  Value featureMap(Value input, Value w) {
    auto type = cast<RankedTensorType>(input.getType());
    auto wType = cast<RankedTensorType>(w.getType());
    unsigned rank = type.getRank();
    int64_t heads = wType.getDimSize(0), features = wType.getDimSize(1),
            dk = wType.getDimSize(2);
    if (int64_t group = heads / type.getDimSize(rank - 3); group != 1)
      input = tb.repeatHeads(input, group);
    Value dots = tb.perHeadProject(input, w, /*transposedW=*/true);
    Value squares =
        tb.reduce(input, rank - 1, 0.0,
                  [](OpBuilder &nb, Location nl, Value acc, Value e) -> Value {
                    Value sq = arith::MulFOp::create(nb, nl, e, e);
                    return arith::AddFOp::create(nb, nl, acc, sq);
                  });
    double scale = std::pow(double(dk), -0.25);
    double halfScale2 = 0.5 * scale * scale;
    double logRoot = 0.5 * std::log(double(features));
    return tb.withReduced(
        dots, squares, rank - 1,
        [&](OpBuilder &nb, Location nl, Value dot, Value square) -> Value {
          auto c = [&](double v) {
            return arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(v));
          };
          Value shift = arith::AddFOp::create(
              nb, nl, arith::MulFOp::create(nb, nl, square, c(halfScale2)),
              c(logRoot));
          Value arg = arith::SubFOp::create(
              nb, nl, arith::MulFOp::create(nb, nl, dot, c(scale)), shift);
          return math::ExpOp::create(nb, nl, arg);
        });
  }

  /// tfm.linear_attention: `fq` [L..., H, n, M], `fk` [L..., H, s, M],
  /// `v` [L..., Hv, s, dv]; causal rows see keys [0, offset + i] (the keys
  /// are the offset earlier positions, then one per query row).
  Value linearAttention(Value fq, Value fk, Value v, bool causal,
                        Value offset) {
    auto qType = cast<RankedTensorType>(fq.getType());
    unsigned rank = qType.getRank();
    int64_t heads = qType.getDimSize(rank - 3);
    auto vType = cast<RankedTensorType>(v.getType());
    if (int64_t group = heads / vType.getDimSize(rank - 3); group != 1)
      v = tb.repeatHeads(v, group);
    if (!causal) {
      Value sums = contract(fk, v, Contraction::TransposedLhs);
      Value featureSums = sumRows(fk, Value());
      return apply(fq, sums, featureSums, Value(), Value());
    }
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    // The sums of the keys before the first row (none without an offset),
    // then blocks of rows: each adds its own diagonal block (masked above
    // the diagonal) to the sums before it, then adds its keys to them for
    // the next block.
    SmallVector<OpFoldResult> qSizes = tb.sizes(fq), vSizes = tb.sizes(v);
    Value sums, featureSums;
    if (offset) {
      Value before = tb.sliceDim(fk, rank - 2, b.getIndexAttr(0), offset);
      Value beforeValues = tb.sliceDim(v, rank - 2, b.getIndexAttr(0), offset);
      sums = contract(before, beforeValues, Contraction::TransposedLhs);
      featureSums = sumRows(before, Value());
    } else {
      offset = zero;
      SmallVector<OpFoldResult> sumSizes(qSizes.begin(), qSizes.end() - 2);
      sumSizes.push_back(qSizes[rank - 1]);
      featureSums = tb.filled(sumSizes, 0.0);
      sumSizes.push_back(vSizes[rank - 1]);
      sums = tb.filled(sumSizes, 0.0);
    }
    return causalBlocks(fq, fk, v, sums, featureSums, offset).getResult(2);
  }

  /// Causal tfm.linear_attention with `sums`: this call's keys (one per
  /// query row) added to the sums `cache` (a flat buffer in the layout of
  /// `type`) holds of the `offset` positions before (none at offset 0),
  /// which it then holds with them.
  Value linearAttentionWithSums(Value fq, Value fk, Value v, Value offset,
                                Value cache, KVCacheType type) {
    auto qType = cast<RankedTensorType>(fq.getType());
    if (int64_t group = qType.getDimSize(1) /
                        cast<RankedTensorType>(v.getType()).getDimSize(1);
        group != 1)
      v = tb.repeatHeads(v, group);
    OpFoldResult batch = tb.sizes(fq)[0];
    Value sumsView = sumsOf(cache, type, batch, /*featureSums=*/false);
    Value featureSumsView = sumsOf(cache, type, batch, /*featureSums=*/true);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, offset, zero);
    // At offset 0 the cache holds an earlier sequence's sums: start from 0.
    auto start = [&](Value view) {
      auto viewType = cast<MemRefType>(view.getType());
      auto read = bufferization::ToTensorOp::create(
          b, loc, RankedTensorType::get(viewType.getShape(), tb.f32()), view);
      read.setRestrict(true);
      Value zeros = tb.filled(tb.sizes(read), 0.0);
      return arith::SelectOp::create(b, loc, first, zeros, read).getResult();
    };
    Value sums = start(sumsView);
    Value featureSums = start(featureSumsView);
    scf::ForOp loop = causalBlocks(fq, fk, v, sums, featureSums, zero);
    auto write = [&](Value t, Value view) {
      bufferization::MaterializeInDestinationOp::create(b, loc, TypeRange{}, t,
                                                        view)
          .setWritable(true);
    };
    write(loop.getResult(0), sumsView);
    write(loop.getResult(1), featureSumsView);
    return loop.getResult(2);
  }

private:
  /// The causal rows of `fq` in blocks over the sums of the keys before
  /// them (`sums`, `featureSums`), row i's own key `keyOffset + i` of `fk`
  /// and `v`; results: the sums with every row's key added, and the rows.
  scf::ForOp causalBlocks(Value fq, Value fk, Value v, Value sums,
                          Value featureSums, Value keyOffset) {
    unsigned rank = cast<RankedTensorType>(fq.getType()).getRank();
    SmallVector<OpFoldResult> qSizes = tb.sizes(fq), vSizes = tb.sizes(v);
    SmallVector<OpFoldResult> outSizes(qSizes.begin(), qSizes.end() - 1);
    outSizes.push_back(vSizes[rank - 1]);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value sq = getValueOrCreateConstantIndexOp(b, loc, qSizes[rank - 2]);
    Value step = arith::ConstantIndexOp::create(b, loc, kRowBlock);
    return scf::ForOp::create(
        b, loc, zero, sq, step,
        ValueRange{sums, featureSums, tb.empty(outSizes)},
        [&](OpBuilder &nb, Location, Value i0, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value rows = arith::MinSIOp::create(
              b, loc, step, arith::SubIOp::create(b, loc, sq, i0));
          Value firstKey = arith::AddIOp::create(b, loc, keyOffset, i0);
          Value fqBlock = tb.sliceDim(fq, rank - 2, i0, rows);
          Value fkBlock = tb.sliceDim(fk, rank - 2, firstKey, rows);
          Value vBlock = tb.sliceDim(v, rank - 2, firstKey, rows);
          Value diagonal = lowerTriangle(
              contract(fqBlock, fkBlock, Contraction::TransposedRhs));
          Value out = apply(fqBlock, carried[0], carried[1], diagonal, vBlock);
          SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
          offsets[rank - 2] = i0;
          SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
          Value written = tensor::InsertSliceOp::create(
              b, loc, out, carried[2], offsets, tb.sizes(out), strides);
          Value nextSums =
              contract(fkBlock, vBlock, Contraction::TransposedLhs, carried[0]);
          Value nextFeatureSums = sumRows(fkBlock, carried[1]);
          scf::YieldOp::create(b, loc,
                               ValueRange{nextSums, nextFeatureSums, written});
        });
  }

  /// The first `batch` sequences' sums of `cache` as a view, in the
  /// layout of `type`: the rows [batch, heads, M, dv], or the feature sums
  /// [batch, heads, M].
  Value sumsOf(Value cache, KVCacheType type, OpFoldResult batch,
               bool featureSums) {
    SmallVector<int64_t> shape = {type.getMaxBatch(), type.getHeads(),
                                  type.getFeatures()};
    SmallVector<int64_t> strides;
    int64_t offset = 0;
    if (featureSums) {
      llvm::append_range(strides, type.getFeatureSumsStrides());
      offset = type.getFeatureSumsOffset();
    } else {
      shape.push_back(type.getHeadDim());
      llvm::append_range(strides, type.getSumsStrides());
    }
    return tb.bufferView(cache, offset, shape, strides, batch);
  }

  /// Query rows a causal block takes: its diagonal block of products
  /// ([L..., 64, 64]) is all it stores besides the sums.
  static constexpr int64_t kRowBlock = 64;

  enum class Contraction { Plain, TransposedLhs, TransposedRhs };

  /// out[L..., i, j] (+)= sum_r x[L..., i, r] y[L..., r, j], x read as
  /// [L..., r, i] for TransposedLhs and y as [L..., j, r] for
  /// TransposedRhs; `init` (when given) is added to. Where y's rows are
  /// contiguous along j (Plain, TransposedLhs) the loops are (L..., i, r,
  /// j), j innermost: an axpy of y's row r into out's row i, which LLVM
  /// vectorises; TransposedRhs keeps r innermost (a dot product of two
  /// contiguous rows).
  Value contract(Value x, Value y, Contraction form, Value init = Value()) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    bool reduceInner = form == Contraction::TransposedRhs;
    unsigned loops = rank + 1, iDim = rank - 2;
    unsigned jDim = reduceInner ? rank - 1 : rank,
             rDim = reduceInner ? rank : rank - 1;
    SmallVector<unsigned> lead = TensorBuilder::range(0, rank - 2);
    SmallVector<unsigned> xDims = lead, yDims = lead, outDims = lead;
    if (form == Contraction::TransposedLhs)
      xDims.append({rDim, iDim});
    else
      xDims.append({iDim, rDim});
    if (form == Contraction::TransposedRhs)
      yDims.append({jDim, rDim});
    else
      yDims.append({rDim, jDim});
    outDims.append({iDim, jDim});
    if (!init) {
      SmallVector<OpFoldResult> xSizes = tb.sizes(x), ySizes = tb.sizes(y);
      SmallVector<OpFoldResult> outSizes(xSizes.begin(), xSizes.end() - 2);
      outSizes.push_back(form == Contraction::TransposedLhs ? xSizes[rank - 1]
                                                            : xSizes[rank - 2]);
      outSizes.push_back(form == Contraction::TransposedRhs ? ySizes[rank - 2]
                                                            : ySizes[rank - 1]);
      init = tb.filled(outSizes, 0.0);
    }
    SmallVector<IteratorType> iterators = TensorBuilder::parallel(loops);
    iterators[rDim] = IteratorType::reduction;
    return tb.generic(
        {x, y}, init,
        {tb.map(loops, xDims), tb.map(loops, yDims), tb.map(loops, outDims)},
        iterators, [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value m = arith::MulFOp::create(nb, nl, a[0], a[1]);
          return arith::AddFOp::create(nb, nl, a[2], m);
        });
  }

  /// The rows of `x` [L..., s, M] summed, [L..., M], added to `init` when
  /// given.
  Value sumRows(Value x, Value init) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<unsigned> outDims = TensorBuilder::range(0, rank);
    outDims.erase(outDims.begin() + (rank - 2));
    if (!init) {
      SmallVector<OpFoldResult> outSizes = tb.sizes(x);
      outSizes.erase(outSizes.begin() + (rank - 2));
      init = tb.filled(outSizes, 0.0);
    }
    SmallVector<IteratorType> iterators = TensorBuilder::parallel(rank);
    iterators[rank - 2] = IteratorType::reduction;
    return tb.generic(
        {x}, init,
        {tb.map(rank, TensorBuilder::range(0, rank)), tb.map(rank, outDims)},
        iterators, [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          return arith::AddFOp::create(nb, nl, a[1], a[0]);
        });
  }

  /// `p` [L..., i, j] with 0 where j > i.
  Value lowerTriangle(Value p) {
    unsigned rank = cast<RankedTensorType>(p.getType()).getRank();
    SmallVector<AffineMap> maps(2, tb.map(rank, TensorBuilder::range(0, rank)));
    return tb.generic(
        {p}, tb.empty(tb.sizes(p)), maps, TensorBuilder::parallel(rank),
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value i = linalg::IndexOp::create(nb, nl, rank - 2);
          Value j = linalg::IndexOp::create(nb, nl, rank - 1);
          Value above =
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt, j, i);
          Value zero =
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f));
          return arith::SelectOp::create(nb, nl, above, zero, a[0]);
        });
  }

  /// Each row of `fq` [L..., n, M] over the sums: (fq sums + diagonal
  /// values) / (fq . featureSums + the diagonal's row sum), the diagonal
  /// block [L..., n, n] and its value rows taken only when given.
  Value apply(Value fq, Value sums, Value featureSums, Value diagonal,
              Value values) {
    unsigned rank = cast<RankedTensorType>(fq.getType()).getRank();
    Value numerator = contract(fq, sums, Contraction::Plain);
    // fq . featureSums as a contraction with featureSums as one column.
    Value denominator = rowDots(fq, featureSums);
    if (diagonal) {
      numerator = contract(diagonal, values, Contraction::Plain, numerator);
      denominator = sumLast(diagonal, denominator);
    }
    return tb.withReduced(
        numerator, denominator, rank - 1,
        [](OpBuilder &nb, Location nl, Value n, Value d) -> Value {
          return arith::DivFOp::create(nb, nl, n, d);
        });
  }

  /// out[L..., i] = sum_m x[L..., i, m] y[L..., m].
  Value rowDots(Value x, Value y) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<unsigned> yDims = TensorBuilder::range(0, rank - 2);
    yDims.push_back(rank - 1);
    SmallVector<OpFoldResult> outSizes = tb.sizes(x);
    outSizes.pop_back();
    SmallVector<IteratorType> iterators = TensorBuilder::parallel(rank);
    iterators.back() = IteratorType::reduction;
    return tb.generic(
        {x, y}, tb.filled(outSizes, 0.0),
        {tb.map(rank, TensorBuilder::range(0, rank)), tb.map(rank, yDims),
         tb.map(rank, TensorBuilder::range(0, rank - 1))},
        iterators, [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value m = arith::MulFOp::create(nb, nl, a[0], a[1]);
          return arith::AddFOp::create(nb, nl, a[2], m);
        });
  }

  /// init[L..., i] + sum_j x[L..., i, j].
  Value sumLast(Value x, Value init) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<IteratorType> iterators = TensorBuilder::parallel(rank);
    iterators.back() = IteratorType::reduction;
    return tb.generic({x}, init,
                      {tb.map(rank, TensorBuilder::range(0, rank)),
                       tb.map(rank, TensorBuilder::range(0, rank - 1))},
                      iterators,
                      [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                        return arith::AddFOp::create(nb, nl, a[1], a[0]);
                      });
  }

  TensorBuilder &tb;
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::tfm

#endif // TFM_LOWERING_LLVM_PERFORMERBUILDER_H
