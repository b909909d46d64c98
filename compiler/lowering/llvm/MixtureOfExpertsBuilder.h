//===- MixtureOfExpertsBuilder.h - routing and grouped GEMMs in linalg ----===//
//
// The three ops a tfm.moe decomposes into, on tensors for the LLVM backend:
// tfm.route_experts as scf.for loops over the tokens (a top-k selection and
// a stable counting sort of the (token, slot) pairs by expert),
// tfm.gather_rows as a linalg.generic that reads the named rows, and
// tfm.grouped_linear as one packed GEMM per expert over the rows of its
// group (a slice of dynamic size: an expert no token chose multiplies no
// row), the scatter back as an scf.for over the group's pairs.
//
// The ops keep their rows flat ([pairs, d], [tokens, d]); their results
// are copied back into the op's shapes, because upstream's
// expand-strided-metadata cannot expand one dynamic dimension into two.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LOWERING_LLVM_MIXTUREOFEXPERTSBUILDER_H
#define TFM_LOWERING_LLVM_MIXTUREOFEXPERTSBUILDER_H

#include "LinalgBuilder.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::tfm {

class MixtureOfExpertsBuilder {
public:
  explicit MixtureOfExpertsBuilder(TensorBuilder &tb)
      : tb(tb), b(tb.b), loc(tb.loc) {}

  struct Routing {
    Value tokens, weights, starts;
  };

  /// tfm.route_experts of `logits` [..., E]: per token the top `topK`
  /// experts (larger logit first, a tie to the lower expert, a NaN after
  /// every number) and the softmax over their logits, then the pairs
  /// grouped by expert in token order.
  Routing route(Value logits, int64_t topK) {
    auto type = cast<RankedTensorType>(logits.getType());
    int64_t experts = type.getShape().back();
    Value flat = flatten(logits, 1); // [N, E]
    Value n = tensor::DimOp::create(b, loc, flat, 0);
    Value k = index(topK), e = index(experts);
    Value choice = emptyOf({n, b.getIndexAttr(topK)}, b.getI32Type());
    Value chosenWeight = emptyOf({n, b.getIndexAttr(topK)}, tb.f32());
    SmallVector<Value> chosen =
        loop(index(0), n, {choice, chosenWeight}, [&](Value t, ValueRange a) {
          return selectTopK(flat, t, e, topK, a[0], a[1]);
        });
    // starts[x + 1] counts expert x's pairs, then the prefix sums.
    Value starts =
        linalg::FillOp::create(
            b, loc, ValueRange{i32Const(0)},
            ValueRange{emptyOf({b.getIndexAttr(experts + 1)}, b.getI32Type())})
            .getResult(0);
    starts = forEachPair(n, k, {starts}, [&](Value t, Value s, ValueRange a) {
      Value next = addIndex(expertOf(chosen[0], t, s), 1);
      Value count = tensor::ExtractOp::create(b, loc, a[0], next);
      return SmallVector<Value>{
          tensor::InsertOp::create(b, loc, addI32(count, 1), a[0], next)};
    })[0];
    starts =
        loop(index(1), addIndex(e, 1), {starts}, [&](Value x, ValueRange a) {
          Value before =
              tensor::ExtractOp::create(b, loc, a[0], subIndex(x, 1));
          Value count = tensor::ExtractOp::create(b, loc, a[0], x);
          Value sum = arith::AddIOp::create(b, loc, before, count);
          return SmallVector<Value>{
              tensor::InsertOp::create(b, loc, sum, a[0], x)};
        })[0];
    // Each pair to the next free place of its expert's group.
    Value pairs = arith::MulIOp::create(b, loc, n, k);
    Value tokens = emptyOf({pairs}, b.getI32Type());
    Value weights = emptyOf({pairs}, tb.f32());
    SmallVector<Value> sorted = forEachPair(
        n, k, {tokens, weights, starts}, [&](Value t, Value s, ValueRange a) {
          Value x = expertOf(chosen[0], t, s);
          Value at = tensor::ExtractOp::create(b, loc, a[2], x);
          Value pos = toIndex(at);
          Value token = arith::IndexCastOp::create(b, loc, b.getI32Type(), t);
          Value w =
              tensor::ExtractOp::create(b, loc, chosen[1], ValueRange{t, s});
          return SmallVector<Value>{
              tensor::InsertOp::create(b, loc, token, a[0], pos),
              tensor::InsertOp::create(b, loc, w, a[1], pos),
              tensor::InsertOp::create(b, loc, addI32(at, 1), a[2], x)};
        });
    SmallVector<OpFoldResult> slotSizes = tb.sizes(logits);
    slotSizes.back() = b.getIndexAttr(topK);
    return {unflatten(sorted[0], slotSizes, 0),
            unflatten(sorted[1], slotSizes, 0), starts};
  }

