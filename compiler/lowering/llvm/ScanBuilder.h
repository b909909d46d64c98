//===- ScanBuilder.h - Mamba's causal conv and selective scan in linalg ---===//
//
// The two sequence ops of a Mamba mixer on tensors for the LLVM backend:
// tfm.causal_conv1d as one linalg.generic over the rows (each output row
// reads the K input rows up to it, those before the first from the conv
// window or zeros), and tfm.selective_scan as an scf.forall over the
// sequences and blocks of channels, each an scf.for over blocks of rows in
// which every vector of 16 channels goes through the block's rows (an
// scf.for whose body computes the 16 channels as vectors, the state h in
// registers, one vector per state). With a !tfm.mamba_state both read the
// window or state that the state buffer holds (zeros at offset 0, where it
// holds an earlier sequence's) and write back the one after their last row.
//
// Neither splits the rows: a channel's result is computed by the same
// operations whichever task or thread computes it, so results are
// bit-identical for every thread count.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LOWERING_LLVM_SCANBUILDER_H
#define TFM_LOWERING_LLVM_SCANBUILDER_H

#include "LinalgBuilder.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::tfm {

class ScanBuilder {
public:
  explicit ScanBuilder(TensorBuilder &tb) : tb(tb), b(tb.b), loc(tb.loc) {}

