//===- LinalgBuilder.h - linalg on tensors for convert-tfm-to-linalg -*- C++
//-*-===//
//
// The building blocks the tfm op lowerings are made of: GEMMs on packed
// panels and their epilogues, reductions, softmax, layer norm, heads,
// rotary positions, attention, key/value cache slices, all as linalg on
// tensors at one location.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LOWERING_LLVM_LINALGBUILDER_H
#define TFM_LOWERING_LLVM_LINALGBUILDER_H

#include "tfm/Lowering/LLVMBackend.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"

#include <cmath>
#include <limits>

namespace mlir::tfm {

using utils::IteratorType;

/// BigBird's random key blocks of an attention: `pattern` [pattern rows,
/// randomBlocks] f32 key-block ids (null: none); `allowed` [pattern rows,
/// key blocks] f32, 1 where query block qb's row of the pattern names key
/// block kb; the positions in blocks of `block`, the mask's window and
/// global blocks (the blocks another rule reaches); with `limit`, no key at
/// or past it (causal).
struct RandomKeyBlocks {
  Value pattern, allowed;
  int64_t block = 1, randomBlocks = 0, windowBlocks = 0, globalBlocks = 0;
  std::optional<KeyBound> limit;
};

/// Builds linalg on tensors at one location; the lowerings below share it.
class TensorBuilder {
public:
  TensorBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &b;
  Location loc;

  Type f32() { return b.getF32Type(); }
  Value f32Const(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value f64Const(double v) {
    return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v));
  }

  /// The sizes of `t`, static or read with tensor.dim.
  SmallVector<OpFoldResult> sizes(Value t) {
    return tensor::getMixedSizes(b, loc, t);
  }

  /// out[l..., c] = table[ids[l...], c] (x scale): the rows of a [rows, d]
  /// table that integer `ids` name (embeddings, a mixture of experts'
  /// gathered tokens).
  Value rowsAt(Value ids, Value table, float scale = 1.0f) {
    unsigned rank = cast<RankedTensorType>(ids.getType()).getRank() + 1;
    SmallVector<OpFoldResult> outSizes = sizes(ids);
    outSizes.push_back(sizes(table).back());
    Value factor = scale != 1.0f ? f32Const(scale) : Value();
    return generic(
        {ids}, empty(outSizes),
        {map(rank, range(0, rank - 1)), map(rank, range(0, rank))},
        parallel(rank), [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value row =
              arith::IndexCastOp::create(nb, nl, nb.getIndexType(), a[0]);
          Value col = linalg::IndexOp::create(nb, nl, rank - 1);
          Value e =
              tensor::ExtractOp::create(nb, nl, table, ValueRange{row, col});
          return factor ? arith::MulFOp::create(nb, nl, e, factor).getResult()
                        : e;
        });
  }

  /// `v` as `type` (a tensor of the same shape, some sizes known only at
  /// run time in `v`'s).
  Value castTo(Value v, Type type) {
    return v.getType() == type ? v : tensor::CastOp::create(b, loc, type, v);
  }

  Value empty(ArrayRef<OpFoldResult> sizes) {
    return tensor::EmptyOp::create(b, loc, sizes, f32());
  }

  Value filled(ArrayRef<OpFoldResult> sizes, double value) {
    return linalg::FillOp::create(b, loc, ValueRange{f32Const(value)},
                                  ValueRange{empty(sizes)})
        .getResult(0);
  }