  /// tfm.gather_rows: row i of the result is row tokens[i] of `input`.
  Value gatherRows(Value input, Value tokens) {
    return tb.rowsAt(tokens, flatten(input, 1));
  }

  /// tfm.grouped_linear: each expert's GEMM over the rows of its group.
  Value groupedLinear(GroupedLinearOp op) {
    Value x = flatten(op.getInput(), 1); // [pairs, in]
    Value starts = op.getStarts();
    ValueRange weights = op.getWeights(), biases = op.getBiases();
    int64_t out = cast<RankedTensorType>(weights[0].getType()).getDimSize(0);
    Value pairs = tensor::DimOp::create(b, loc, x, 0);
    SmallVector<OpFoldResult> resultSizes = tb.sizes(op.getInput());
    resultSizes.back() = b.getIndexAttr(out);
    Value tokens = op.getTokens();
    Value routingWeights, result;
    if (tokens) {
      resultSizes.erase(resultSizes.end() - 2);
      tokens = flatten(tokens, 0);
      routingWeights = flatten(op.getRoutingWeights(), 0);
      if (Value residual = op.getResidual()) {
        result = flatten(residual, 1);
      } else {
        Value n = arith::DivUIOp::create(
            b, loc, pairs,
            index(cast<RankedTensorType>(op.getInput().getType())
                      .getShape()
                      .drop_back()
                      .back()));
        result = tb.filled({n, b.getIndexAttr(out)}, 0.0);
      }
    } else {
      result = tb.empty({pairs, b.getIndexAttr(out)});
    }
    for (auto [e, w] : llvm::enumerate(weights)) {
      Value first =
          toIndex(tensor::ExtractOp::create(b, loc, starts, index(int64_t(e))));
      Value end = toIndex(
          tensor::ExtractOp::create(b, loc, starts, index(int64_t(e) + 1)));
      Value rows = arith::SubIOp::create(b, loc, end, first);
      Value group = tb.sliceDim(x, 0, first, rows);
      Value y = tb.linear(group, w, biases.empty() ? Value() : biases[e],
                          op.getBf16Inputs());
      if (std::optional<Activation> act = op.getActivation())
        y = tb.activation(y, *act);
      result = tokens ? scatter(y, first, end, tokens, routingWeights, result)
                      : insertRows(y, result, first);
    }
    return unflatten(result, resultSizes, 1);
  }

private:
  TensorBuilder &tb;
  OpBuilder &b;
  Location loc;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32Const(int32_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value toIndex(Value i32) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i32);
  }
  Value addIndex(Value v, int64_t c) {
    return arith::AddIOp::create(b, loc, v, index(c));
  }
  Value subIndex(Value v, int64_t c) {
    return arith::SubIOp::create(b, loc, v, index(c));
  }
  Value addI32(Value v, int32_t c) {
    return arith::AddIOp::create(b, loc, v, i32Const(c));
  }
  Value emptyOf(ArrayRef<OpFoldResult> sizes, Type element) {
    return tensor::EmptyOp::create(b, loc, sizes, element);
  }

  /// An scf.for from `lb` to `ub` carrying `inits`; `body(iv, iterArgs)`
  /// gives the values it yields.
  SmallVector<Value>
  loop(Value lb, Value ub, ValueRange inits,
       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto forOp = scf::ForOp::create(
        b, loc, lb, ub, index(1), inits,
        // `b` itself builds the body (scf.for's builder is the one given).
        [&](OpBuilder &, Location, Value iv, ValueRange args) {
          scf::YieldOp::create(b, loc, body(iv, args));
        });
    return SmallVector<Value>(forOp.getResults());
  }

  /// Every (token, slot) pair in token order, then slot order.
  SmallVector<Value>
  forEachPair(Value n, Value k, ValueRange inits,
              function_ref<SmallVector<Value>(Value, Value, ValueRange)> body) {
    return loop(index(0), n, inits, [&](Value t, ValueRange outer) {
      return loop(index(0), k, outer,
                  [&](Value s, ValueRange a) { return body(t, s, a); });
    });
  }

  Value expertOf(Value choice, Value token, Value slot) {
    return toIndex(
        tensor::ExtractOp::create(b, loc, choice, ValueRange{token, slot}));
  }

  /// Whether logit `va` of expert `ia` ranks above `vb` of expert `ib`:
  /// the larger number, on a tie the lower expert; a NaN below every
  /// number (and NaNs by expert).
  Value ranksAbove(Value va, Value ia, Value vb, Value ib) {
    auto isNaN = [&](Value v) {
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, v, v);
    };
    Value aNaN = isNaN(va), bNaN = isNaN(vb);
    Value lower =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ia, ib);
    Value greater =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, va, vb);
    Value tie = arith::AndIOp::create(
        b, loc,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, va, vb),
        lower);
    Value numbers = arith::OrIOp::create(
        b, loc, bNaN, arith::OrIOp::create(b, loc, greater, tie));
    Value nans = arith::AndIOp::create(b, loc, bNaN, lower);
    return arith::SelectOp::create(b, loc, aNaN, nans, numbers);
  }

  /// Token t's top-k experts into row t of `choice` and the softmax over
  /// their logits into row t of `weights`: the s-th choice is the expert
  /// ranked highest among those ranked below the (s-1)-th.
  SmallVector<Value> selectTopK(Value logits, Value t, Value experts,
                                int64_t topK, Value choice, Value weights) {
    Value e0 = index(0);
    Value prev = e0;
    for (int64_t s = 0; s < topK; ++s) {
      Value prevLogit = s == 0 ? Value()
                               : tensor::ExtractOp::create(b, loc, logits,
                                                           ValueRange{t, prev})
                                     .getResult();
      Value best = loop(e0, experts, {experts}, [&](Value e, ValueRange a) {
        Value none = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           a[0], experts);
        Value bestAt = arith::SelectOp::create(b, loc, none, e0, a[0]);
        Value v = tensor::ExtractOp::create(b, loc, logits, ValueRange{t, e});
        Value bv =
            tensor::ExtractOp::create(b, loc, logits, ValueRange{t, bestAt});
        Value below =
            s == 0
                ? Value(arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1))
                : ranksAbove(prevLogit, prev, v, e);
        Value better =
            arith::OrIOp::create(b, loc, none, ranksAbove(v, e, bv, bestAt));
        Value take = arith::AndIOp::create(b, loc, below, better);
        return SmallVector<Value>{
            arith::SelectOp::create(b, loc, take, e, a[0])};
      })[0];
      Value slot = index(s);
      choice = tensor::InsertOp::create(
          b, loc, arith::IndexCastOp::create(b, loc, b.getI32Type(), best),
          choice, ValueRange{t, slot});
      weights = tensor::InsertOp::create(
          b, loc,
          tensor::ExtractOp::create(b, loc, logits, ValueRange{t, best}),
          weights, ValueRange{t, slot});
      prev = best;
    }
    // The first choice holds the largest logit: every exponent is at most
    // 0.
    Value top = tensor::ExtractOp::create(b, loc, weights, ValueRange{t, e0});
    Value sum = tb.f32Const(0.0);
    for (int64_t s = 0; s < topK; ++s) {
      Value slot = index(s);
      Value v = tensor::ExtractOp::create(b, loc, weights, ValueRange{t, slot});
      Value ex =
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, v, top));
      sum = arith::AddFOp::create(b, loc, sum, ex);
      weights =
          tensor::InsertOp::create(b, loc, ex, weights, ValueRange{t, slot});
    }
    for (int64_t s = 0; s < topK; ++s) {
      Value slot = index(s);
      Value v = tensor::ExtractOp::create(b, loc, weights, ValueRange{t, slot});
      weights = tensor::InsertOp::create(b, loc,
                                         arith::DivFOp::create(b, loc, v, sum),
                                         weights, ValueRange{t, slot});
    }
    return {choice, weights};
  }

  /// `t` with its leading dimensions, all but the last `keep`, as one (a
  /// dimension of 1 when it has none).
  Value flatten(Value t, unsigned keep) {
    auto type = cast<RankedTensorType>(t.getType());
    int64_t rank = type.getRank(), lead = rank - keep;
    if (lead == 1)
      return t;
    if (lead == 0) {
      SmallVector<int64_t> shape{1};
      llvm::append_range(shape, type.getShape());
      SmallVector<OpFoldResult> sizes{b.getIndexAttr(1)};
      llvm::append_range(sizes, tb.sizes(t));
      return tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get(shape, type.getElementType()), t,
          oneRowGroups(rank), sizes);
    }
    SmallVector<ReassociationIndices> groups(1);
    for (int64_t i = 0; i < lead; ++i)
      groups[0].push_back(i);
    for (int64_t i = lead; i < rank; ++i)
      groups.push_back({i});
    return tensor::CollapseShapeOp::create(b, loc, t, groups);
  }

  /// The tensor of `sizes` whose leading dimensions (all but the last
  /// `keep`) are those of `flat`'s first one, row-major: a copy.
  Value unflatten(Value flat, ArrayRef<OpFoldResult> sizes, unsigned keep) {
    auto flatType = cast<RankedTensorType>(flat.getType());
    unsigned rank = sizes.size(), lead = rank - keep;
    if (lead == 1)
      return flat;
    if (lead == 0)
      return tensor::CollapseShapeOp::create(b, loc, flat, oneRowGroups(rank));
    SmallVector<Value> dims;
    for (OpFoldResult s : sizes)
      dims.push_back(getValueOrCreateConstantIndexOp(b, loc, s));
    Value init = emptyOf(sizes, flatType.getElementType());
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, ValueRange{},
               ValueRange{init},
               ArrayRef<AffineMap>{tb.map(rank, TensorBuilder::range(0, rank))},
               TensorBuilder::parallel(rank),
               [&](OpBuilder &nb, Location nl, ValueRange) {
                 Value row = linalg::IndexOp::create(nb, nl, 0);
                 for (unsigned i = 1; i < lead; ++i)
                   row = arith::AddIOp::create(
                       nb, nl, arith::MulIOp::create(nb, nl, row, dims[i]),
                       linalg::IndexOp::create(nb, nl, i));
                 SmallVector<Value> at{row};
                 for (unsigned i = lead; i < rank; ++i)
                   at.push_back(linalg::IndexOp::create(nb, nl, i));
                 linalg::YieldOp::create(
                     nb, nl,
                     ValueRange{tensor::ExtractOp::create(nb, nl, flat, at)});
               })
        .getResult(0);
  }

  /// [1, d0, d1, ...] <-> [d0, d1, ...]: the row dimension with the first.
  static SmallVector<ReassociationIndices> oneRowGroups(int64_t rank) {
    SmallVector<ReassociationIndices> groups{{0, 1}};
    for (int64_t i = 2; i <= rank; ++i)
      groups.push_back({i});
    return groups;
  }

  /// `rows` into `into` from row `first`.
  Value insertRows(Value rows, Value into, Value first) {
    SmallVector<OpFoldResult> sz = tb.sizes(rows);
    return tensor::InsertSliceOp::create(
        b, loc, rows, into, ArrayRef<OpFoldResult>{first, b.getIndexAttr(0)},
        sz, ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }

  /// Row p - first of `y`, times routing weight p, added to the row of
  /// its token in `into`, for the pairs p of [first, end) in order.
  Value scatter(Value y, Value first, Value end, Value tokens,
                Value routingWeights, Value into) {
    OpFoldResult one = b.getIndexAttr(1);
    OpFoldResult width = tb.sizes(y)[1];
    return loop(first, end, {into}, [&](Value p, ValueRange a) {
      Value token = toIndex(tensor::ExtractOp::create(b, loc, tokens, p));
      Value w = tensor::ExtractOp::create(b, loc, routingWeights, p);
      Value row = tensor::ExtractSliceOp::create(
          b, loc, a[0], ArrayRef<OpFoldResult>{token, b.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{one, width}, ArrayRef<OpFoldResult>{one, one});
      Value yRow = tensor::ExtractSliceOp::create(
          b, loc, y,
          ArrayRef<OpFoldResult>{
              arith::SubIOp::create(b, loc, p, first).getResult(),
              b.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{one, width}, ArrayRef<OpFoldResult>{one, one});
      Value sum = tb.elementwise(
          {row, yRow}, [&](OpBuilder &nb, Location nl, ValueRange v) -> Value {
            return arith::AddFOp::create(
                nb, nl, v[0], arith::MulFOp::create(nb, nl, w, v[1]));
          });
      return SmallVector<Value>{insertRows(sum, a[0], token)};
    })[0];
  }
};

} // namespace mlir::tfm

#endif // TFM_LOWERING_LLVM_MIXTUREOFEXPERTSBUILDER_H