  /// tfm.causal_conv1d of `input` [L..., n, C] by `weight` [C, 1, K] with
  /// `bias` [C]; with `state` (the flat buffer of a !tfm.mamba_state of
  /// `type`; `input` then [batch, n, C]) the K - 1 rows before row 0 are the
  /// window it holds (zeros when `offset` is 0), and it then holds the last
  /// K - 1 rows of window and input.
  Value causalConv1d(Value input, Value weight, Value bias, Value offset,
                     Value state, MambaStateType type) {
    auto inType = cast<RankedTensorType>(input.getType());
    unsigned rank = inType.getRank(), rowDim = rank - 2, channelDim = rank - 1;
    int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(2);
    int64_t before = width - 1;
    // The input with the K - 1 rows before it: [L..., K - 1 + n, C].
    Value extended = input, window;
    if (before > 0 && state) {
      window = windowView(state, type, tb.sizes(input)[0]);
      extended = tb.concatDim(rowDim, startFrom(window, offset), input);
    } else if (before > 0) {
      SmallVector<OpFoldResult> low(rank, b.getIndexAttr(0));
      SmallVector<OpFoldResult> high(rank, b.getIndexAttr(0));
      low[rowDim] = b.getIndexAttr(before);
      SmallVector<int64_t> shape(inType.getShape());
      shape[rowDim] = ShapedType::kDynamic;
      extended =
          tensor::PadOp::create(b, loc, RankedTensorType::get(shape, tb.f32()),
                                input, low, high, tb.f32Const(0.0));
    }
    // out[.., t, c] = SiLU(bias[c] + sum_k weight[c, 0, k] ext[.., t + k, c]):
    // each of the K rows and the K taps is an input of its own, so every
    // loop is parallel (tfm-parallelize-rows splits the rows into blocks)
    // and the channels, innermost, are contiguous. Row t + K - 1 of the
    // extended input is row t of the input, which comes first: linalg
    // takes each loop's size from the first operand indexed by the bare
    // loop (the extended input has K - 1 rows more).
    SmallVector<Value> inputs = {input};
    SmallVector<AffineMap> maps = {tb.map(rank, TensorBuilder::range(0, rank))};
    AffineExpr row = b.getAffineDimExpr(rowDim),
               channel = b.getAffineDimExpr(channelDim);
    for (int64_t k = 0; k < before; ++k) {
      SmallVector<AffineExpr> exprs;
      for (unsigned d = 0; d < rank; ++d)
        exprs.push_back(b.getAffineDimExpr(d));
      exprs[rowDim] = row + k;
      inputs.push_back(extended);
      maps.push_back(AffineMap::get(rank, 0, exprs, b.getContext()));
    }
    for (int64_t k = 0; k < width; ++k) {
      inputs.push_back(weight);
      maps.push_back(AffineMap::get(
          rank, 0,
          {channel, b.getAffineConstantExpr(0), b.getAffineConstantExpr(k)},
          b.getContext()));
    }
    inputs.push_back(bias);
    maps.push_back(tb.map(rank, {channelDim}));
    maps.push_back(tb.map(rank, TensorBuilder::range(0, rank)));
    Value out = tb.generic(
        inputs, tb.empty(tb.sizes(input)), maps, TensorBuilder::parallel(rank),
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          // a: the input row, the K - 1 rows before it (oldest first), the
          // K taps, the bias.
          Value acc = a[2 * width];
          for (int64_t k = 0; k < width; ++k) {
            Value x = k < before ? a[1 + k] : a[0];
            acc = math::FmaOp::create(nb, nl, a[width + k], x, acc);
          }
          return silu(nb, nl, acc);
        });
    if (window) {
      // The window after the last row: extended rows [n, n + K - 1).
      SmallVector<OpFoldResult> sizes = tb.sizes(extended);
      sizes[rowDim] = b.getIndexAttr(before);
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
      offsets[rowDim] = tb.sizes(input)[rowDim];
      SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
      write(tensor::ExtractSliceOp::create(b, loc, extended, offsets, sizes,
                                           strides),
            window);
    }
    return out;
  }

  /// tfm.selective_scan: `u`, `delta` and `z` [L..., n, C], `aLog` [C, N],
  /// `bm` and `cm` [L..., n, N], `d` [C]; with `state` (the flat buffer of a
  /// !tfm.mamba_state of `type`; `u` then [batch, n, C]) h starts from the
  /// state it holds (zeros when `offset` is 0), and it then holds h after
  /// the last row.
  Value selectiveScan(Value u, Value delta, Value aLog, Value bm, Value cm,
                      Value d, Value z, Value offset, Value state,
                      MambaStateType type) {
    auto uType = cast<RankedTensorType>(u.getType());
    unsigned rank = uType.getRank(), rowDim = rank - 2;
    int64_t channels = uType.getShape().back();
    int64_t states = cast<RankedTensorType>(aLog.getType()).getDimSize(1);
    SmallVector<OpFoldResult> uSizes = tb.sizes(u);
    SmallVector<OpFoldResult> lead(uSizes.begin(), uSizes.begin() + rowDim);
    Value rows = getValueOrCreateConstantIndexOp(b, loc, uSizes[rowDim]);
    int64_t tasks = llvm::divideCeil(channels, kChannelsPerTask);
    // The result, and h ([L..., N, C]): between blocks of rows each vector
    // of channels keeps its h there, and it ends as h after the last row
    // (with a state, written back after the loop).
    SmallVector<OpFoldResult> hSizes = lead;
    hSizes.append({b.getIndexAttr(states), b.getIndexAttr(channels)});
    SmallVector<Value> outputs = {tb.empty(uSizes), tb.empty(hSizes)};
    // With a state: h at the start (read only where offset != 0).
    Value start, first, stateView;
    if (state) {
      stateView = scanView(state, type, uSizes[0]);
      auto viewType = cast<MemRefType>(stateView.getType());
      auto read = bufferization::ToTensorOp::create(
          b, loc, RankedTensorType::get(viewType.getShape(), tb.f32()),
          stateView);
      read.setRestrict(true);
      start = read;
      first = isFirst(offset);
    }
    SmallVector<OpFoldResult> bounds = lead;
    bounds.push_back(b.getIndexAttr(tasks));
    // One task per sequence and block of kChannelsPerTask channels: the
    // blocks write disjoint parts of the result and of h, so the tasks run
    // on the thread pool (tfm-outline-parallel-loops).
    auto loop = scf::ForallOp::create(
        b, loc, bounds, outputs, /*mapping=*/std::nullopt,
        [&](OpBuilder &nb, Location, ValueRange args) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> seq(args.begin(), args.begin() + rowDim);
          Value c0 = arith::MulIOp::create(b, loc, args[rowDim],
                                           index(kChannelsPerTask));
          Value count = arith::MinSIOp::create(
              b, loc, index(kChannelsPerTask),
              arith::SubIOp::create(b, loc, index(channels), c0));
          // The task's rows of the result, [1..., n, count], and its h,
          // [1..., N, count].
          SmallVector<OpFoldResult> offsets(seq.begin(), seq.end());
          offsets.append({b.getIndexAttr(0), c0});
          SmallVector<OpFoldResult> outSizes(rowDim, b.getIndexAttr(1));
          outSizes.append({rows, count});
          SmallVector<OpFoldResult> hBlockSizes(rowDim, b.getIndexAttr(1));
          hBlockSizes.append({b.getIndexAttr(states), count});
          SmallVector<OpFoldResult> ones(rank, b.getIndexAttr(1));
          Value outBlock = tensor::ExtractSliceOp::create(
              b, loc, args[rowDim + 1], offsets, outSizes, ones);
          Value hBlock = tensor::ExtractSliceOp::create(
              b, loc, args[rowDim + 2], offsets, hBlockSizes, ones);
          ScanInputs in{u, delta, z, bm, cm, seq, states};
          // h before the first row: the state's (zeros at offset 0), or
          // zeros.
          hBlock = forEachVector(
              c0, count, {hBlock},
              [&](Value c, const Lanes &lanes, ValueRange h) {
                Value block = h[0];
                for (int64_t s = 0; s < states; ++s) {
                  Value v = zeros();
                  if (state)
                    v = arith::SelectOp::create(
                        b, loc, first, zeros(),
                        read(start, {seq[0], index(s), lanes.channel}, lanes));
                  block = writeLanes(v, block, hIndex(in, s, c), lanes);
                }
                return SmallVector<Value>{block};
              })[0];
          // Blocks of kRowsPerBlock rows, each vector of channels through
          // all of a block's rows with h in registers: a block's rows are
          // read from cache (and their pages from the TLB) by all the
          // task's vectors.
          Value rowStep = index(kRowsPerBlock);
          auto rowBlocks = scf::ForOp::create(
              b, loc, index(0), rows, rowStep, ValueRange{outBlock, hBlock},
              [&](OpBuilder &rb, Location, Value r0, ValueRange carried) {
                OpBuilder::InsertionGuard rowGuard(b);
                b.setInsertionPoint(rb.getInsertionBlock(),
                                    rb.getInsertionPoint());
                Value r1 = arith::MinSIOp::create(
                    b, loc, rows, arith::AddIOp::create(b, loc, r0, rowStep));
                SmallVector<Value> next = forEachVector(
                    c0, count, carried,
                    [&](Value c, const Lanes &lanes, ValueRange blocks) {
                      SmallVector<Value> h;
                      for (int64_t s = 0; s < states; ++s)
                        h.push_back(read(blocks[1], hIndex(in, s, c), lanes));
                      SmallVector<Value> results =
                          scanRows(in, lanes, readA(aLog, states, lanes),
                                   read(d, {lanes.channel}, lanes), h,
                                   blocks[0], c, r0, r1);
                      Value block = blocks[1];
                      for (int64_t s = 0; s < states; ++s)
                        block = writeLanes(results[1 + s], block,
                                           hIndex(in, s, c), lanes);
                      return SmallVector<Value>{results[0], block};
                    });
                scf::YieldOp::create(b, loc, next);
              });
          auto inParallel = scf::InParallelOp::create(b, loc);
          OpBuilder::InsertionGuard terminatorGuard(b);
          b.setInsertionPointToStart(inParallel.getBody());
          tensor::ParallelInsertSliceOp::create(b, loc, rowBlocks.getResult(0),
                                                args[rowDim + 1], offsets,
                                                outSizes, ones);
          tensor::ParallelInsertSliceOp::create(b, loc, rowBlocks.getResult(1),
                                                args[rowDim + 2], offsets,
                                                hBlockSizes, ones);
        });
    if (state)
      write(loop.getResult(1), stateView);
    return loop.getResult(0);
  }