  /// A linalg.generic with one f32 result of `sizes` over `loops` loops.
  Value generic(ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iterators,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, inputs, ValueRange{init},
               maps, iterators,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(nb, nl, body(nb, nl, args));
               })
        .getResult(0);
  }

  AffineMap map(unsigned loops, ArrayRef<unsigned> dims) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : dims)
      exprs.push_back(b.getAffineDimExpr(d));
    return AffineMap::get(loops, 0, exprs, b.getContext());
  }

  static SmallVector<unsigned> range(unsigned begin, unsigned end) {
    SmallVector<unsigned> r;
    for (unsigned i = begin; i < end; ++i)
      r.push_back(i);
    return r;
  }

  static SmallVector<IteratorType> parallel(unsigned n) {
    return SmallVector<IteratorType>(n, IteratorType::parallel);
  }

  /// out[l..., n] = sum_k x[l..., k] * w[n, k] (+ bias[n]): nn.Linear; by
  /// the packed panels of `w` when tfm-pack-gemm-weights gave it some.
  /// x Wᵀ + bias; with `bf16Inputs` both operands rounded to bfloat16
  /// first (packed panels were rounded when the runtime packed them).
  Value linear(Value x, Value w, Value bias, bool bf16Inputs = false) {
    int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
    if (bf16Inputs)
      x = roundedToBFloat16(x);
    if (Value panels = packedOf(w))
      return gemmColumns(gemmPanels(x, panels), 0, n, bias, x);
    return linearUnpacked(x, bf16Inputs ? roundedToBFloat16(w) : w, bias);
  }

  /// Each value of `x` rounded to the nearest bfloat16 (ties to even; NaN
  /// kept), as f32: integer arithmetic on the bits, as the runtime and the
  /// Highway kernels round (no bf16 type, so no library call or
  /// instruction that treats subnormals otherwise).
  Value roundedToBFloat16(Value x) {
    return elementwise({x}, [](OpBuilder &nb, Location nl, ValueRange a) {
      Type i32 = nb.getI32Type();
      auto constant = [&](int32_t v) {
        return arith::ConstantOp::create(nb, nl, nb.getI32IntegerAttr(v))
            .getResult();
      };
      Value bits = arith::BitcastOp::create(nb, nl, i32, a[0]);
      Value odd = arith::AndIOp::create(
          nb, nl, arith::ShRUIOp::create(nb, nl, bits, constant(16)),
          constant(1));
      Value sum = arith::AddIOp::create(
          nb, nl, arith::AddIOp::create(nb, nl, bits, constant(0x7fff)), odd);
      Value top =
          arith::AndIOp::create(nb, nl, sum, constant(int32_t(0xffff0000u)));
      Value rounded =
          arith::BitcastOp::create(nb, nl, a[0].getType(), top).getResult();
      Value isNaN =
          arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::UNO, a[0], a[0]);
      return arith::SelectOp::create(nb, nl, isNaN, a[0], rounded).getResult();
    });
  }

  /// The packed panels of weight `w`: its sibling argument marked
  /// `tfm.packs`, or null.
  Value packedOf(Value w) {
    // A K of 1 is an outer product, not a GEMM: the register tile of
    // tfm-vectorize-gemm would lose its k loop (a unit dimension folded).
    if (cast<RankedTensorType>(w.getType()).getDimSize(1) == 1)
      return Value();
    auto arg = dyn_cast<BlockArgument>(w);
    auto f = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                 : func::FuncOp();
    if (!f)
      return Value();
    std::optional<unsigned> packed = packedArgumentOf(f, arg.getArgNumber());
    return packed ? f.getArgument(*packed) : Value();
  }

  /// Panels [first, first + count) of packed panels [P, K, 32].
  Value panelRange(Value panels, int64_t first, int64_t count) {
    auto type = cast<RankedTensorType>(panels.getType());
    if (first == 0 && count == type.getDimSize(0))
      return panels;
    return tensor::ExtractSliceOp::create(
        b, loc, panels,
        ArrayRef<OpFoldResult>{b.getIndexAttr(first), b.getIndexAttr(0),
                               b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(count),
                               b.getIndexAttr(type.getDimSize(1)),
                               b.getIndexAttr(32)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1),
                               b.getIndexAttr(1)});
  }

  /// x [lead..., rows, K] times packed panels [P, K, 32]: [lead..., rows',
  /// P*32], rows' = rows rounded up to 8 so that every register tile is a
  /// full 8 x 32 one (x gets zero rows). The contraction is a
  /// `linalg.generic` over (lead..., row block, row, panel, column, k) on x
  /// as [lead..., rows'/8, 8, K], marked `tfm.gemm` for tfm-vectorize-gemm.
  /// (Only the last leading dimension is split: upstream's
  /// expand-strided-metadata cannot expand one dynamic dimension into two.)
  Value gemmPanels(Value x, Value panels) {
    auto xType = cast<RankedTensorType>(x.getType());
    unsigned rank = xType.getRank();
    unsigned outer = rank - 2; // leading dimensions kept as they are
    int64_t k = xType.getShape().back();
    SmallVector<OpFoldResult> xSizes = sizes(x);
    Value rows = getValueOrCreateConstantIndexOp(b, loc, xSizes[outer]);
    AffineExpr r = b.getAffineSymbolExpr(0);
    Value blocks = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(0, 1, r.ceilDiv(8)), ValueRange{rows});
    Value extra = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(0, 1, r.ceilDiv(8) * 8 - r), ValueRange{rows});
    SmallVector<OpFoldResult> low(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> high(rank, b.getIndexAttr(0));
    high[outer] = extra;
    SmallVector<int64_t> padShape(xType.getShape());
    padShape[outer] = ShapedType::kDynamic;
    Value xPad =
        tensor::PadOp::create(b, loc, RankedTensorType::get(padShape, f32()), x,
                              low, high, f32Const(0.0));
    // [lead..., blocks, 8, K]
    SmallVector<int64_t> blockShape(xType.getShape().take_front(outer));
    blockShape.append({ShapedType::kDynamic, 8, k});
    SmallVector<OpFoldResult> blockSizes(xSizes.begin(),
                                         xSizes.begin() + outer);
    blockSizes.append({blocks, b.getIndexAttr(8), b.getIndexAttr(k)});
    SmallVector<ReassociationIndices> split;
    for (unsigned i = 0; i < outer; ++i)
      split.push_back({static_cast<int64_t>(i)});
    split.push_back(
        {static_cast<int64_t>(outer), static_cast<int64_t>(outer + 1)});
    split.push_back({static_cast<int64_t>(outer + 2)});
    Value x3 = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(blockShape, f32()), xPad, split,
        blockSizes);
    int64_t p = cast<RankedTensorType>(panels.getType()).getDimSize(0);
    // loops: lead..., block, row, panel, column, k
    unsigned loops = outer + 5;
    unsigned block = outer, row = outer + 1, panel = outer + 2,
             column = outer + 3, kk = outer + 4;
    SmallVector<unsigned> xDims = range(0, outer), outDims = range(0, outer);
    xDims.append({block, row, kk});
    outDims.append({block, row, panel, column});
    SmallVector<OpFoldResult> outSizes(blockSizes.begin(),
                                       blockSizes.begin() + outer + 2);
    outSizes.append({b.getIndexAttr(p), b.getIndexAttr(32)});
    SmallVector<IteratorType> iterators = parallel(loops - 1);
    iterators.push_back(IteratorType::reduction);
    Value init = filled(outSizes, 0.0);
    auto gemm = linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, ValueRange{x3, panels},
        ValueRange{init},
        ArrayRef<AffineMap>{map(loops, xDims), map(loops, {panel, kk, column}),
                            map(loops, outDims)},
        iterators, [](OpBuilder &nb, Location nl, ValueRange a) {
          Value m = arith::MulFOp::create(nb, nl, a[0], a[1]);
          linalg::YieldOp::create(
              nb, nl, ValueRange{arith::AddFOp::create(nb, nl, a[2], m)});
        });
    gemm->setAttr("tfm.gemm", b.getUnitAttr());
    // [lead..., blocks * 8, P * 32]
    SmallVector<ReassociationIndices> merge;
    for (unsigned i = 0; i < outer; ++i)
      merge.push_back({static_cast<int64_t>(i)});
    merge.push_back({static_cast<int64_t>(block), static_cast<int64_t>(row)});
    merge.push_back(
        {static_cast<int64_t>(panel), static_cast<int64_t>(column)});
    return tensor::CollapseShapeOp::create(b, loc, gemm.getResult(0), merge);
  }

  /// Columns [begin, begin+count) of the real rows of a GEMM result
  /// [lead..., rows', C] (+ bias), as [lead..., rows, count] like x: the
  /// GEMM's epilogue, one elementwise op that writes a fresh tensor.
  Value gemmColumns(Value t, int64_t begin, int64_t count, Value bias,
                    Value x) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> sz = sizes(x);
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    offsets[rank - 1] = b.getIndexAttr(begin);
    sz[rank - 1] = b.getIndexAttr(count);
    Value cols =
        tensor::ExtractSliceOp::create(b, loc, t, offsets, sz, strides);
    return bias ? addLastDim(cols, bias)
                : elementwise({cols}, [](OpBuilder &, Location, ValueRange a) {
                    return a[0];
                  });
  }

  /// x times segments [first, first + count) of packed panels (segments of
  /// `segmentRows` rows, each padded to whole panels), bias added: one GEMM
  /// over their panels, the segments' columns side by side.
  Value linearSegments(Value x, Value panels, int64_t first, int64_t count,
                       int64_t segmentRows, Value bias) {
    int64_t perSegment = (segmentRows + 31) / 32;
    Value product = gemmPanels(
        x, panelRange(panels, first * perSegment, count * perSegment));
    if (count == 1 || segmentRows % 32 == 0)
      return gemmColumns(product, 0, count * segmentRows, bias, x);
    // Each segment's columns end in padding: gather them.
    SmallVector<OpFoldResult> outSizes = sizes(x);
    outSizes.back() = b.getIndexAttr(count * segmentRows);
    Value out = empty(outSizes);
    unsigned rank = outSizes.size();
    for (int64_t s = 0; s < count; ++s) {
      Value cols = gemmColumns(
          product, s * perSegment * 32, segmentRows,
          bias ? rows(bias, s * segmentRows, segmentRows) : Value(), x);
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
      offsets.back() = b.getIndexAttr(s * segmentRows);
      SmallVector<OpFoldResult> sz = sizes(cols);
      SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
      out = tensor::InsertSliceOp::create(b, loc, cols, out, offsets, sz,
                                          strides);
    }
    return out;
  }

  Value linearUnpacked(Value x, Value w, Value bias) {
    auto xType = cast<RankedTensorType>(x.getType());
    unsigned rank = xType.getRank();
    unsigned loops = rank + 1; // lead..., n, k
    SmallVector<OpFoldResult> outSizes = sizes(x);
    outSizes.back() =
        b.getIndexAttr(cast<RankedTensorType>(w.getType()).getDimSize(0));
    SmallVector<unsigned> lead = range(0, rank - 1);
    SmallVector<unsigned> xDims = lead, outDims = lead;
    xDims.push_back(rank);
    outDims.push_back(rank - 1);
    SmallVector<IteratorType> iterators = parallel(rank);
    iterators.push_back(IteratorType::reduction);
    Value product = generic(
        {x, w}, filled(outSizes, 0.0),
        {map(loops, xDims), map(loops, {rank - 1, rank}), map(loops, outDims)},
        iterators, [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value m = arith::MulFOp::create(nb, nl, a[0], a[1]);
          return arith::AddFOp::create(nb, nl, a[2], m);
        });
    if (!bias)
      return product;
    return addLastDim(product, bias);
  }

  /// x[l..., n] + v[n].
  Value addLastDim(Value x, Value v) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    return generic({x, v}, empty(sizes(x)),
                   {map(rank, range(0, rank)), map(rank, {rank - 1}),
                    map(rank, range(0, rank))},
                   parallel(rank),
                   [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     return arith::AddFOp::create(nb, nl, a[0], a[1]);
                   });
  }

  /// Elementwise `fn` of tensors of one shape.
  Value elementwise(ValueRange inputs,
                    function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
    unsigned rank = cast<RankedTensorType>(inputs[0].getType()).getRank();
    SmallVector<AffineMap> maps(inputs.size() + 1, map(rank, range(0, rank)));
    return generic(inputs, empty(sizes(inputs[0])), maps, parallel(rank),
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     return fn(nb, nl, a.drop_back());
                   });
  }

  /// a + b, elementwise (tensors of one shape).
  Value add(Value a, Value b) {
    return elementwise({a, b}, [](OpBuilder &nb, Location nl, ValueRange v) {
      return arith::AddFOp::create(nb, nl, v[0], v[1]).getResult();
    });
  }

  /// Reduces `x` along `dim` with `fn(acc, element)` from `init`; the result
  /// drops the dimension.
  Value reduce(Value x, unsigned dim, double init,
               function_ref<Value(OpBuilder &, Location, Value, Value)> fn) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<OpFoldResult> outSizes = sizes(x);
    outSizes.erase(outSizes.begin() + dim);
    SmallVector<unsigned> outDims = range(0, rank);
    outDims.erase(outDims.begin() + dim);
    SmallVector<IteratorType> iterators = parallel(rank);
    iterators[dim] = IteratorType::reduction;
    return generic({x}, filled(outSizes, init),
                   {map(rank, range(0, rank)), map(rank, outDims)}, iterators,
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     return fn(nb, nl, a[1], a[0]);
                   });
  }

  /// Applies fn(element, reduced) where `reduced` (x's shape without `dim`)
  /// is broadcast along `dim`.
  Value
  withReduced(Value x, Value reduced, unsigned dim,
              function_ref<Value(OpBuilder &, Location, Value, Value)> fn) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<unsigned> rDims = range(0, rank);
    rDims.erase(rDims.begin() + dim);
    return generic({x, reduced}, empty(sizes(x)),
                   {map(rank, range(0, rank)), map(rank, rDims),
                    map(rank, range(0, rank))},
                   parallel(rank),
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     return fn(nb, nl, a[0], a[1]);
                   });
  }

  /// 1 / sqrt(mean(x^2) + eps) over the last dimension: a layer norm's
  /// 1 / std of the centred row, an RMS norm's 1 / rms.
  Value inverseRootMeanSquare(Value x, float eps) {
    auto type = cast<RankedTensorType>(x.getType());
    Value invD = f32Const(1.0 / static_cast<double>(type.getShape().back()));
    Value squares =
        reduce(x, type.getRank() - 1, 0.0,
               [](OpBuilder &nb, Location nl, Value acc, Value v) {
                 Value sq = arith::MulFOp::create(nb, nl, v, v);
                 return arith::AddFOp::create(nb, nl, acc, sq).getResult();
               });
    Value epsV = f32Const(eps);
    return elementwise(
        {squares}, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value meanSquare = arith::MulFOp::create(nb, nl, a[0], invD);
          Value s = math::SqrtOp::create(
              nb, nl, arith::AddFOp::create(nb, nl, meanSquare, epsV));
          Value one =
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(1.0f));
          return arith::DivFOp::create(nb, nl, one, s);
        });
  }

  /// RMSNorm over the last dimension: x / sqrt(mean(x^2) + eps) * gamma.
  Value rmsNorm(Value x, Value gamma, float eps) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    unsigned last = rank - 1;
    Value invRms = inverseRootMeanSquare(x, eps);
    SmallVector<unsigned> rowDims = range(0, last);
    return generic({x, invRms, gamma}, empty(sizes(x)),
                   {map(rank, range(0, rank)), map(rank, rowDims),
                    map(rank, {last}), map(rank, range(0, rank))},
                   parallel(rank),
                   [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     Value n = arith::MulFOp::create(nb, nl, a[0], a[1]);
                     return arith::MulFOp::create(nb, nl, n, a[2]);
                   });
  }

  /// act(x[..., :n]) * x[..., n:] for x [..., 2n].
  Value glu(Value x, Activation kind) {
    int64_t n = cast<RankedTensorType>(x.getType()).getShape().back() / 2;
    Value gate = activation(features(x, 0, n), kind);
    Value up = features(x, n, n);
    return elementwise(
        {gate, up}, [](OpBuilder &nb, Location nl, ValueRange a) {
          return arith::MulFOp::create(nb, nl, a[0], a[1]).getResult();
        });
  }

  /// nn.LayerNorm over the last dimension.
  Value layerNorm(Value x, Value gamma, Value beta, float eps) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    int64_t d = cast<RankedTensorType>(x.getType()).getShape().back();
    unsigned last = rank - 1;
    auto add = [](OpBuilder &nb, Location nl, Value acc, Value v) -> Value {
      return arith::AddFOp::create(nb, nl, acc, v);
    };
    Value invD = f32Const(1.0 / static_cast<double>(d));
    Value sum = reduce(x, last, 0.0, add);
    Value mean = elementwise(
        {sum}, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          return arith::MulFOp::create(nb, nl, a[0], invD);
        });
    Value centered = withReduced(
        x, mean, last, [](OpBuilder &nb, Location nl, Value v, Value m) {
          return arith::SubFOp::create(nb, nl, v, m).getResult();
        });
    Value invStd = inverseRootMeanSquare(centered, eps);
    SmallVector<unsigned> rowDims = range(0, last);
    return generic(
        {centered, invStd, gamma, beta}, empty(sizes(x)),
        {map(rank, range(0, rank)), map(rank, rowDims), map(rank, {last}),
         map(rank, {last}), map(rank, range(0, rank))},
        parallel(rank), [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value n = arith::MulFOp::create(nb, nl, a[0], a[1]);
          Value g = arith::MulFOp::create(nb, nl, n, a[2]);
          return arith::AddFOp::create(nb, nl, g, a[3]);
        });
  }

  /// Softmax of `x` along `dim`.
  Value softmax(Value x, unsigned dim) {
    Value max = reduce(
        x, dim, -INFINITY, [](OpBuilder &nb, Location nl, Value acc, Value v) {
          return arith::MaximumFOp::create(nb, nl, acc, v).getResult();
        });
    Value exps = withReduced(
        x, max, dim, [](OpBuilder &nb, Location nl, Value v, Value m) {
          return math::ExpOp::create(nb, nl,
                                     arith::SubFOp::create(nb, nl, v, m))
              .getResult();
        });
    Value sum = reduce(
        exps, dim, 0.0, [](OpBuilder &nb, Location nl, Value acc, Value v) {
          return arith::AddFOp::create(nb, nl, acc, v).getResult();
        });
    return withReduced(exps, sum, dim,
                       [](OpBuilder &nb, Location nl, Value v, Value s) {
                         return arith::DivFOp::create(nb, nl, v, s).getResult();
                       });
  }

  /// The feed-forward activation of `x`.
  Value activation(Value x, Activation kind) {
    return elementwise(
        {x}, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          auto c = [&](double v) -> Value {
            return arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(v));
          };
          Value v = a[0];
          switch (kind) {
          case Activation::Relu:
            return arith::MaximumFOp::create(nb, nl, v, c(0.0));
          case Activation::Gelu: { // 0.5 x (1 + erf(x / sqrt 2))
            Value e = math::ErfOp::create(
                nb, nl, arith::MulFOp::create(nb, nl, v, c(M_SQRT1_2)));
            Value h = arith::MulFOp::create(nb, nl, v, c(0.5));
            return arith::MulFOp::create(
                nb, nl, h, arith::AddFOp::create(nb, nl, e, c(1.0)));
          }
          case Activation::GeluTanh: { // 0.5 x (1 + tanh(sqrt(2/pi)(x +
                                       // .044715x^3)))
            Value x3 = arith::MulFOp::create(
                nb, nl, arith::MulFOp::create(nb, nl, v, v), v);
            Value inner = arith::AddFOp::create(
                nb, nl, v, arith::MulFOp::create(nb, nl, x3, c(0.044715)));
            Value t = math::TanhOp::create(
                nb, nl,
                arith::MulFOp::create(nb, nl, inner, c(std::sqrt(2.0 / M_PI))));
            Value h = arith::MulFOp::create(nb, nl, v, c(0.5));
            return arith::MulFOp::create(
                nb, nl, h, arith::AddFOp::create(nb, nl, t, c(1.0)));
          }
          case Activation::Silu: { // x / (1 + e^(-x))
            Value e =
                math::ExpOp::create(nb, nl, arith::NegFOp::create(nb, nl, v));
            return arith::DivFOp::create(
                nb, nl, v, arith::AddFOp::create(nb, nl, e, c(1.0)));
          }
          }
          llvm_unreachable("unknown activation");
        });
  }

  /// [..., seq, heads*dk] -> [..., heads, seq, dk].
  Value splitHeads(Value x, int64_t heads) {
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    int64_t d = type.getShape().back();
    SmallVector<OpFoldResult> s = sizes(x);
    SmallVector<OpFoldResult> expanded(s.begin(), s.end() - 1);
    expanded.push_back(b.getIndexAttr(heads));
    expanded.push_back(b.getIndexAttr(d / heads));
    SmallVector<ReassociationIndices> reassoc;
    for (unsigned i = 0; i + 1 < rank; ++i)
      reassoc.push_back({static_cast<int64_t>(i)});
    reassoc.push_back({rank - 1, rank});
    SmallVector<int64_t> expandedShape(type.getShape().drop_back());
    expandedShape.append({heads, d / heads});
    Value e = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(expandedShape, f32()), x, reassoc,
        expanded);
    // [..., seq, h, dk] -> [..., h, seq, dk]
    SmallVector<int64_t> perm;
    for (unsigned i = 0; i + 2 < rank; ++i)
      perm.push_back(i);
    perm.append({rank - 1, rank - 2, rank});
    return transpose(e, perm);
  }

  /// [L..., heads, s, dk] -> [L..., heads * times, s, dk], head h of the
  /// result head h / times of x.
  Value repeatHeads(Value x, int64_t times) {
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    // [L..., heads, times, s, dk], broadcast along `times`, then collapsed.
    SmallVector<OpFoldResult> outSizes = sizes(x);
    outSizes.insert(outSizes.begin() + (rank - 2), b.getIndexAttr(times));
    SmallVector<unsigned> inDims = range(0, rank - 2);
    inDims.append({rank - 1, rank});
    Value repeated =
        generic({x}, empty(outSizes),
                {map(rank + 1, inDims), map(rank + 1, range(0, rank + 1))},
                parallel(rank + 1),
                [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    return mergeHeadGroups(repeated);
  }

  /// How [L..., heads, s, dk] (rank `rank`) and [L..., heads / g, g, s, dk]
  /// map to each other: the heads dimension splits in two.
  static SmallVector<ReassociationIndices> headGroups(int64_t rank) {
    SmallVector<ReassociationIndices> reassoc;
    for (int64_t i = 0; i < rank; ++i) {
      if (i == rank - 3)
        reassoc.push_back({i, i + 1});
      else
        reassoc.push_back({i < rank - 3 ? i : i + 1});
    }
    return reassoc;
  }

  /// [L..., heads, s, dk] -> [L..., heads / group, group, s, dk]: the heads
  /// that share a key/value head side by side.
  Value groupHeads(Value x, int64_t group) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    SmallVector<int64_t> shape(type.getShape());
    shape[rank - 3] /= group;
    shape.insert(shape.begin() + (rank - 2), group);
    SmallVector<OpFoldResult> outSizes = sizes(x);
    outSizes[rank - 3] = b.getIndexAttr(shape[rank - 3]);
    outSizes.insert(outSizes.begin() + (rank - 2), b.getIndexAttr(group));
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), x,
        headGroups(rank), outSizes);
  }

  /// The inverse of groupHeads.
  Value mergeHeadGroups(Value x) {
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank() - 1;
    return tensor::CollapseShapeOp::create(b, loc, x, headGroups(rank));
  }

  /// [..., heads, seq, dk] -> [..., seq, heads*dk].
  Value mergeHeads(Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    SmallVector<int64_t> perm;
    for (unsigned i = 0; i + 3 < rank; ++i)
      perm.push_back(i);
    perm.append({rank - 2, rank - 3, rank - 1});
    Value t = transpose(x, perm);
    SmallVector<ReassociationIndices> reassoc;
    for (unsigned i = 0; i + 2 < rank; ++i)
      reassoc.push_back({static_cast<int64_t>(i)});
    reassoc.push_back({rank - 2, rank - 1});
    return tensor::CollapseShapeOp::create(b, loc, t, reassoc);
  }

  /// [..., n, m] -> [..., m, n].
  Value transposeLastTwo(Value x) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<int64_t> perm;
    for (unsigned d = 0; d + 2 < rank; ++d)
      perm.push_back(d);
    perm.append({rank - 1, rank - 2});
    return transpose(x, perm);
  }

  Value transpose(Value x, ArrayRef<int64_t> perm) {
    SmallVector<OpFoldResult> s = sizes(x), permuted;
    for (int64_t p : perm)
      permuted.push_back(s[p]);
    return linalg::TransposeOp::create(b, loc, x, empty(permuted), perm)
        .getResult()[0];
  }

  /// Rotary positions on [..., seq, dk], position = offset + row index.
  Value rotary(Value x, RopeStyle style, float base, Value offset) {
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    int64_t dk = type.getShape().back();
    int64_t half = dk / 2;
    bool interleaved = style == RopeStyle::Interleaved;
    SmallVector<AffineMap> maps = {map(rank, range(0, rank))};
    return generic(
        {}, empty(sizes(x)), maps, parallel(rank),
        [&](OpBuilder &nb, Location nl, ValueRange) -> Value {
          auto idx = [&](unsigned d) -> Value {
            return linalg::IndexOp::create(nb, nl, d);
          };
          auto cIdx = [&](int64_t v) -> Value {
            return arith::ConstantIndexOp::create(nb, nl, v);
          };
          Value c = idx(rank - 1);
          // Pair index i and which member of the pair this element is.
          Value i, partner, first;
          if (interleaved) {
            i = arith::DivUIOp::create(nb, nl, c, cIdx(2));
            Value odd = arith::RemUIOp::create(nb, nl, c, cIdx(2));
            first = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, odd,
                                          cIdx(0));
            partner = arith::SelectOp::create(
                nb, nl, first, arith::AddIOp::create(nb, nl, c, cIdx(1)),
                arith::SubIOp::create(nb, nl, c, cIdx(1)));
          } else {
            first = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, c,
                                          cIdx(half));
            i = arith::SelectOp::create(
                nb, nl, first, c, arith::SubIOp::create(nb, nl, c, cIdx(half)));
            partner = arith::SelectOp::create(
                nb, nl, first, arith::AddIOp::create(nb, nl, c, cIdx(half)),
                arith::SubIOp::create(nb, nl, c, cIdx(half)));
          }
          Value pos = idx(rank - 2);
          if (offset)
            pos = arith::AddIOp::create(nb, nl, pos, offset);
          auto toF64 = [&](Value index) -> Value {
            Value i64 =
                arith::IndexCastOp::create(nb, nl, nb.getI64Type(), index);
            return arith::SIToFPOp::create(nb, nl, nb.getF64Type(), i64);
          };
          // angle = pos * base^(-2i/dk), in double as the reference does.
          Value expo = arith::MulFOp::create(
              nb, nl, toF64(i),
              arith::ConstantOp::create(nb, nl, nb.getF64FloatAttr(-2.0 / dk)));
          Value scale = math::PowFOp::create(
              nb, nl,
              arith::ConstantOp::create(nb, nl, nb.getF64FloatAttr(base)),
              expo);
          Value angle = arith::MulFOp::create(nb, nl, toF64(pos), scale);
          Value cosV = arith::TruncFOp::create(
              nb, nl, nb.getF32Type(), math::CosOp::create(nb, nl, angle));
          Value sinV = arith::TruncFOp::create(
              nb, nl, nb.getF32Type(), math::SinOp::create(nb, nl, angle));
          SmallVector<Value> at;
          for (unsigned d = 0; d + 1 < rank; ++d)
            at.push_back(idx(d));
          SmallVector<Value> selfAt = at, partnerAt = at;
          selfAt.push_back(c);
          partnerAt.push_back(partner);
          Value self = tensor::ExtractOp::create(nb, nl, x, selfAt);
          Value other = tensor::ExtractOp::create(nb, nl, x, partnerAt);
          // first: x1 cos - x2 sin; second: x1 sin + x2 cos (x1 = partner).
          Value selfCos = arith::MulFOp::create(nb, nl, self, cosV);
          Value otherSin = arith::MulFOp::create(nb, nl, other, sinV);
          return arith::SelectOp::create(
              nb, nl, first, arith::SubFOp::create(nb, nl, selfCos, otherSin),
              arith::AddFOp::create(nb, nl, otherSin, selfCos));
        });
  }

  /// q [L..., sq, e] x w [h, e, f] -> [L..., sq, f] with h the dimension just
  /// before the sequence: per-head projections of score functions. With
  /// `transposedW` the weight is [h, f, e].
  ///
  /// The innermost loop runs along contiguous rows so that LLVM vectorises
  /// it: [h, e, f], over f (an axpy of W's row e into the output row);
  /// [h, f, e], over e, a dot product of two rows whose sum is marked
  /// reassociable (a vector of partial sums, then their total: the same
  /// order for every element and any thread count). In order, the sum is
  /// a scalar loop: performer's feature map (seq 4096, M 256, dk 64, 12
  /// heads) was half of its layer's time.
  Value perHeadProject(Value q, Value w, bool transposedW) {
    auto type = cast<RankedTensorType>(q.getType());
    unsigned rank = type.getRank();
    auto wType = cast<RankedTensorType>(w.getType());
    int64_t f = wType.getDimSize(transposedW ? 1 : 2);
    unsigned loops = rank + 1; // L..., s, then f, e or e, f
    unsigned head = rank - 3;
    unsigned fDim = transposedW ? rank - 1 : rank,
             eDim = transposedW ? rank : rank - 1;
    SmallVector<unsigned> lead = range(0, rank - 1);
    SmallVector<unsigned> qDims = lead, outDims = lead;
    qDims.push_back(eDim);
    outDims.push_back(fDim);
    SmallVector<OpFoldResult> outSizes = sizes(q);
    outSizes.back() = b.getIndexAttr(f);
    SmallVector<IteratorType> iterators = parallel(loops);
    iterators[eDim] = IteratorType::reduction;
    SmallVector<unsigned> wDims = transposedW
                                      ? SmallVector<unsigned>{head, fDim, eDim}
                                      : SmallVector<unsigned>{head, eDim, fDim};
    auto flags = transposedW ? arith::FastMathFlags::reassoc
                             : arith::FastMathFlags::none;
    return generic({q, w}, filled(outSizes, 0.0),
                   {map(loops, qDims), map(loops, wDims), map(loops, outDims)},
                   iterators,
                   [flags](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     Value m = arith::MulFOp::create(nb, nl, a[0], a[1]);
                     return arith::AddFOp::create(nb, nl, a[2], m, flags);
                   });
  }

  /// Linformer's E_n x: `x` [L..., n, d] projected by the first n columns
  /// of `e` [K, S] to [L..., K, d], reduced over the sequence j.
  Value sequenceProjection(Value x, Value e) {
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    // L..., k, j, d: the sequence (reduced) outside the contiguous
    // features, so the innermost loop is an axpy of x's row j into out's
    // row k, which LLVM vectorises (with j innermost, a strided scalar
    // reduction: seq 4096, K 256, 12 heads took 2.4 s a layer).
    unsigned loops = rank + 1;
    unsigned kDim = rank - 2, jDim = rank - 1, dDim = rank;
    SmallVector<OpFoldResult> xSizes = sizes(x);
    Value eN = sliceDim(e, 1, b.getIndexAttr(0), xSizes[rank - 2]);
    SmallVector<unsigned> lead = range(0, rank - 2);
    SmallVector<unsigned> xDims = lead, outDims = lead;
    xDims.append({jDim, dDim});
    outDims.append({kDim, dDim});
    SmallVector<OpFoldResult> outSizes = xSizes;
    outSizes[rank - 2] =
        b.getIndexAttr(cast<RankedTensorType>(e.getType()).getDimSize(0));
    SmallVector<IteratorType> iterators = parallel(loops);
    iterators[jDim] = IteratorType::reduction;
    return generic(
        {eN, x}, filled(outSizes, 0.0),
        {map(loops, {kDim, jDim}), map(loops, xDims), map(loops, outDims)},
        iterators, [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value m = arith::MulFOp::create(nb, nl, a[0], a[1]);
          return arith::AddFOp::create(nb, nl, a[2], m);
        });
  }

  /// Query rows per block of `attention`: a block's scores ([L..., 64, keys],
  /// 1.5 MiB for 12 heads over 512 keys) are all it stores at a time.
  static constexpr int64_t kQueryBlock = 64;

  /// `t` [..., n, m] restricted to `size` rows from `offset` along `dim`.
  Value sliceDim(Value t, unsigned dim, OpFoldResult offset,
                 OpFoldResult size) {
    SmallVector<OpFoldResult> sz = sizes(t);
    SmallVector<OpFoldResult> offsets(sz.size(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(sz.size(), b.getIndexAttr(1));
    offsets[dim] = offset;
    sz[dim] = size;
    return tensor::ExtractSliceOp::create(b, loc, t, offsets, sz, strides);
  }

  /// The attention core on [L..., s, dk] queries/keys/values (see
  /// attentionBlock), kQueryBlock query rows at a time: a causal block reads
  /// only the keys up to its last row (no block of keys above the diagonal
  /// is scored, only the diagonal block is masked), and no block stores
  /// more than its own scores. Dot-product keys are transposed once for all
  /// blocks. Additive scores run in one block: their key projections would
  /// be repeated per block. `keyPadding` ([batch, keys], 0 for a padded
  /// key; null: none) is sliced with the keys.
  /// The `allowed` table of RandomKeyBlocks from `pattern` ([rows, R] f32
  /// ids) for the keys `k` ([..., keys, dk]): allowed[qb, kb] = any_e
  /// (pattern[qb, e] == kb), so ids out of range or not whole name no block.
  Value randomKeyBlocksTable(Value pattern, Value k, int64_t block) {
    SmallVector<OpFoldResult> keySizes = sizes(k);
    Value keys =
        getValueOrCreateConstantIndexOp(b, loc, keySizes[keySizes.size() - 2]);
    Value blocks = arith::CeilDivUIOp::create(
        b, loc, keys, arith::ConstantIndexOp::create(b, loc, block));
    SmallVector<OpFoldResult> tableSizes = {sizes(pattern)[0], blocks};
    SmallVector<IteratorType> iterators = {IteratorType::parallel,
                                           IteratorType::parallel,
                                           IteratorType::reduction};
    return generic(
        {pattern}, filled(tableSizes, 0.0), {map(3, {0, 2}), map(3, {0, 1})},
        iterators, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value kb = arith::IndexCastUIOp::create(
              nb, nl, nb.getI64Type(), linalg::IndexOp::create(nb, nl, 1));
          Value kbF = arith::UIToFPOp::create(nb, nl, nb.getF32Type(), kb);
          Value hit = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                            a[0], kbF);
          Value one =
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(1.0f));
          return arith::SelectOp::create(nb, nl, hit, one, a[1]);
        });
  }

  Value attention(ScoreKind score, Value q, Value k, Value v, ValueRange params,
                  const KeySpan &span, Value keyOffset = Value(),
                  Value keyPadding = Value(), RandomKeyBlocks random = {}) {
    auto qType = cast<RankedTensorType>(q.getType());
    unsigned rank = qType.getRank();
    // Grouped queries ([L..., group, s, dk] over [L..., s, dk] keys) have
    // one more dimension than the keys.
    unsigned kRank = cast<RankedTensorType>(k.getType()).getRank();
    int64_t staticRows = qType.getDimSize(rank - 2);
    if (score == ScoreKind::Additive ||
        (!ShapedType::isDynamic(staticRows) && staticRows <= kQueryBlock))
      return attentionBlock(score, q, k, v, params, span, Value(), keyOffset,
                            /*keysTransposed=*/false, {}, keyPadding, random);
    SmallVector<OpFoldResult> qSizes = sizes(q), vSizes = sizes(v);
    Value sq = getValueOrCreateConstantIndexOp(b, loc, qSizes[rank - 2]);
    Value sk = getValueOrCreateConstantIndexOp(b, loc, sizes(k)[kRank - 2]);
    Value keysT = transposeLastTwo(k);
    SmallVector<OpFoldResult> outSizes(qSizes.begin(), qSizes.end() - 1);
    outSizes.push_back(vSizes[kRank - 1]);
    // The blocks write disjoint rows of the result: one scf.forall, which
    // tfm-outline-parallel-loops runs on the thread pool.
    Value step = arith::ConstantIndexOp::create(b, loc, kQueryBlock);
    Value blocks = arith::CeilDivUIOp::create(b, loc, sq, step);
    auto loop = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{blocks}, ValueRange{empty(outSizes)},
        /*mapping=*/std::nullopt,
        [&](OpBuilder &nb, Location, ValueRange args) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value i0 = arith::MulIOp::create(b, loc, args[0], step);
          Value out = args[1];
          Value rows = arith::MinSIOp::create(
              b, loc, step, arith::SubIOp::create(b, loc, sq, i0));
          Value last = arith::SubIOp::create(
              b, loc, arith::AddIOp::create(b, loc, i0, rows),
              arith::ConstantIndexOp::create(b, loc, 1));
          Value block;
          if (!span.hasBegin() && !span.globalKeys) {
            // The keys the block's rows see: up to the end of its last
            // row's span (the spans' ends grow with the row).
            Value keys = sk;
            if (span.end)
              keys = arith::MinSIOp::create(
                  b, loc, sk, keyBound(b, loc, *span.end, last, keyOffset));
            Value qBlock = sliceDim(q, rank - 2, i0, rows);
            Value blockPadding =
                keyPadding ? sliceDim(keyPadding, 1, b.getIndexAttr(0), keys)
                           : Value();
            block = attentionBlock(
                score, qBlock,
                sliceDim(keysT, kRank - 1, b.getIndexAttr(0), keys),
                sliceDim(v, kRank - 2, b.getIndexAttr(0), keys), params, span,
                i0, keyOffset, /*keysTransposed=*/true, {}, blockPadding,
                random);
          } else {
            // From the first row's first key (first keys grow with the row)
            // to the largest end (the last row's, or a global row's, which
            // sees every key); with global tokens, also the global keys
            // before that.
            Value qBlock = sliceDim(q, rank - 2, i0, rows);
            RowKeyValues firstRow = rowKeys(b, loc, span, i0, keyOffset, sk);
            RowKeyValues lastRow = rowKeys(b, loc, span, last, keyOffset, sk);
            Value bandBegin = firstRow.first;
            Value bandEnd =
                arith::MaxSIOp::create(b, loc, firstRow.end, lastRow.end);
            Value bandKeys = arith::SubIOp::create(b, loc, bandEnd, bandBegin);
            Value blockKeysT = sliceDim(keysT, kRank - 1, bandBegin, bandKeys);
            Value blockValues = sliceDim(v, kRank - 2, bandBegin, bandKeys);
            Value blockPadding =
                keyPadding ? sliceDim(keyPadding, 1, bandBegin, bandKeys)
                           : Value();
            Value prefixKeys;
            if (span.globalKeys) {
              // [0, prefix) then the band: the global keys the band leaves.
              prefixKeys = arith::MinSIOp::create(
                  b, loc, bandBegin,
                  arith::ConstantIndexOp::create(b, loc, span.globalKeys));
              blockKeysT = concatDim(
                  kRank - 1,
                  sliceDim(keysT, kRank - 1, b.getIndexAttr(0), prefixKeys),
                  blockKeysT);
              blockValues = concatDim(
                  kRank - 2,
                  sliceDim(v, kRank - 2, b.getIndexAttr(0), prefixKeys),
                  blockValues);
              if (keyPadding)
                blockPadding = concatDim(
                    1, sliceDim(keyPadding, 1, b.getIndexAttr(0), prefixKeys),
                    blockPadding);
            }
            KeyIndex keyIndex{bandBegin, prefixKeys};
            if (random.pattern) {
              // Then the pattern's key blocks of the block's query blocks,
              // gathered: only those are scored besides the band.
              keyIndex.gatheredFrom = getValueOrCreateConstantIndexOp(
                  b, loc, sizes(blockValues)[kRank - 2]);
              keyIndex.firstQueryBlock = arith::DivUIOp::create(
                  b, loc,
                  keyOffset
                      ? arith::AddIOp::create(b, loc, keyOffset, i0).getResult()
                      : i0,
                  arith::ConstantIndexOp::create(b, loc, random.block));
              Value lastPosition =
                  keyOffset ? arith::AddIOp::create(b, loc, keyOffset, last)
                                  .getResult()
                            : last;
              keyIndex.gathered = randomKeys(
                  random, keyIndex.firstQueryBlock,
                  arith::DivUIOp::create(
                      b, loc, lastPosition,
                      arith::ConstantIndexOp::create(b, loc, random.block)),
                  sk);
              blockKeysT =
                  concatDim(kRank - 1, blockKeysT,
                            gatherDim(keysT, kRank - 1, keyIndex.gathered));
              blockValues =
                  concatDim(kRank - 2, blockValues,
                            gatherDim(v, kRank - 2, keyIndex.gathered));
              if (keyPadding)
                blockPadding =
                    concatDim(1, blockPadding,
                              gatherDim(keyPadding, 1, keyIndex.gathered));
            }
            block = attentionBlock(score, qBlock, blockKeysT, blockValues,
                                   params, span, i0, keyOffset,
                                   /*keysTransposed=*/true, keyIndex,
                                   blockPadding, random);
          }
          SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
          offsets[rank - 2] = i0;
          SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
          SmallVector<OpFoldResult> blockSizes = sizes(block);
          auto inParallel = scf::InParallelOp::create(b, loc);
          OpBuilder::InsertionGuard terminatorGuard(b);
          b.setInsertionPointToStart(inParallel.getBody());
          tensor::ParallelInsertSliceOp::create(b, loc, block, out, offsets,
                                                blockSizes, strides);
        });
    return loop.getResult(0);
  }

  /// `a` then `b` along `dim` (equal elsewhere).
  Value concatDim(unsigned dim, Value a, Value c) {
    SmallVector<OpFoldResult> aSizes = sizes(a), cSizes = sizes(c);
    SmallVector<OpFoldResult> all = aSizes;
    all[dim] = arith::AddIOp::create(
                   b, loc, getValueOrCreateConstantIndexOp(b, loc, aSizes[dim]),
                   getValueOrCreateConstantIndexOp(b, loc, cSizes[dim]))
                   .getResult();
    SmallVector<OpFoldResult> offsets(all.size(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(all.size(), b.getIndexAttr(1));
    Value out = tensor::InsertSliceOp::create(b, loc, a, empty(all), offsets,
                                              aSizes, strides);
    offsets[dim] = aSizes[dim];
    return tensor::InsertSliceOp::create(b, loc, c, out, offsets, cSizes,
                                         strides);
  }

  /// Where a block's key index j is among the keys: bandBegin + j, or with
  /// global keys (prefixKeys of them before the band) j below prefixKeys,
  /// bandBegin + j - prefixKeys above. Null: j. With random key blocks
  /// gathered after the band (from index gatheredFrom on), key j is
  /// gathered[j - gatheredFrom] (randomKeys: its position, or -1), of query
  /// block firstQueryBlock + (j - gatheredFrom) / (block * randomBlocks).
  struct KeyIndex {
    Value bandBegin, prefixKeys;
    Value gatheredFrom, gathered, firstQueryBlock;
  };

  /// The random keys of query blocks [first, last] ([(last - first + 1) *
  /// R * B] f32): entry e of query block qb's row of the pattern is B
  /// entries, the positions of key block id's keys, each -1 where the block
  /// counts no key: qb global (it sees every key) or past the pattern's
  /// rows; id out of range or not whole, a global block, in qb's window,
  /// named before in the row; the key at or past `keys`.
  Value randomKeys(const RandomKeyBlocks &random, Value first, Value last,
                   Value keys) {
    int64_t r = random.randomBlocks, blockSize = random.block;
    Value queryBlocks = arith::AddIOp::create(
        b, loc, arith::SubIOp::create(b, loc, last, first),
        arith::ConstantIndexOp::create(b, loc, 1));
    Value count = arith::MulIOp::create(
        b, loc, queryBlocks,
        arith::ConstantIndexOp::create(b, loc, r * blockSize));
    Value pattern = random.pattern;
    return generic(
        {}, empty({count}), {map(1, {0})}, parallel(1),
        [&](OpBuilder &nb, Location nl, ValueRange) -> Value {
          auto index = [&](int64_t c) -> Value {
            return arith::ConstantIndexOp::create(nb, nl, c);
          };
          auto f32c = [&](double c) -> Value {
            return arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(c));
          };
          auto cmpI = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
            return arith::CmpIOp::create(nb, nl, p, x, y);
          };
          auto cmpF = [&](arith::CmpFPredicate p, Value x, Value y) -> Value {
            return arith::CmpFOp::create(nb, nl, p, x, y);
          };
          auto both = [&](Value x, Value y) -> Value {
            return arith::AndIOp::create(nb, nl, x, y);
          };
          Value j = linalg::IndexOp::create(nb, nl, 0);
          Value entry = arith::DivUIOp::create(nb, nl, j, index(blockSize));
          Value within = arith::RemUIOp::create(nb, nl, j, index(blockSize));
          Value qb = arith::AddIOp::create(
              nb, nl, first, arith::DivUIOp::create(nb, nl, entry, index(r)));
          Value e = arith::RemUIOp::create(nb, nl, entry, index(r));
          Value rows = tensor::DimOp::create(nb, nl, pattern, 0);
          Value ok = both(
              cmpI(arith::CmpIPredicate::uge, qb, index(random.globalBlocks)),
              cmpI(arith::CmpIPredicate::ult, qb, rows));
          // Row qb of the pattern (a row in range: the entry is -1 anyway).
          Value row = arith::MinUIOp::create(
              nb, nl, qb, arith::SubIOp::create(nb, nl, rows, index(1)));
          auto idAt = [&](Value column) -> Value {
            return tensor::ExtractOp::create(nb, nl, pattern,
                                             ValueRange{row, column});
          };
          Value id = idAt(e);
          // Whole and in [0, 2^24): exact as an index.
          ok = both(ok, cmpF(arith::CmpFPredicate::OGE, id, f32c(0.0)));
          ok = both(ok, cmpF(arith::CmpFPredicate::OLT, id, f32c(16777216.0)));
          Value safeId = arith::SelectOp::create(nb, nl, ok, id, f32c(0.0));
          Value kb = arith::IndexCastUIOp::create(
              nb, nl, nb.getIndexType(),
              arith::FPToUIOp::create(nb, nl, nb.getI64Type(), safeId));
          ok = both(ok, cmpF(arith::CmpFPredicate::OEQ, safeId,
                             arith::UIToFPOp::create(
                                 nb, nl, nb.getF32Type(),
                                 arith::IndexCastUIOp::create(
                                     nb, nl, nb.getI64Type(), kb))));
          ok = both(ok, cmpI(arith::CmpIPredicate::uge, kb,
                             index(random.globalBlocks)));
          // |kb - qb| > window: outside qb's window.
          Value distance = arith::SubIOp::create(
              nb, nl, arith::MaxUIOp::create(nb, nl, kb, qb),
              arith::MinUIOp::create(nb, nl, kb, qb));
          ok = both(ok, cmpI(arith::CmpIPredicate::ugt, distance,
                             index(random.windowBlocks)));
          // Not named by an earlier entry of the row.
          for (int64_t f = 0; f + 1 < r; ++f) {
            Value earlier = cmpI(arith::CmpIPredicate::ult, index(f), e);
            Value same = cmpF(arith::CmpFPredicate::OEQ, idAt(index(f)), id);
            ok =
                both(ok, arith::XOrIOp::create(nb, nl, both(earlier, same),
                                               arith::ConstantIntOp::create(
                                                   nb, nl, nb.getI1Type(), 1)));
          }
          Value key = arith::AddIOp::create(
              nb, nl, arith::MulIOp::create(nb, nl, kb, index(blockSize)),
              within);
          ok = both(ok, cmpI(arith::CmpIPredicate::ult, key, keys));
          Value position = arith::UIToFPOp::create(
              nb, nl, nb.getF32Type(),
              arith::IndexCastUIOp::create(nb, nl, nb.getI64Type(), key));
          return arith::SelectOp::create(nb, nl, ok, position, f32c(-1.0));
        });
  }

  /// `src` at the positions `at` ([n] f32, -1: none, read as position 0)
  /// along `dim`: the result has n there.
  Value gatherDim(Value src, unsigned dim, Value at) {
    SmallVector<OpFoldResult> outSizes = sizes(src);
    outSizes[dim] = sizes(at)[0];
    unsigned n = outSizes.size();
    return generic(
        {at}, empty(outSizes), {map(n, {dim}), map(n, range(0, n))},
        parallel(n), [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value position = arith::MaximumFOp::create(
              nb, nl, a[0],
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f)));
          SmallVector<Value> indices;
          for (unsigned d = 0; d < n; ++d)
            indices.push_back(
                d == dim ? arith::IndexCastUIOp::create(
                               nb, nl, nb.getIndexType(),
                               arith::FPToUIOp::create(nb, nl, nb.getI64Type(),
                                                       position))
                               .getResult()
                         : linalg::IndexOp::create(nb, nl, d).getResult());
          return tensor::ExtractOp::create(nb, nl, src, indices);
        });
  }

  /// KeySpan::RowKeys of query row `row` as index values: keys [0, prefix)
  /// and [first, end), clamped to `keys`.
  struct RowKeyValues {
    Value prefix, first, end;
  };
  static RowKeyValues rowKeys(OpBuilder &nb, Location nl, const KeySpan &span,
                              Value row, Value offset, Value keys) {
    Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
    auto clamp = [&](Value x) -> Value {
      return arith::MinSIOp::create(nb, nl, keys,
                                    arith::MaxSIOp::create(nb, nl, zero, x));
    };
    RowKeyValues r;
    r.end = span.end ? clamp(keyBound(nb, nl, *span.end, row, offset)) : keys;
    r.first = span.hasBegin() ? clamp(keyBound(nb, nl, span.begin, row, offset))
                              : zero;
    r.prefix = zero;
    if (!span.globalKeys)
      return r;
    Value global = arith::ConstantIndexOp::create(nb, nl, span.globalKeys);
    Value position =
        offset ? arith::AddIOp::create(nb, nl, offset, row).getResult() : row;
    Value isGlobal = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt,
                                           position, global);
    Value globalEnd =
        span.globalEnd ? clamp(keyBound(nb, nl, *span.globalEnd, row, offset))
                       : keys;
    r.end = arith::SelectOp::create(nb, nl, isGlobal, globalEnd, r.end);
    r.prefix = arith::SelectOp::create(
        nb, nl, isGlobal, zero, arith::MinSIOp::create(nb, nl, global, r.end));
    r.first = arith::SelectOp::create(
        nb, nl, isGlobal, zero,
        arith::MaxSIOp::create(nb, nl, r.prefix, r.first));
    return r;
  }

  /// `bound` of query row `row` (an index; the queries at `offset` among
  /// the keys, 0 when null).
  static Value keyBound(OpBuilder &nb, Location nl, const KeyBound &bound,
                        Value row, Value offset) {
    auto times = [&](int64_t c, Value x) -> Value {
      return c == 1 ? x
                    : arith::MulIOp::create(
                          nb, nl, x, arith::ConstantIndexOp::create(nb, nl, c))
                          .getResult();
    };
    Value sum = arith::ConstantIndexOp::create(nb, nl, bound.constant);
    if (bound.perRow)
      sum = arith::AddIOp::create(nb, nl, times(bound.perRow, row), sum);
    if (bound.perOffset && offset)
      sum = arith::AddIOp::create(nb, nl, times(bound.perOffset, offset), sum);
    if (bound.perBlock) {
      // Whole blocks of the position (never negative).
      Value position =
          offset ? arith::AddIOp::create(nb, nl, offset, row).getResult() : row;
      Value blocks = arith::DivUIOp::create(
          nb, nl, position,
          arith::ConstantIndexOp::create(nb, nl, bound.block));
      sum = arith::AddIOp::create(nb, nl, times(bound.perBlock, blocks), sum);
    }
    return sum;
  }

  /// The attention core on [L..., s, dk] queries/keys/values: scores,
  /// masked to the keys of `span` (query row i is row firstRow + i of the
  /// attention, the queries at keyOffset among the keys; null: 0), softmax,
  /// times values. With `keysTransposed`, dot-product keys come as
  /// [L..., dk, s]. `keyPadding` [batch, keys of the block] (the batch
  /// q's first dimension; null: none) gives a padded key (0) the lowest
  /// finite score: no weight in a row with a real key, and a row with only
  /// padded keys stays finite.
  Value attentionBlock(ScoreKind score, Value q, Value k, Value v,
                       ValueRange params, const KeySpan &span, Value firstRow,
                       Value keyOffset, bool keysTransposed = false,
                       KeyIndex keyIndex = {}, Value keyPadding = Value(),
                       RandomKeyBlocks random = {}) {
    Value probs =
        attentionWeights(score, q, k, params, span, firstRow, keyOffset,
                         keysTransposed, keyIndex, keyPadding, random);
    auto qType = cast<RankedTensorType>(q.getType());
    unsigned rank = qType.getRank();
    unsigned loops = rank + 1; // L..., i, j, c
    unsigned iDim = rank - 2, jDim = rank - 1, cDim = rank;
    unsigned kRank = cast<RankedTensorType>(k.getType()).getRank();
    SmallVector<unsigned> lead = range(0, rank - 2);
    SmallVector<unsigned> keyLead = lead;
    if (kRank < rank)
      keyLead.erase(keyLead.begin() + (rank - 3));
    auto with = [&](SmallVector<unsigned> d, ArrayRef<unsigned> tail) {
      d.append(tail.begin(), tail.end());
      return d;
    };
    SmallVector<IteratorType> middleReduction = parallel(rank + 1);
    middleReduction[rank - 1] = IteratorType::reduction;
    // out[L, i, e] = sum_j p[L, i, j] v[L, j, e], the feature e innermost
    // (contiguous in v and out).
    SmallVector<OpFoldResult> outSizes = sizes(q);
    outSizes.back() = sizes(v)[kRank - 1];
    return generic({probs, v}, filled(outSizes, 0.0),
                   {map(loops, with(lead, {iDim, jDim})),
                    map(loops, with(keyLead, {jDim, cDim})),
                    map(loops, with(lead, {iDim, cDim}))},
                   middleReduction,
                   [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     Value m = arith::MulFOp::create(nb, nl, a[0], a[1]);
                     return arith::AddFOp::create(nb, nl, a[2], m);
                   });
  }

  /// The attention's weights [L..., s, keys]: attentionBlock's scores,
  /// masked, and their softmax over the keys (a key masked by a rule gets
  /// exactly 0).
  Value attentionWeights(ScoreKind score, Value q, Value k, ValueRange params,
                         const KeySpan &span, Value firstRow, Value keyOffset,
                         bool keysTransposed = false, KeyIndex keyIndex = {},
                         Value keyPadding = Value(),
                         RandomKeyBlocks random = {}) {
    bool masked = !span.isFull();
    auto qType = cast<RankedTensorType>(q.getType());
    unsigned rank = qType.getRank();
    int64_t dk = qType.getShape().back();
    unsigned loops = rank + 1; // L..., i, j, c
    unsigned iDim = rank - 2, jDim = rank - 1, cDim = rank;
    SmallVector<unsigned> lead = range(0, rank - 2);
    // Grouped queries: the keys and values lack the group dimension (the
    // one before the queries' sequence), which every query of a group reads
    // them along.
    unsigned kRank = cast<RankedTensorType>(k.getType()).getRank();
    SmallVector<unsigned> keyLead = lead;
    if (kRank < rank)
      keyLead.erase(keyLead.begin() + (rank - 3));
    auto with = [&](ArrayRef<unsigned> tail) {
      SmallVector<unsigned> d = lead;
      d.append(tail.begin(), tail.end());
      return d;
    };
    auto withKeys = [&](ArrayRef<unsigned> tail) {
      SmallVector<unsigned> d = keyLead;
      d.append(tail.begin(), tail.end());
      return d;
    };
    SmallVector<OpFoldResult> qSizes = sizes(q), kSizes = sizes(k);
    SmallVector<OpFoldResult> scoreSizes(qSizes.begin(), qSizes.end() - 1);
    scoreSizes.push_back(kSizes[keysTransposed ? kRank - 1 : kRank - 2]);
    SmallVector<IteratorType> contraction = parallel(rank);
    contraction.push_back(IteratorType::reduction);
    // (L..., i, reduction, innermost parallel)
    SmallVector<IteratorType> middleReduction = parallel(rank + 1);
    middleReduction[rank - 1] = IteratorType::reduction;

    Value scores;
    if (score == ScoreKind::Additive) {
      // v_hᵀ tanh(W_key k + W_query q), summed over the inner dimension a.
      Value kp = perHeadProject(k, params[0], /*transposedW=*/true);
      Value qp = perHeadProject(q, params[1], /*transposedW=*/true);
      unsigned head = rank - 3;
      scores = generic(
          {qp, kp, params[2]}, filled(scoreSizes, 0.0),
          {map(loops, with({iDim, cDim})), map(loops, with({jDim, cDim})),
           map(loops, {head, cDim}), map(loops, with({iDim, jDim}))},
          contraction, [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
            Value t = math::TanhOp::create(
                nb, nl, arith::AddFOp::create(nb, nl, a[0], a[1]));
            return arith::AddFOp::create(
                nb, nl, a[3], arith::MulFOp::create(nb, nl, a[2], t));
          });
    } else {
      Value query = q;
      if (score == ScoreKind::Bilinear) // qᵀ W k = (qᵀ W) k
        query = perHeadProject(q, params[0], /*transposedW=*/false);
      // s[L, i, j] = sum_c q[L, i, c] kᵀ[L, c, j], the key index innermost:
      // contiguous in kᵀ, so the loop vectorises without reassociating
      // the sum.
      Value keysT = k;
      if (!keysTransposed)
        keysT = transposeLastTwo(k);
      scores = generic({query, keysT}, filled(scoreSizes, 0.0),
                       {map(loops, with({iDim, jDim})),
                        map(loops, withKeys({jDim, cDim})),
                        map(loops, with({iDim, cDim}))},
                       middleReduction,
                       [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                         Value m = arith::MulFOp::create(nb, nl, a[0], a[1]);
                         return arith::AddFOp::create(nb, nl, a[2], m);
                       });
    }
    if (score == ScoreKind::ScaledDot || masked || keyPadding) {
      double scale = score == ScoreKind::ScaledDot
                         ? 1.0 / std::sqrt(static_cast<double>(dk))
                         : 1.0;
      unsigned sRank = rank;
      Value scaleV = f32Const(scale);
      Value minusInf = f32Const(-INFINITY);
      Value lowest = f32Const(std::numeric_limits<float>::lowest());
      Value zeroF = f32Const(0.0);
      SmallVector<Value> inputs;
      SmallVector<AffineMap> maps;
      if (keyPadding) {
        inputs.push_back(keyPadding);
        maps.push_back(map(sRank, {0, sRank - 1}));
      }
      maps.push_back(map(sRank, range(0, sRank)));
      scores = generic(
          inputs, scores, maps, parallel(sRank),
          [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
            Value s = a.back();
            if (score == ScoreKind::ScaledDot)
              s = arith::MulFOp::create(nb, nl, s, scaleV);
            if (keyPadding) {
              Value padded = arith::CmpFOp::create(
                  nb, nl, arith::CmpFPredicate::OEQ, a[0], zeroF);
              s = arith::SelectOp::create(nb, nl, padded, lowest, s);
            }
            if (!masked)
              return s;
            Value i = linalg::IndexOp::create(nb, nl, sRank - 2);
            Value j = linalg::IndexOp::create(nb, nl, sRank - 1);
            if (firstRow)
              i = arith::AddIOp::create(nb, nl, i, firstRow);
            Value outside;
            if (!span.hasBegin() && !span.globalKeys) {
              // At or past end(i): no weight.
              outside = arith::CmpIOp::create(
                  nb, nl, arith::CmpIPredicate::uge, j,
                  keyBound(nb, nl, *span.end, i, keyOffset));
            } else {
              // Outside [0, prefix(i)) and [first(i), end(i)) of key j's
              // position among the keys: no weight.
              Value key = j;
              if (keyIndex.bandBegin) {
                Value band =
                    arith::AddIOp::create(nb, nl, keyIndex.bandBegin, j);
                key = band;
                if (keyIndex.prefixKeys)
                  key = arith::SelectOp::create(
                      nb, nl,
                      arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult,
                                            j, keyIndex.prefixKeys),
                      j,
                      arith::SubIOp::create(nb, nl, band, keyIndex.prefixKeys));
              }
              Value keys = arith::ConstantIndexOp::create(
                  nb, nl, std::numeric_limits<int64_t>::max());
              RowKeyValues row = rowKeys(nb, nl, span, i, keyOffset, keys);
              auto cmp = [&](arith::CmpIPredicate pred, Value x, Value y) {
                return arith::CmpIOp::create(nb, nl, pred, x, y).getResult();
              };
              Value inBand = arith::AndIOp::create(
                  nb, nl, cmp(arith::CmpIPredicate::sge, key, row.first),
                  cmp(arith::CmpIPredicate::slt, key, row.end));
              Value seen = arith::OrIOp::create(
                  nb, nl, inBand,
                  cmp(arith::CmpIPredicate::slt, key, row.prefix));
              // The row's position and the block size (random blocks).
              Value blockSize =
                  arith::ConstantIndexOp::create(nb, nl, random.block);
              Value position =
                  keyOffset
                      ? arith::AddIOp::create(nb, nl, keyOffset, i).getResult()
                      : i;
              if (keyIndex.gathered) {
                // A gathered key: seen by the rows of its query block, up
                // to a causal limit.
                Value g = arith::SubIOp::create(
                    nb, nl,
                    arith::MaxUIOp::create(nb, nl, j, keyIndex.gatheredFrom),
                    keyIndex.gatheredFrom);
                Value at = tensor::ExtractOp::create(nb, nl, keyIndex.gathered,
                                                     ValueRange{g});
                Value owner = arith::AddIOp::create(
                    nb, nl, keyIndex.firstQueryBlock,
                    arith::DivUIOp::create(
                        nb, nl, g,
                        arith::ConstantIndexOp::create(
                            nb, nl, random.block * random.randomBlocks)));
                Value hit = arith::AndIOp::create(
                    nb, nl,
                    arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGE, at,
                                          f32Const(0.0)),
                    cmp(arith::CmpIPredicate::eq, owner,
                        arith::DivUIOp::create(nb, nl, position, blockSize)));
                if (random.limit) {
                  Value gatheredKey = arith::IndexCastUIOp::create(
                      nb, nl, nb.getIndexType(),
                      arith::FPToUIOp::create(nb, nl, nb.getI64Type(),
                                              arith::MaximumFOp::create(
                                                  nb, nl, at, f32Const(0.0))));
                  hit = arith::AndIOp::create(
                      nb, nl, hit,
                      cmp(arith::CmpIPredicate::slt, gatheredKey,
                          keyBound(nb, nl, *random.limit, i, keyOffset)));
                }
                seen = arith::SelectOp::create(
                    nb, nl,
                    cmp(arith::CmpIPredicate::uge, j, keyIndex.gatheredFrom),
                    hit, seen);
              } else if (random.allowed) {
                // Or its key block is in the query block's pattern row
                // (the keys then are every key: key == j).
                Value lastRow = arith::SubIOp::create(
                    nb, nl, tensor::DimOp::create(nb, nl, random.allowed, 0),
                    arith::ConstantIndexOp::create(nb, nl, 1));
                Value qb = arith::MinUIOp::create(
                    nb, nl, arith::DivUIOp::create(nb, nl, position, blockSize),
                    lastRow);
                Value kb = arith::DivUIOp::create(nb, nl, key, blockSize);
                Value named = tensor::ExtractOp::create(nb, nl, random.allowed,
                                                        ValueRange{qb, kb});
                Value hit = arith::CmpFOp::create(
                    nb, nl, arith::CmpFPredicate::OGT, named, f32Const(0.5));
                if (random.limit)
                  hit = arith::AndIOp::create(
                      nb, nl, hit,
                      cmp(arith::CmpIPredicate::slt, key,
                          keyBound(nb, nl, *random.limit, i, keyOffset)));
                seen = arith::OrIOp::create(nb, nl, seen, hit);
              }
              outside = arith::XOrIOp::create(
                  nb, nl, seen,
                  arith::ConstantIntOp::create(nb, nl, nb.getI1Type(), 1));
            }
            return arith::SelectOp::create(nb, nl, outside, minusInf, s);
          });
    }
    return softmax(scores, rank - 1);
  }

  /// `shape` at `strides` from float `offset` of the flat buffer `buffer`
  /// (a cache or a mamba state, as its type lays it out), its first
  /// `batch` entries along the leading dimension.
  Value bufferView(Value buffer, int64_t offset, ArrayRef<int64_t> shape,
                   ArrayRef<int64_t> strides, OpFoldResult batch) {
    auto folded = [&](ArrayRef<int64_t> v) {
      SmallVector<OpFoldResult> r;
      for (int64_t x : v)
        r.push_back(b.getIndexAttr(x));
      return r;
    };
    Value all = memref::ReinterpretCastOp::create(
        b, loc,
        MemRefType::get(
            shape, f32(),
            StridedLayoutAttr::get(b.getContext(), offset, strides)),
        buffer, b.getIndexAttr(offset), folded(shape), folded(strides));
    SmallVector<OpFoldResult> sizes = folded(shape);
    sizes[0] = batch;
    SmallVector<OpFoldResult> zeros(shape.size(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> ones(shape.size(), b.getIndexAttr(1));
    return memref::SubViewOp::create(b, loc, all, zeros, sizes, ones);
  }

  /// Slots [first, first + count) of the keys or the values of the first
  /// `batch` sequences of `cache` (a flat buffer in the layout of `type`),
  /// as a strided view [batch, heads, count, dk].
  Value cacheView(Value cache, KVCacheType type, bool values,
                  OpFoldResult batch, OpFoldResult first, OpFoldResult count) {
    std::array<int64_t, 4> strides =
        values ? type.getValueStrides() : type.getKeyStrides();
    SmallVector<OpFoldResult> whole = {
        b.getIndexAttr(type.getMaxBatch()), b.getIndexAttr(type.getHeads()),
        b.getIndexAttr(type.getSlots()), b.getIndexAttr(type.getHeadDim())};
    SmallVector<OpFoldResult> wholeStrides;
    for (int64_t s : strides)
      wholeStrides.push_back(b.getIndexAttr(s));
    Value all = memref::ReinterpretCastOp::create(
        b, loc,
        cast<MemRefType>(MemRefType::get(
            {type.getMaxBatch(), type.getHeads(), type.getSlots(),
             type.getHeadDim()},
            f32(),
            StridedLayoutAttr::get(
                b.getContext(), values ? type.getValuesOffset() : 0, strides))),
        cache, b.getIndexAttr(values ? type.getValuesOffset() : 0), whole,
        wholeStrides);
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0),
                                         first, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sz = {batch, whole[1], count, whole[3]};
    SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
    return memref::SubViewOp::create(b, loc, all, offsets, sz, ones);
  }

  /// Writes `t` ([b, heads, s, dk]) as the keys (or values) of slots
  /// slot... of `cache`.
  void writeCache(Value cache, KVCacheType type, bool values, Value t,
                  OpFoldResult slot) {
    SmallVector<OpFoldResult> ts = sizes(t);
    Value dest = cacheView(cache, type, values, ts[0], slot, ts[2]);
    auto write = bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, t, dest);
    write.setWritable(true);
  }

  /// Rows [first, first + count) of t ([b, heads, s, dk]).
  Value headRows(Value t, OpFoldResult first, OpFoldResult count) {
    SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
    SmallVector<OpFoldResult> sz = sizes(t);
    SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
    offsets[2] = first;
    sz[2] = count;
    return tensor::ExtractSliceOp::create(b, loc, t, offsets, sz, ones);
  }

  /// The keys (or values) of slots [first, first + count) of the first
  /// `batch` sequences of `cache`, as [batch, heads, count, dk].
  Value readCache(Value cache, KVCacheType type, bool values,
                  OpFoldResult batch, OpFoldResult count,
                  OpFoldResult first = OpFoldResult()) {
    if (!first)
      first = b.getIndexAttr(0);
    Value view = cacheView(cache, type, values, batch, first, count);
    auto viewType = cast<MemRefType>(view.getType());
    auto tensorType = RankedTensorType::get(viewType.getShape(), f32());
    auto read = bufferization::ToTensorOp::create(b, loc, tensorType, view);
    read.setRestrict(true);
    return read;
  }

  /// Rows [begin, begin+count) of a weight [n, ...] or a bias [n].
  Value rows(Value w, int64_t begin, int64_t count) {
    auto type = cast<RankedTensorType>(w.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sz = sizes(w);
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    offsets[0] = b.getIndexAttr(begin);
    sz[0] = b.getIndexAttr(count);
    return tensor::ExtractSliceOp::create(b, loc, w, offsets, sz, strides);
  }

  /// Features [begin, begin+count) of the last dimension of x.
  Value features(Value x, int64_t begin, int64_t count) {
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> sz = sizes(x);
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    offsets[rank - 1] = b.getIndexAttr(begin);
    sz[rank - 1] = b.getIndexAttr(count);
    return tensor::ExtractSliceOp::create(b, loc, x, offsets, sz, strides);
  }
};

} // namespace mlir::tfm

#endif // TFM_LOWERING_LLVM_LINALGBUILDER_H