private:
  /// Channels a task of the scan takes (as the Highway backend's tasks):
  /// enough work to hide a task's dispatch in a decode step, small enough
  /// that a layer's channels spread over the threads.
  static constexpr int64_t kChannelsPerTask = 64;
  /// Channels a vector of the scan holds: one AVX-512 register (two AVX2
  /// ones).
  static constexpr int64_t kLanes = 16;
  /// Rows a vector of channels goes through before the next vector: a
  /// block's rows of a task's channels (64 x 4 tensors x 256 bytes, on as
  /// many pages) stay in L2 and the TLB from vector to vector, as the
  /// Highway kernel visits each row once for its whole block of channels.
  /// (No change measured on an AVX-512 Xeon at 2048 rows, 1536 channels:
  /// this lowering's scan is bound by its arithmetic there.)
  static constexpr int64_t kRowsPerBlock = 64;

  /// The channels a vector holds: from `channel` on, the lanes `mask` sets.
  struct Lanes {
    Value channel, mask;
  };

  /// The rows a scan task reads: [L..., n, C] and [L..., n, N] tensors at
  /// sequence `seq` (the leading indices).
  struct ScanInputs {
    Value u, delta, z, bm, cm;
    SmallVector<Value> seq;
    int64_t states;
  };

  /// Where state s of the vector at column `column` of a task's h block
  /// ([1..., N, count]) is.
  SmallVector<Value> hIndex(const ScanInputs &in, int64_t s, Value column) {
    SmallVector<Value> at(in.seq.size(), index(0));
    at.append({index(s), column});
    return at;
  }

  /// An scf.for over the vectors of a task's `count` channels from channel
  /// `c0` (its columns c, step kLanes), carrying `init`; `body` gets the
  /// column, the vector's channels and what is carried, and returns what is
  /// carried on.
  SmallVector<Value> forEachVector(
      Value c0, Value count, ValueRange init,
      function_ref<SmallVector<Value>(Value, const Lanes &, ValueRange)> body) {
    Value step = index(kLanes);
    auto loop = scf::ForOp::create(
        b, loc, index(0), count, step, init,
        [&](OpBuilder &vb, Location, Value c, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(vb.getInsertionBlock(), vb.getInsertionPoint());
          Lanes lanes;
          lanes.channel = arith::AddIOp::create(b, loc, c0, c);
          lanes.mask = maskOf(arith::MinSIOp::create(
              b, loc, step, arith::SubIOp::create(b, loc, count, c)));
          scf::YieldOp::create(b, loc, body(c, lanes, carried));
        });
    return SmallVector<Value>(loop.getResults());
  }

  /// The scan of one vector of channels over rows [begin, end), from h
  /// (one vector per state), its A (-exp(a_log), one vector per state) and
  /// D: writes the rows into `outBlock` (the task's [1..., n, count] block,
  /// at column `column`); results: the block, then h after the last row.
  SmallVector<Value> scanRows(const ScanInputs &in, const Lanes &lanes,
                              ArrayRef<Value> a, Value skip, ArrayRef<Value> h,
                              Value outBlock, Value column, Value begin,
                              Value end) {
    SmallVector<Value> init = {outBlock};
    llvm::append_range(init, h);
    unsigned rank = in.seq.size() + 2;
    auto rowLoop = scf::ForOp::create(
        b, loc, begin, end, index(1), init,
        [&](OpBuilder &rb, Location, Value t, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(rb.getInsertionBlock(), rb.getInsertionPoint());
          SmallVector<Value> at = in.seq;
          at.append({t, lanes.channel});
          Value ut = read(in.u, at, lanes);
          Value dt = softplus(read(in.delta, at, lanes));
          Value dtu = arith::MulFOp::create(b, loc, dt, ut);
          Value y = arith::MulFOp::create(b, loc, skip, ut);
          SmallVector<Value> next = {Value()};
          for (int64_t s = 0; s < in.states; ++s) {
            SmallVector<Value> bAt = in.seq;
            bAt.append({t, index(s)});
            Value bs = broadcast(tensor::ExtractOp::create(b, loc, in.bm, bAt));
            Value cs = broadcast(tensor::ExtractOp::create(b, loc, in.cm, bAt));
            // h = exp(dt A) h + dt u b[t];  y += h c[t]
            Value decay = math::ExpOp::create(
                b, loc, arith::MulFOp::create(b, loc, dt, a[s]));
            Value hs =
                math::FmaOp::create(b, loc, decay, carried[1 + s],
                                    arith::MulFOp::create(b, loc, dtu, bs));
            y = math::FmaOp::create(b, loc, hs, cs, y);
            next.push_back(hs);
          }
          Value gated = arith::MulFOp::create(
              b, loc, y, silu(b, loc, read(in.z, at, lanes)));
          SmallVector<Value> outAt(rank - 2, index(0));
          outAt.append({t, column});
          next[0] = writeLanes(gated, carried[0], outAt, lanes);
          scf::YieldOp::create(b, loc, next);
        });
    return SmallVector<Value>(rowLoop.getResults());
  }

  /// A = -exp(a_log) of the lanes' channels, one vector per state (column
  /// s of a_log [C, N], read across its rows).
  SmallVector<Value> readA(Value aLog, int64_t states, const Lanes &lanes) {
    AffineMap column =
        AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, b.getContext());
    SmallVector<Value> a;
    for (int64_t s = 0; s < states; ++s) {
      Value v = vector::TransferReadOp::create(
          b, loc, vectorType(), aLog, ValueRange{lanes.channel, index(s)},
          AffineMapAttr::get(column), tb.f32Const(0.0), lanes.mask,
          b.getBoolArrayAttr({true}));
      a.push_back(
          arith::NegFOp::create(b, loc, math::ExpOp::create(b, loc, v)));
    }
    return a;
  }

  /// The lanes' channels of `t` at `indices` (the last one the first
  /// channel's), 0 in the lanes past the channels.
  Value read(Value t, ValueRange indices, const Lanes &lanes) {
    auto type = cast<ShapedType>(t.getType());
    return vector::TransferReadOp::create(
        b, loc, vectorType(), t, indices,
        AffineMapAttr::get(
            AffineMap::getMinorIdentityMap(type.getRank(), 1, b.getContext())),
        tb.f32Const(0.0), lanes.mask, b.getBoolArrayAttr({true}));
  }

  /// `v`'s lanes written into `t` at `indices`.
  Value writeLanes(Value v, Value t, ValueRange indices, const Lanes &lanes) {
    auto type = cast<ShapedType>(t.getType());
    return vector::TransferWriteOp::create(
               b, loc, v, t, indices,
               AffineMapAttr::get(AffineMap::getMinorIdentityMap(
                   type.getRank(), 1, b.getContext())),
               lanes.mask, b.getBoolArrayAttr({true}))
        .getResult();
  }

  /// The first `lanes` lanes.
  Value maskOf(Value lanes) {
    SmallVector<int64_t> iota;
    for (int64_t l = 0; l < kLanes; ++l)
      iota.push_back(l);
    auto indexVector = VectorType::get({kLanes}, b.getIndexType());
    Value lane = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(indexVector, ArrayRef<int64_t>(iota)));
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::slt, lane,
        vector::BroadcastOp::create(b, loc, indexVector, lanes));
  }

  /// PyTorch's softplus: log(1 + e^x), x itself above 20.
  Value softplus(Value x) {
    Value limit = constantLike(b, loc, x.getType(), 20.0);
    Value soft = math::Log1pOp::create(
        b, loc,
        math::ExpOp::create(b, loc,
                            arith::MinimumFOp::create(b, loc, x, limit)));
    Value above =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, limit);
    return arith::SelectOp::create(b, loc, above, x, soft);
  }

  /// x sigmoid(x) = x / (1 + e^(-x)), as the backend's SiLU activation.
  static Value silu(OpBuilder &nb, Location nl, Value x) {
    Value e = math::ExpOp::create(nb, nl, arith::NegFOp::create(nb, nl, x));
    return arith::DivFOp::create(
        nb, nl, x,
        arith::AddFOp::create(nb, nl, e,
                              constantLike(nb, nl, x.getType(), 1.0)));
  }

  /// `v` as an f32 constant of `type` (a scalar, or a vector splat).
  static Value constantLike(OpBuilder &nb, Location nl, Type type, double v) {
    if (auto vector = dyn_cast<VectorType>(type))
      return arith::ConstantOp::create(
          nb, nl, DenseElementsAttr::get(vector, nb.getF32FloatAttr(v)));
    return arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(v));
  }

  VectorType vectorType() { return VectorType::get({kLanes}, tb.f32()); }
  Value zeros() { return constantLike(b, loc, vectorType(), 0.0); }
  Value broadcast(Value scalar) {
    return vector::BroadcastOp::create(b, loc, vectorType(), scalar);
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// offset == 0: the state buffer then holds an earlier sequence's.
  Value isFirst(Value offset) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, offset,
                                 index(0));
  }

  /// `view` read (restrict), or zeros at offset 0.
  Value startFrom(Value view, Value offset) {
    auto viewType = cast<MemRefType>(view.getType());
    auto read = bufferization::ToTensorOp::create(
        b, loc, RankedTensorType::get(viewType.getShape(), tb.f32()), view);
    read.setRestrict(true);
    Value zero = tb.filled(tb.sizes(read), 0.0);
    return arith::SelectOp::create(b, loc, isFirst(offset), zero, read)
        .getResult();
  }

  /// `t` written into `view` (the state buffer, kept for the next call).
  void write(Value t, Value view) {
    bufferization::MaterializeInDestinationOp::create(b, loc, TypeRange{}, t,
                                                      view)
        .setWritable(true);
  }

  /// The conv windows of the first `batch` sequences, [batch, K - 1, C]
  /// (oldest row first), in the layout of `type`.
  Value windowView(Value state, MambaStateType type, OpFoldResult batch) {
    int64_t rows = type.getConvWidth() - 1, channels = type.getChannels();
    return tb.bufferView(state, 0, {type.getMaxBatch(), rows, channels},
                         {rows * channels, channels, 1}, batch);
  }

  /// The scan states of the first `batch` sequences, [batch, N, C].
  Value scanView(Value state, MambaStateType type, OpFoldResult batch) {
    int64_t states = type.getStateSize(), channels = type.getChannels();
    return tb.bufferView(state, type.getScanOffset(),
                         {type.getMaxBatch(), states, channels},
                         {states * channels, channels, 1}, batch);
  }

  TensorBuilder &tb;
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::tfm

#endif // TFM_LOWERING_LLVM_SCANBUILDER_H
