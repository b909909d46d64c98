//===- AttentionEmitter.cpp - heads, caches and attention -> Highway C++ --===//
//
// The attention part of FunctionEmitter, for the ops tfm-decompose-attention
// makes: per-head views of stacked rows (tfm.split_heads), rotary
// positions, the key/value cache's appends and reads (in the layout
// !tfm.kv_cache defines), and the attention core (a group of query rows
// per task, online softmax over blocks of keys, the score matrix never
// stored), which writes its heads merged for tfm.merge_heads.
//
//===----------------------------------------------------------------------===//

#include "FunctionEmitter.h"
#include "tfm/Lowering/KeySpanCpp.h"
#include "tfm/Transforms/MemoryPlan.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace tfm::hwy {

namespace {

/// The mask's rules, for the attention core's comment.
std::string maskComment(MaskAttr mask) {
  std::string text;
  if (!mask)
    return text;
  if (mask.getCausal())
    text += ", causal";
  std::string unit = mask.getBlock() ? " blocks" : "";
  if (std::optional<int64_t> block = mask.getBlock())
    text += ", blocks of " + std::to_string(*block);
  if (std::optional<int64_t> window = mask.getWindow())
    text += ", window " + std::to_string(*window) + unit;
  if (std::optional<int64_t> global = mask.getGlobalTokens())
    text += ", " + std::to_string(*global) + " global" +
            (unit.empty() ? " tokens" : unit);
  if (std::optional<int64_t> random = mask.getRandomBlocks())
    text += ", " + std::to_string(*random) + " random blocks";
  return text;
}

} // namespace

std::string FunctionEmitter::HeadView::at(StringRef row) const {
  std::string rowTerm = row.str();
  // A row given as a sum ("r0 + r") is scaled whole.
  if (rowStride != 1)
    rowTerm = (row.contains(' ') ? "(" + rowTerm + ")" : rowTerm) + " * " +
              num(rowStride);
  return llvm::formatv("{0} + b * {1} + {2} * {3} + {4}", ptr, batchStride,
                       head, headStride, rowTerm)
      .str();
}

//===----------------------------------------------------------------------===//
// Views: rows of stacked weights, heads of stacked rows
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitSliceRows(SliceRowsOp op) {
  // Rows of a weight or bias: where they are. A GEMM reads a sliced weight
  // from the stacked weight's packed panels (emitLinear).
  Buffer in = buffers[op.getInput()];
  RankedTensorType type = op.getType();
  int64_t rowFloats = 1;
  for (int64_t d : type.getShape().drop_front())
    rowFloats *= d;
  Dims dims;
  for (int64_t d : type.getShape())
    dims.push_back(staticDim(d));
  buffers[op.getResult()] = {in.ptr + " + " + num(op.getOffset() * rowFloats),
                             dims};
  return success();
}

LogicalResult FunctionEmitter::emitSplitHeads(SplitHeadsOp op) {
  Buffer x = buffers[op.getInput()];
  if (x.dims.size() != 3)
    return op.emitError("the Highway backend splits heads of [batch, seq, "
                        "features] rows");
  int64_t width = op.getInput().getType().getDimSize(2);
  int64_t d = width / op.getPartCount();
  int64_t count = op.getNumHeads(), dk = d / count;
  std::string ptr = x.ptr;
  if (op.getPartIndex() != 0)
    ptr += " + " + num(op.getPartIndex() * d);
  heads[op.getResult()] = {
      {ptr, x.dims[1].expr + " * " + num(width), num(dk), width},
      x.dims[0],
      x.dims[1],
      count,
      dk};
  return success();
}

LogicalResult FunctionEmitter::emitMergeHeads(MergeHeadsOp op) {
  // tfm.attention stores its heads merged already.
  auto it = buffers.find(op.getInput());
  Operation *core = op.getInput().getDefiningOp();
  if (it == buffers.end() ||
      !isa_and_present<AttentionOp, LinearAttentionOp>(core))
    return op.emitError("the Highway backend merges the heads of a "
                        "tfm.attention or tfm.linear_attention result only");
  // Copied out first: inserting the result may grow the map and move the
  // entry `it` points to.
  Buffer merged = it->second;
  buffers[op.getResult()] = std::move(merged);
  return success();
}

//===----------------------------------------------------------------------===//
// Rotary positions
//===----------------------------------------------------------------------===//

void FunctionEmitter::emitRotaryRows(const HeadView &view, const Heads &shape,
                                     RopeStyle style, float base,
                                     const std::string &offset) {
  int64_t dk = shape.dk, half = dk / 2;
  bool interleaved = style == RopeStyle::Interleaved;
  os << "{ // rotary positions (" << stringifyRopeStyle(style) << ", base "
     << floatLiteral(base) << ")\n";
  os.indent();
  os << "const int64_t seq = " << shape.seq.expr << ";\n";
  std::string cosT = scratch(FrameBuffer::RotaryCos, "seq * " + num(half),
                             shape.seq.max * half);
  std::string sinT = scratch(FrameBuffer::RotarySin, "seq * " + num(half),
                             shape.seq.max * half);
  // Angles in double: p * base^(-2i/dk).
  os << "for (int64_t s = 0; s < seq; ++s)\n";
  os << "  for (int64_t i = 0; i < " << half << "; ++i) {\n";
  os << "    const double angle = double(" << offset
     << " + s) * std::pow(double(" << floatLiteral(base)
     << "), -2.0 * double(i) / " << dk << ".0);\n";
  os << "    " << cosT << "[s * " << half
     << " + i] = float(std::cos(angle));\n";
  os << "    " << sinT << "[s * " << half
     << " + i] = float(std::sin(angle));\n";
  os << "  }\n";
  os << "pool.parallelFor(" << shape.batch.expr << " * seq, [&](int64_t t) {\n";
  os.indent();
  os << "const int64_t b = t / seq, s = t % seq;\n";
  os << "for (int64_t h = 0; h < " << shape.heads << "; ++h) {\n";
  os.indent();
  os << "float *x = " << view.at("s") << ";\n";
  os << "for (int64_t i = 0; i < " << half << "; ++i) {\n";
  os.indent();
  os << "const float c = " << cosT << "[s * " << half << " + i], sn = " << sinT
     << "[s * " << half << " + i];\n";
  std::string i1 = interleaved ? "2 * i" : "i";
  std::string i2 = interleaved ? "2 * i + 1" : "i + " + num(half);
  os << "const float x1 = x[" << i1 << "], x2 = x[" << i2 << "];\n";
  os << "x[" << i1 << "] = x1 * c - x2 * sn;\n";
  os << "x[" << i2 << "] = x1 * sn + x2 * c;\n";
  os.unindent();
  os << "}\n";
  os.unindent();
  os << "}\n";
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
}

FailureOr<FunctionEmitter::Heads>
FunctionEmitter::headRows(Operation *op, Value value, StringRef verb) {
  auto it = heads.find(value);
  if (it == heads.end() || it->second.view.featureStride != 1)
    return op->emitError("the Highway backend ")
           << verb << " per-head rows of tfm.split_heads or tfm.rotary";
  return it->second;
}

LogicalResult FunctionEmitter::emitRotary(RotaryOp op) {
  FailureOr<Heads> rows = headRows(op, op.getInput(), "rotates");
  if (failed(rows))
    return failure();
  Heads in = *rows;
  std::string offset =
      op.getOffset() ? scalars[op.getOffset()] : std::string("0");
  float base = op.getBase().convertToFloat();
  Heads out = in;
  // tfm-plan-memory's choice: rotate the rows where they are, or a copy.
  bool inPlace = isRotatedInPlace(op);
  if (!inPlace) {
    int64_t d = in.heads * in.dk;
    Buffer copy = allocate(op.getResult(), {in.batch, staticDim(in.heads),
                                            in.seq, staticDim(in.dk)});
    out.view = {copy.ptr, in.seq.expr + " * " + num(d),
                in.seq.expr + " * " + num(in.dk), in.dk};
    os << "pool.parallelFor(" << in.batch.expr << " * " << in.heads
       << ", [&](int64_t t) { // rotated in a copy\n";
    os.indent();
    os << "const int64_t b = t / " << in.heads << ", h = t % " << in.heads
       << ";\n";
    os << "for (int64_t s = 0; s < " << in.seq.expr << "; ++s)\n";
    os << "  std::memcpy(" << out.view.at("s") << ", " << in.view.at("s")
       << ", sizeof(float) * " << in.dk << ");\n";
    os.unindent();
    os << "});\n";
  }
  emitRotaryRows(out.view, out, op.getStyle(), base, offset);
  heads[op.getResult()] = out;
  remark(op, inPlace ? "rotary positions applied in place, in the rows the "
                       "GEMM wrote"
                     : "rotary positions applied to a copy of the rows "
                       "(other ops read them unrotated)");
  return success();
}

//===----------------------------------------------------------------------===//
// Linformer's projection along the sequence
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitSequenceProjection(SequenceProjectionOp op) {
  FailureOr<Heads> input = headRows(op, op.getInput(), "projects");
  if (failed(input))
    return failure();
  const Heads in = *input;
  RankedTensorType e = op.getProjection().getType();
  int64_t rows = e.getDimSize(0), columns = e.getDimSize(1);
  int64_t dk = in.dk, count = in.heads;
  // Blocks of output rows a task accumulates: each input row loaded once
  // per block serves all of them, which stay in L1 (32 x dk floats).
  constexpr int64_t kRowBlock = 32;
  int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  Buffer out = allocate(op.getResult(), {in.batch, staticDim(count),
                                         staticDim(rows), staticDim(dk)});
  Heads projected{{out.ptr, num(count * rows * dk), num(rows * dk), dk},
                  in.batch,
                  staticDim(rows),
                  count,
                  dk};
  std::string ePtr = buffers[op.getProjection()].ptr;
  os << "{ // sequence projection (linformer): " << rows
     << " rows of E_n x per head, n of " << columns << " positions\n";
  os.indent();
  os << "const int64_t n = " << in.seq.expr << ";\n";
  os << "pool.parallelFor(" << in.batch.expr << " * " << count * blocks
     << ", [&](int64_t t) {\n";
  os.indent();
  os << "const int64_t b = t / " << count * blocks << ", h = (t / " << blocks
     << ") % " << count << ", r0 = (t % " << blocks << ") * " << kRowBlock
     << ";\n";
  os << "const int64_t rows = std::min<int64_t>(" << kRowBlock << ", " << rows
     << " - r0);\n";
  os << "for (int64_t r = 0; r < rows; ++r)\n";
  os << "  k::Zero(" << projected.view.at("r0 + r") << ", " << dk << ");\n";
  os << "for (int64_t j = 0; j < n; ++j) {\n";
  os.indent();
  os << "const float *x = " << in.view.at("j") << ";\n";
  os << "for (int64_t r = 0; r < rows; ++r)\n";
  os << "  k::Axpy(" << ePtr << "[(r0 + r) * " << columns << " + j], x, "
     << projected.view.at("r0 + r") << ", " << dk << ");\n";
  os.unindent();
  os << "}\n";
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
  heads[op.getResult()] = projected;
  remark(op, "linformer: each head's " + std::to_string(rows) +
                 " projected rows accumulated in blocks of " +
                 std::to_string(kRowBlock) +
                 ", each input row read once a block; attention then "
                 "scores " +
                 std::to_string(rows) + " keys a query, not the sequence");
  return success();
}

//===----------------------------------------------------------------------===//
// Key/value caches
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitCacheAppend(CacheAppendOp op) {
  auto keys = heads.find(op.getKeys()), values = heads.find(op.getValues());
  if (keys == heads.end() || values == heads.end() ||
      keys->second.view.featureStride != 1 ||
      values->second.view.featureStride != 1)
    return op.emitError("the Highway backend appends per-head rows");
  const Heads &k = keys->second, &v = values->second;
  KVCacheType type = op.getCache().getType();
  std::array<int64_t, 4> ks = type.getKeyStrides(), vs = type.getValueStrides();
  std::string base = buffers[op.getCache()].ptr;
  std::string position = scalars[op.getPosition()];
  os << "{ // append the new keys (transposed) and values to the cache\n";
  os.indent();
  os << "const int64_t seq = " << k.seq.expr << ", first = " << position
     << ";\n";
  os << "pool.parallelFor(" << k.batch.expr << " * " << k.heads
     << ", [&](int64_t t) {\n";
  os.indent();
  os << "const int64_t b = t / " << k.heads << ", h = t % " << k.heads << ";\n";
  os << "float *keys = " << base << " + b * " << ks[0] << " + h * " << ks[1]
     << ";\n";
  os << "float *vals = " << base << " + " << type.getValuesOffset() << " + b * "
     << vs[0] << " + h * " << vs[1] << ";\n";
  if (type.isWindowed()) {
    // A ring: position j < G in slot j, a later one in slot G + (j - G) mod
    // W; a position this call replaces (W or more before its last) is not
    // written.
    int64_t globals = type.getGlobals(), window = *type.getWindow();
    os << "for (int64_t s = 0; s < seq; ++s) {\n";
    os.indent();
    os << "const int64_t j = first + s;\n";
    os << "if (j >= " << globals << " && j + " << window
       << " < first + seq) continue;\n";
    if (window > 0)
      os << "const int64_t slot = j < " << globals << " ? j : " << globals
         << " + (j - " << globals << ") % " << window << ";\n";
    else
      os << "const int64_t slot = j;\n";
    os << "k::TransposeRows(" << k.view.at("s") << ", " << k.view.rowStride
       << ", 1, " << k.dk << ", keys + slot * " << ks[2] << ", " << ks[3]
       << ");\n";
    os << "std::memcpy(vals + slot * " << vs[2] << ", " << v.view.at("s")
       << ", sizeof(float) * " << v.dk << ");\n";
    os.unindent();
    os << "}\n";
  } else {
    os << "k::TransposeRows(" << k.view.at("0") << ", " << k.view.rowStride
       << ", seq, " << k.dk << ", keys + first * " << ks[2] << ", " << ks[3]
       << ");\n";
    os << "for (int64_t s = 0; s < seq; ++s)\n";
    os << "  std::memcpy(vals + (first + s) * " << vs[2] << ", "
       << v.view.at("s") << ", sizeof(float) * " << v.dk << ");\n";
  }
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
  scalars[op.getLength()] = "(" + position + " + " + k.seq.expr + ")";
  return success();
}

LogicalResult FunctionEmitter::emitCacheWindow(CacheWindowOp op) {
  auto keys = heads.find(op.getKeys()), values = heads.find(op.getValues());
  if (keys == heads.end() || values == heads.end() ||
      keys->second.view.featureStride != 1 ||
      values->second.view.featureStride != 1)
    return op.emitError("the Highway backend gathers per-head rows");
  const Heads &k = keys->second, &v = values->second;
  KVCacheType type = op.getCache().getType();
  std::array<int64_t, 4> ks = type.getKeyStrides(), vs = type.getValueStrides();
  int64_t count = k.heads, dk = k.dk, globals = type.getGlobals(),
          window = *type.getWindow(), slots = type.getSlots();
  // At most G + W + n, and every position up to the last new one.
  int64_t maxKeys =
      std::min<int64_t>(type.getMaxSeq(), globals + window + k.seq.max);
  std::string offset = fresh("offset");
  Dim length{"(" + offset + " + " + k.seq.expr + ")", maxKeys, false};
  // The keys transposed, as a cache holds them (the attention core reads
  // them so, with no copy of its own), the values as rows.
  Buffer keysOut = allocate(op.getWindowKeys(),
                            {k.batch, staticDim(count), staticDim(dk), length});
  Buffer valuesOut = allocate(
      op.getWindowValues(), {k.batch, staticDim(count), length, staticDim(dk)});
  std::string base = buffers[op.getCache()].ptr;
  os << "// the keys and values a window of " << window << " with " << globals
     << " global tokens attends: the globals and the window the cache keeps, "
        "then the new rows\n";
  os << "int64_t " << offset << ";\n";
  os << "{\n";
  os.indent();
  os << "const int64_t seq = " << k.seq.expr
     << ", first = " << scalars[op.getPosition()] << ";\n";
  os << "const int64_t globals = std::min<int64_t>(" << globals
     << ", first);\n";
  os << "const int64_t kept = first > " << globals << " ? std::min<int64_t>("
     << window << ", first - " << globals << ") : 0;\n";
  os << offset << " = globals + kept;\n";
  os << "pool.parallelFor(" << k.batch.expr << " * " << count
     << ", [&](int64_t t) {\n";
  os.indent();
  os << "const int64_t b = t / " << count << ", h = t % " << count << ";\n";
  os << "const float *cacheKeys = " << base << " + b * " << ks[0] << " + h * "
     << ks[1] << ";\n";
  os << "const float *cacheValues = " << base << " + " << type.getValuesOffset()
     << " + b * " << vs[0] << " + h * " << vs[1] << ";\n";
  os << "float *keys = " << keysOut.ptr << " + t * " << dk * maxKeys << ";\n";
  os << "float *values = " << valuesOut.ptr << " + t * " << maxKeys * dk
     << ";\n";
  // Keys [from, from + n) of the cache's slots to index `to`.
  auto copy = [&](StringRef from, StringRef to, StringRef n) {
    os << "for (int64_t c = 0; c < " << dk << "; ++c)\n";
    os << "  std::memcpy(keys + c * " << maxKeys << " + " << to
       << ", cacheKeys + c * " << ks[3] << " + " << from << ", sizeof(float) * "
       << n << ");\n";
    os << "std::memcpy(values + (" << to << ") * " << dk << ", cacheValues + ("
       << from << ") * " << vs[2] << ", sizeof(float) * " << dk << " * " << n
       << ");\n";
  };
  copy("0", "0", "globals");
  if (window > 0) {
    // The window's positions [first - kept, first), from its slot on, in
    // two runs where the ring wraps.
    os << "if (kept > 0) {\n";
    os.indent();
    os << "const int64_t start = " << globals << " + (first - kept - "
       << globals << ") % " << window << ";\n";
    os << "const int64_t run = std::min<int64_t>(kept, " << slots
       << " - start);\n";
    copy("start", "globals", "run");
    copy(num(globals), "globals + run", "(kept - run)");
    os.unindent();
    os << "}\n";
  }
  os << "k::TransposeRows(" << k.view.at("0") << ", " << k.view.rowStride
     << ", seq, " << dk << ", keys + " << offset << ", " << maxKeys << ");\n";
  os << "for (int64_t s = 0; s < seq; ++s)\n";
  os << "  std::memcpy(values + (" << offset << " + s) * " << dk << ", "
     << v.view.at("s") << ", sizeof(float) * " << dk << ");\n";
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
  scalars[op.getOffset()] = offset;
  heads[op.getWindowKeys()] = {
      {keysOut.ptr, num(count * dk * maxKeys), num(dk * maxKeys), 1, maxKeys},
      k.batch,
      length,
      count,
      dk};
  heads[op.getWindowValues()] = {
      {valuesOut.ptr, num(count * maxKeys * dk), num(maxKeys * dk), dk, 1},
      k.batch,
      length,
      count,
      dk};
  remark(op, "the keys and values of at most " + std::to_string(globals) +
                 " global tokens and the last " + std::to_string(window) +
                 " positions the cache keeps (of " +
                 std::to_string(type.getMaxSeq()) +
                 "), gathered with the new rows' for the attention");
  return success();
}

LogicalResult FunctionEmitter::emitCacheRead(CacheReadOp op) {
  KVCacheType type = op.getCache().getType();
  std::array<int64_t, 4> ks = type.getKeyStrides(), vs = type.getValueStrides();
  std::string base = buffers[op.getCache()].ptr;
  Dim batch{scalars[op.getBatch()], type.getMaxBatch(), false};
  Dim length{scalars[op.getLength()], type.getMaxSeq(), false};
  int64_t count = type.getHeads(), dk = type.getHeadDim();
  heads[op.getKeys()] = {
      {base, num(ks[0]), num(ks[1]), ks[2], ks[3]}, batch, length, count, dk};
  heads[op.getValues()] = {{base + " + " + num(type.getValuesOffset()),
                            num(vs[0]), num(vs[1]), vs[2], vs[3]},
                           batch,
                           length,
                           count,
                           dk};
  return success();
}

//===----------------------------------------------------------------------===//
// The attention core
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitAttention(AttentionOp op) {
  auto find = [&](Value v) -> const Heads * {
    auto it = heads.find(v);
    return it == heads.end() ? nullptr : &it->second;
  };
  const Heads *q = find(op.getQuery()), *k = find(op.getKey()),
              *v = find(op.getValue());
  if (!q || !k || !v || q->view.featureStride != 1 ||
      v->view.featureStride != 1)
    return op.emitError("the Highway backend attends over per-head views "
                        "(tfm.split_heads, tfm.rotary, tfm.cache_read)");
  if (!llvm::all_of(op->getUsers(),
                    [](Operation *user) { return isa<MergeHeadsOp>(user); }))
    return op.emitError("the Highway backend stores tfm.attention's heads "
                        "merged: only tfm.merge_heads may read its result");
  int64_t d = q->heads * q->dk;
  Buffer out = allocate(op.getResult(), {q->batch, q->seq, staticDim(d)});
  HeadView o{out.ptr, q->seq.expr + " * " + num(d), num(q->dk), d};
  FailureOr<AttentionTiling> tiling = emitAttentionCore(op, *q, *k, *v, o);
  if (failed(tiling))
    return failure();
  if (facts.remarks) {
    std::string text;
    llvm::raw_string_ostream what(text);
    describeAttentionCore(what, op.getScore(), op.getMaskAttr(), *tiling);
    if (op.getKeyPadding())
      what << (op.getScore() == ScoreKind::Additive
                   ? "; padded keys (key_padding) skipped, never scored"
                   : "; padded keys (key_padding) get no weight: a block of "
                     "keys that is all padding is skipped, neither loaded "
                     "nor scored")
           << ", and a sequence without padding reads no mask";
    if (op.getKey().getDefiningOp<CacheReadOp>())
      what << "; the keys read where the cache holds them (transposed)";
    what << "; the heads written merged, as tfm.merge_heads reads them";
    remark(op, text);
  }
  return success();
}

FailureOr<AttentionTiling>
FunctionEmitter::emitAttentionCore(AttentionOp op, const Heads &qh,
                                   const Heads &kh, const Heads &vh,
                                   const HeadView &out) {
  ScoreKind score = op.getScore();
  KeySpan span = op.getMaskAttr() ? op.getMaskAttr().getKeySpan() : KeySpan();
  // Which parts of a row's keys (KeySpan::RowKeys) can be other than
  // [0, end): a window's first key, the global keys before it.
  bool rowsStartLater = span.hasBegin() || span.globalKeys,
       globalPrefix = span.globalKeys > 0;
  AttentionTilingAttr tilingAttr = getAttentionTiling(op);
  if (!tilingAttr && score != ScoreKind::Additive)
    return op.emitError(
        "tfm.attention has no tfm_codegen.attention_tiling: the "
        "Highway backend follows tfm-select-attention-tiling");
  AttentionTiling tiling;
  if (tilingAttr)
    tiling = {tilingAttr.getQueryRows512(), tilingAttr.getQueryRows256(),
              tilingAttr.getQueryRows128(), tilingAttr.getKeyBlock(), ""};
  // The verifier holds these to its ranges; unverified IR from the C++ API
  // must not make a task of no rows or a block of part of a vector.
  for (int64_t *rows :
       {&tiling.queryRows512, &tiling.queryRows256, &tiling.queryRows128})
    *rows = std::clamp<int64_t>(*rows, 1, 16);
  tiling.keyBlock = std::clamp<int64_t>(tiling.keyBlock / 16 * 16, 16, 1024);
  int64_t heads = qh.heads, kvHeads = kh.heads, dk = qh.dk,
          maxBatch = qh.batch.max, maxSq = qh.seq.max, maxSk = kh.seq.max;
  if (kvHeads <= 0 || heads % kvHeads != 0 || vh.heads != kvHeads)
    return op.emitError("the Highway backend needs key and value heads that "
                        "divide the query heads");
  // Grouped-query attention: query head h reads key/value head h / group.
  int64_t group = heads / kvHeads;
  std::string kvHead = group == 1 ? "h" : "(h / " + num(group) + ")";
  const HeadView &q = qh.view;
  HeadView k = kh.view, v = vh.view;
  k.head = kvHead;
  v.head = kvHead;
  const std::string &batch = qh.batch.expr, &sq = qh.seq.expr,
                    &sk = kh.seq.expr;
  std::string queryOffset =
      op.getQueryOffset() ? scalars[op.getQueryOffset()] : std::string("0");
  ValueRange scoreParams = op.getScoreParams();
  // A padding mask [batch, keys]: a task reads its sequence's row, or none
  // when every key there is real.
  std::string paddingRow;
  if (Value keyPadding = op.getKeyPadding()) {
    const Buffer &mask = buffers[keyPadding];
    if (mask.dims.size() != 2)
      return op.emitError("the Highway backend reads a [batch, keys] "
                          "key_padding");
    paddingRow = llvm::formatv("{0} + b * {1}", mask.ptr, mask.dims[1].expr);
  }
  auto emitPaddingRow = [&]() {
    if (paddingRow.empty())
      return;
    os << "const float *padding = " << paddingRow << ";\n";
    os << "if (k::AllEqual(padding, size_t(sk), 1.0f))\n";
    os << "  padding = nullptr; // no padded key in this sequence\n";
  };
  // A row's normaliser: with padding, a row may be left with no key.
  auto normalise = [&](const std::string &state, const std::string &row) {
    std::string inverse = "1.0f / " + state + ".sum";
    if (!paddingRow.empty())
      inverse = "(" + state + ".sum > 0.0f ? " + inverse + " : 0.0f)";
    return "k::Scale(" + inverse + ", " + row + ", " + row + ", " + num(dk) +
           ");\n";
  };
  // Keys a cache holds are transposed already: element (b, h, j, c) at
  // b*batchStride + h*headStride + j + c*featureStride.
  bool keysTransposed = k.rowStride == 1 && k.featureStride != 1;

  os << "{ // attention core: score " << stringifyScoreKind(score)
     << maskComment(op.getMaskAttr()) << ", " << heads << " heads of " << dk;
  if (group != 1)
    os << ", " << kvHeads << " key/value heads (each read by " << group
       << " query heads)";
  os << "\n";
  os.indent();
  os << "const int64_t batch = " << batch << ", sq = " << sq << ", sk = " << sk
     << ";\n";
  // BigBird's random key blocks: entry e of query block qb's row of the
  // pattern, unless no block, reached by another rule or earlier in the row
  // (a block counts once).
  MaskAttr mask = op.getMaskAttr();
  std::optional<int64_t> randomBlocks =
      mask ? mask.getRandomBlocks() : std::nullopt;
  int64_t block = mask ? mask.getBlock().value_or(1) : 1;
  int64_t patternRows = 0;
  if (randomBlocks) {
    if (op.getWeightsSlot())
      return op.emitError("the Highway backend writes no attention weights "
                          "of a mask with random key blocks");
    Value pattern = op.getBlockPattern();
    patternRows = cast<RankedTensorType>(pattern.getType()).getDimSize(0);
    if (ShapedType::isDynamic(patternRows))
      return op.emitError("the Highway backend reads a pattern of static "
                          "rows");
    os << "// Random key blocks: entry e of query block qb's row of the "
          "pattern, or -1 (no block, one another rule reaches, or one the "
          "row named before).\n";
    os << "const auto randomBlock = [&](int64_t qb, int64_t e) -> int64_t {\n";
    os.indent();
    os << "const float *ids = " << buffers[pattern].ptr << " + qb * "
       << *randomBlocks << ";\n";
    os << "const float id = ids[e];\n";
    os << "if (!(id >= 0.0f) || id * " << block << ".0f >= float(sk))\n";
    os << "  return -1;\n";
    os << "const int64_t kb = int64_t(id);\n";
    os << "if (float(kb) != id || kb < " << mask.getGlobalTokens().value_or(0)
       << " || std::abs(kb - qb) <= " << *mask.getWindow() << ")\n";
    os << "  return -1;\n";
    os << "for (int64_t f = 0; f < e; ++f)\n";
    os << "  if (ids[f] == id)\n";
    os << "    return -1;\n";
    os << "return kb;\n";
    os.unindent();
    os << "};\n";
  }
  std::string position =
      queryOffset == "0" ? std::string("i") : "(" + queryOffset + " + i)";

  std::string queryRow = q.at("i");
  std::string scoreExpr;
  float scale = score == ScoreKind::ScaledDot
                    ? 1.0f / std::sqrt(static_cast<float>(dk))
                    : 1.0f;
  if (score == ScoreKind::Bilinear) {
    // q_hᵀ W_h k = (W_hᵀ q_h)·k: fold W into each query row once.
    std::string wPtr = buffers[scoreParams[0]].ptr;
    std::string qb = scratch(FrameBuffer::BilinearQueries,
                             "batch * " + num(heads) + " * sq * " + num(dk),
                             maxBatch * heads * maxSq * dk);
    os << "pool.parallelFor(batch * " << heads << " * sq, [&](int64_t t) {\n";
    os.indent();
    os << "const int64_t b = t / (" << heads << " * sq), h = (t / sq) % "
       << heads << ", i = t % sq;\n";
    os << "const float *q = " << queryRow << ";\n";
    os << "float *dst = " << qb << " + t * " << dk << ";\n";
    os << "k::Zero(dst, " << dk << ");\n";
    os << "for (int64_t a = 0; a < " << dk << "; ++a)\n";
    os << "  k::Axpy(q[a], " << wPtr << " + (h * " << dk << " + a) * " << dk
       << ", dst, " << dk << ");\n";
    os.unindent();
    os << "});\n";
    queryRow = qb + " + t * " + num(dk);
  } else if (score == ScoreKind::Additive) {
    // v_hᵀ tanh(W_key k + W_query q): project every key and query once.
    std::string wKey = buffers[scoreParams[0]].ptr;
    std::string wQuery = buffers[scoreParams[1]].ptr;
    std::string vPtr = buffers[scoreParams[2]].ptr;
    int64_t a = cast<RankedTensorType>(scoreParams[0].getType()).getDimSize(1);
    std::string kp = scratch(FrameBuffer::AdditiveKeys,
                             "batch * " + num(heads) + " * sk * " + num(a),
                             maxBatch * heads * maxSk * a);
    std::string qp = scratch(FrameBuffer::AdditiveQueries,
                             "batch * " + num(heads) + " * sq * " + num(a),
                             maxBatch * heads * maxSq * a);
    for (auto [proj, len, w, view] :
         {std::make_tuple(kp, std::string("sk"), wKey, k),
          std::make_tuple(qp, std::string("sq"), wQuery, q)}) {
      os << "pool.parallelFor(batch * " << heads << " * " << len
         << ", [&](int64_t t) {\n";
      os.indent();
      os << "const int64_t b = t / (" << heads << " * " << len << "), h = (t / "
         << len << ") % " << heads << ", j = t % " << len << ";\n";
      if (view.featureStride == 1) {
        os << "const float *row = " << view.at("j") << ";\n";
      } else {
        // A transposed key: its features gathered into one row.
        os << "float row[" << dk << "];\n";
        os << "for (int64_t c = 0; c < " << dk << "; ++c)\n";
        os << "  row[c] = (" << view.at("j") << ")[c * " << view.featureStride
           << "];\n";
      }
      os << "for (int64_t a = 0; a < " << a << "; ++a)\n";
      os << "  " << proj << "[t * " << a << " + a] = k::Dot(" << w << " + (h * "
         << a << " + a) * " << dk << ", row, " << dk << ");\n";
      os.unindent();
      os << "});\n";
    }
    queryRow = qp + " + t * " + num(a);
    scoreExpr = llvm::formatv("k::AdditiveScore(q, {0} + ((b * {1} + h) * sk + "
                              "j) * {2}, {3} + h * {2}, {2})",
                              kp, heads, a, vPtr)
                    .str();
  }

  // Each row's keys where its span says (the mask's one answer):
  // [0, prefix) and [first, keys).
  auto rowKeys = [&](const RowKeysNames &names) {
    printRowKeys(os, span, "i", queryOffset, "sk", names);
  };
  // On request (--dump-attention), each row's softmax weights written
  // whole, 0 where a key is masked: a plain second pass over the scores,
  // outside the flash loops. `keyRow(j)` is key j's features, `feature`
  // apart; additive scores use scoreExpr.
  auto emitWeightsOut = [&](const std::string &keyRow,
                            const std::string &feature) {
    if (!op.getWeightsSlot())
      return;
    os << "if (float *weights = tfm::rt::attentionWeightsFor("
       << scalars[op.getWeightsSlot()] << ", batch, " << heads
       << ", sq, sk)) {\n";
    os.indent();
    os << "// The attention weights (--dump-attention): each row's softmax "
          "over its keys, 0 elsewhere.\n";
    os << "pool.parallelFor(batch * " << heads << " * sq, [&](int64_t t) {\n";
    os.indent();
    os << "const int64_t b = t / (" << heads << " * sq), h = (t / sq) % "
       << heads << ", i = t % sq;\n";
    os << "const float *q = " << queryRow << ";\n";
    os << "int64_t keys, first, prefix;\n";
    rowKeys({"keys", "first", "prefix"});
    emitPaddingRow();
    os << "float *row = weights + t * sk;\n";
    os << "auto seen = [&](int64_t j) {\n";
    os << "  return (j < prefix || (j >= first && j < keys))"
       << (paddingRow.empty() ? "" : " && (!padding || padding[j] != 0.0f)")
       << ";\n";
    os << "};\n";
    os << "float maxScore = -INFINITY;\n";
    os << "for (int64_t j = 0; j < sk; ++j) {\n";
    os.indent();
    os << "if (!seen(j))\n  continue;\n";
    if (score == ScoreKind::Additive) {
      os << "row[j] = " << scoreExpr << ";\n";
    } else {
      os << "const float *key = " << keyRow << ";\n";
      os << "float dot = 0.0f;\n";
      os << "for (int64_t c = 0; c < " << dk << "; ++c)\n";
      os << "  dot += q[c] * key[c * " << feature << "];\n";
      os << "row[j] = dot * " << floatLiteral(scale) << ";\n";
    }
    os << "maxScore = std::max(maxScore, row[j]);\n";
    os.unindent();
    os << "}\n";
    os << "float sum = 0.0f;\n";
    os << "for (int64_t j = 0; j < sk; ++j)\n";
    os << "  sum += row[j] = seen(j) ? std::exp(row[j] - maxScore) : 0.0f;\n";
    os << "k::Scale(sum > 0.0f ? 1.0f / sum : 0.0f, row, row, size_t(sk));\n";
    os.unindent();
    os << "});\n";
    os.unindent();
    os << "}\n";
  };
  if (score == ScoreKind::Additive) {
    // One query row per task, one key at a time.
    os << "pool.parallelFor(batch * " << heads << " * sq, [&](int64_t t) {\n";
    os.indent();
    os << "const int64_t b = t / (" << heads << " * sq), h = (t / sq) % "
       << heads << ", i = t % sq;\n";
    os << "const float *q = " << queryRow << ";\n";
    os << "float *o = " << out.at("i") << ";\n";
    os << "k::Zero(o, " << dk << ");\n";
    os << "k::OnlineSoftmax state;\n";
    os << "int64_t keys, first, prefix;\n";
    rowKeys({"keys", "first", "prefix"});
    emitPaddingRow();
    std::string step = "  k::OnlineSoftmaxStep(state, " + scoreExpr + ", " +
                       v.at("j") + ", o, " + num(dk) + ");\n";
    if (!paddingRow.empty())
      step = "  if (!padding || padding[j] != 0.0f)\n  " + step;
    if (globalPrefix)
      os << "for (int64_t j = 0; j < prefix; ++j)\n" << step;
    os << "for (int64_t j = first; j < keys; ++j)\n" << step;
    if (randomBlocks) {
      os << "if (const int64_t qb = " << position << " / " << block << "; qb < "
         << patternRows << ")\n";
      os << "  for (int64_t e = 0; e < " << *randomBlocks << "; ++e)\n";
      os << "    if (const int64_t kb = randomBlock(qb, e); kb >= 0)\n";
      os << "      for (int64_t j = kb * " << block
         << ", end = std::min<int64_t>("
         << (op.isCausal() ? position + " + 1" : std::string("sk")) << ", j + "
         << block << "); j < end; ++j)\n  " << step;
    }
    os << normalise("state", "o");
    os.unindent();
    os << "});\n";
    emitWeightsOut("", "");
    os.unindent();
    os << "}\n";
    return tiling;
  }

  // Dot-product scores read the keys transposed ([batch, heads, dk, sk]):
  // a block of keys' scores is then dk vector FMAs.
  HeadView keysT = k;
  if (!keysTransposed) {
    // Once per key head (grouped-query: fewer than the query heads).
    std::string scratchKeys = scratch(FrameBuffer::KeysTransposed,
                                      "batch * " + num(kvHeads * dk) + " * sk",
                                      maxBatch * kvHeads * dk * maxSk);
    const HeadView &source = kh.view;
    os << "pool.parallelFor(batch * " << kvHeads << ", [&](int64_t t) {\n";
    os.indent();
    os << "const int64_t b = t / " << kvHeads << ", h = t % " << kvHeads
       << ";\n";
    os << "k::TransposeRows(" << source.at("0") << ", " << source.rowStride
       << ", sk, " << dk << ", " << scratchKeys << " + t * " << dk
       << " * sk, sk);\n";
    os.unindent();
    os << "});\n";
    // Positions next to each other, features sk apart.
    keysT = {scratchKeys, num(kvHeads * dk) + " * sk", num(dk) + " * sk", 1, 1,
             kvHead};
  }
  std::string keysLd =
      keysTransposed ? num(k.featureStride) : std::string("sk");

  // queryRows query rows per task, a block of keyBlock keys at a time: each
  // key block is loaded once for all of them; each row keeps its own online
  // softmax (and, causal, its own key limit). The rows of a task are fixed
  // by the shapes and the tiling alone, so results do not depend on the
  // thread count.
  os << "// Attention tiles (#tfm_codegen.attention_tiling): "
     << tiling.queryRows512 << " query rows a task on 512-bit vectors, "
     << tiling.queryRows256 << " on 256-bit, " << tiling.queryRows128
     << " on 128-bit; blocks of " << tiling.keyBlock << " keys.\n";
  os << "constexpr size_t queryRows = k::ForVectorBits(" << tiling.queryRows512
     << ", " << tiling.queryRows256 << ", " << tiling.queryRows128 << ");\n";
  os << "constexpr size_t keyBlock = " << tiling.keyBlock << ";\n";
  os << "const int64_t groups = (sq + int64_t(queryRows) - 1) / "
        "int64_t(queryRows);\n";
  os << "pool.parallelFor(batch * " << heads
     << " * groups, [&](int64_t task) {\n";
  os.indent();
  os << "const int64_t b = task / (" << heads << " * groups), h = (task / "
     << "groups) % " << heads << ";\n";
  os << "const int64_t i0 = (task % groups) * int64_t(queryRows);\n";
  os << "const int64_t rows = std::min<int64_t>(queryRows, sq - i0);\n";
  os << "const float *qs[queryRows];\n";
  os << "float *os[queryRows];\n";
  os << "int64_t keys[queryRows];\n";
  if (rowsStartLater)
    os << "int64_t first[queryRows];\n";
  if (globalPrefix)
    os << "int64_t prefix[queryRows];\n";
  os << "k::OnlineSoftmax states[queryRows];\n";
  os << "for (int64_t r = 0; r < int64_t(queryRows); ++r) {\n";
  os.indent();
  os << "// Rows past the end repeat the last one: scored, never used.\n";
  os << "const int64_t i = i0 + std::min<int64_t>(r, rows - 1);\n";
  os << "[[maybe_unused]] const int64_t t = (b * " << heads
     << " + h) * sq + i;\n";
  os << "qs[r] = " << queryRow << ";\n";
  os << "os[r] = " << out.at("i") << ";\n";
  rowKeys({"keys[r]", rowsStartLater ? "first[r]" : "",
           globalPrefix ? "prefix[r]" : ""});
  os << "if (r < rows)\n";
  os << "  k::Zero(os[r], " << dk << ");\n";
  os.unindent();
  os << "}\n";
  emitPaddingRow();
  os << "HWY_ALIGN float s[queryRows * keyBlock];\n";
  // The scores s of the task's rows against the n keys from j0, unless
  // every one of them is padding.
  auto scoreKeyBlock = [&] {
    if (!paddingRow.empty()) {
      os << "if (padding && k::AllEqual(padding + j0, size_t(n), 0.0f))\n";
      os << "  continue; // every key of the block is padding\n";
    }
    os << "k::TransposedKeyScoresRows<queryRows, keyBlock>(size_t(rows), qs, "
       << keysT.at("j0") << ", " << keysLd << ", n, " << dk << ", "
       << floatLiteral(scale) << ", s);\n";
  };
  // The blocks of keys [begin, end) of the task, row r taking
  // [rowFirst[r], rowEnd[r]) of them (no rowFirst: from `begin`).
  auto keyBlocks = [&](const std::string &begin, const std::string &end,
                       const std::string &rowFirst, const std::string &rowEnd) {
    os << "for (int64_t j0 = " << begin << "; j0 < " << end
       << "; j0 += keyBlock) {\n";
    os.indent();
    os << "const int64_t n = std::min<int64_t>(keyBlock, " << end
       << " - j0);\n";
    scoreKeyBlock();
    if (!rowFirst.empty())
      os << "size_t blockFirst[queryRows];\n";
    os << "size_t blockKeys[queryRows];\n";
    os << "for (int64_t r = 0; r < rows; ++r) {\n";
    if (!rowFirst.empty())
      os << "  blockFirst[r] = size_t(std::clamp<int64_t>(" << rowFirst
         << "[r] - j0, 0, n));\n";
    os << "  blockKeys[r] = size_t(std::clamp<int64_t>(" << rowEnd
       << "[r] - j0, 0, n));\n";
    os << "}\n";
    os << "k::OnlineSoftmaxBlockRows<queryRows, keyBlock>(states, s, n, "
       << (rowFirst.empty() ? "nullptr" : "blockFirst") << ", blockKeys, "
       << (paddingRow.empty() ? "nullptr" : "padding ? padding + j0 : nullptr")
       << ", rows, " << v.at("j0") << ", " << v.rowStride << ", os, " << dk
       << ");\n";
    os.unindent();
    os << "}\n";
  };
  if (globalPrefix) {
    // The global keys first, in blocks of their own; then each row's band
    // past them (a global row's: every other key). Global rows come first
    // and see every key, so the band's ends are the task's extremes.
    os << "int64_t prefixKeys = 0, bandBegin = first[0], bandEnd = 0;\n";
    os << "for (int64_t r = 0; r < rows; ++r) {\n";
    os << "  prefixKeys = std::max(prefixKeys, prefix[r]);\n";
    os << "  bandBegin = std::min(bandBegin, first[r]);\n";
    os << "  bandEnd = std::max(bandEnd, keys[r]);\n";
    os << "}\n";
    keyBlocks("0", "prefixKeys", "", "prefix");
    keyBlocks("bandBegin", "bandEnd", "first", "keys");
  } else {
    // Both bounds grow with the row: the first row's first key is the
    // smallest, the last row's end the largest.
    keyBlocks(rowsStartLater ? "first[0]" : "0", "keys[rows - 1]",
              rowsStartLater ? "first" : "", "keys");
  }
  if (randomBlocks) {
    // Each query block of the task's rows, past the global ones (which see
    // every key): its pattern's blocks, scored for the task's rows and
    // taken by the block's own rows.
    std::string start =
        queryOffset == "0" ? std::string("i0") : "(" + queryOffset + " + i0)";
    os << "for (int64_t qb = std::max<int64_t>("
       << mask.getGlobalTokens().value_or(0) << ", " << start << " / " << block
       << "); qb <= (" << start << " + rows - 1) / " << block << " && qb < "
       << patternRows << "; ++qb) {\n";
    os.indent();
    os << "// The task's rows in query block qb: [rowBegin, rowEnd).\n";
    os << "const int64_t rowBegin = std::max<int64_t>(0, qb * " << block
       << " - " << start << ");\n";
    os << "const int64_t rowEnd = std::min<int64_t>(rows, (qb + 1) * " << block
       << " - " << start << ");\n";
    os << "for (int64_t e = 0; e < " << *randomBlocks << "; ++e) {\n";
    os.indent();
    os << "const int64_t kb = randomBlock(qb, e);\n";
    os << "if (kb < 0)\n  continue;\n";
    os << "const int64_t blockEnd = std::min<int64_t>(sk, (kb + 1) * " << block
       << ");\n";
    os << "for (int64_t j0 = kb * " << block
       << "; j0 < blockEnd; j0 += keyBlock) {\n";
    os.indent();
    os << "const int64_t n = std::min<int64_t>(keyBlock, blockEnd - j0);\n";
    if (op.isCausal()) {
      os << "if (j0 > " << start << " + rowEnd - 1)\n";
      os << "  break; // past the block's last row (causal)\n";
    }
    scoreKeyBlock();
    os << "size_t blockKeys[queryRows];\n";
    os << "for (int64_t r = 0; r < rows; ++r)\n";
    os << "  blockKeys[r] = r >= rowBegin && r < rowEnd ? "
       << (op.isCausal()
               ? "size_t(std::clamp<int64_t>(" + start + " + r + 1 - j0, 0, n))"
               : std::string("size_t(n)"))
       << " : 0;\n";
    os << "k::OnlineSoftmaxBlockRows<queryRows, keyBlock>(states, s, n, "
          "nullptr, blockKeys, "
       << (paddingRow.empty() ? "nullptr" : "padding ? padding + j0 : nullptr")
       << ", rows, " << v.at("j0") << ", " << v.rowStride << ", os, " << dk
       << ");\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
  }
  os << "for (int64_t r = 0; r < rows; ++r)\n";
  os << "  " << normalise("states[r]", "os[r]");
  os.unindent();
  os << "});\n";
  emitWeightsOut(keysT.at("j"), keysLd);
  os.unindent();
  os << "}\n";
  return tiling;
}

void FunctionEmitter::describeAttentionCore(llvm::raw_ostream &what,
                                            ScoreKind score, MaskAttr mask,
                                            const AttentionTiling &tiling) {
  switch (score) {
  case ScoreKind::Additive:
    what << "attention fused one key at a time (score, online softmax, "
            "product with V; the score matrix never stored), not in blocks "
            "of keys: additive scores are not a product with the keys; "
            "W_key k and W_query q computed once per key and query";
    break;
  case ScoreKind::Bilinear:
  case ScoreKind::Dot:
  case ScoreKind::ScaledDot:
    what << "attention fused (flash form): scores";
    if (score == ScoreKind::ScaledDot)
      what << ", scale";
    what << ", online softmax (running max and sum) and the product with V "
            "per block of "
         << tiling.keyBlock << " keys for a group of query rows ("
         << tiling.queryRows512 << " on AVX-512, " << tiling.queryRows256
         << " on 256-bit vectors), the score matrix never stored";
    if (score == ScoreKind::Bilinear)
      what << "; bilinear W folded into each query row once";
    break;
  }
  if (!mask)
    return;
  std::optional<int64_t> window = mask.getWindow();
  if (mask.getCausal() && !window)
    what << "; causal mask in the loop bounds: each query row stops at its "
            "own position, no key above the diagonal is scored";
  if (std::optional<int64_t> block = mask.getBlock()) {
    what << "; block-sparse in blocks of " << *block << " positions: each "
         << "query block's key blocks within " << *window
         << " blocks in the loop bounds";
    if (std::optional<int64_t> global = mask.getGlobalTokens())
      what << ", the first " << *global
           << " blocks' keys a block of their own for every row and their "
              "rows over every key";
    if (std::optional<int64_t> random = mask.getRandomBlocks())
      what << ", and the " << *random
           << " blocks of its row of the pattern one by one (a block another "
              "rule or an earlier entry reaches, or an id out of range, "
              "skipped)";
    what << "; no other key block is loaded or scored";
    return;
  }
  if (window) {
    what << "; sliding window of " << *window << " keys "
         << (mask.getCausal() ? "before each query row (causal)"
                              : "on each side of each query row")
         << " in the loop bounds: each row's keys start " << *window
         << " before its own position, no block outside the band is loaded "
            "or scored";
  }
  if (std::optional<int64_t> global = mask.getGlobalTokens())
    what << "; " << *global
         << " global tokens: their keys a block of their own for every row, "
            "their rows over every key";
}

} // namespace tfm::hwy
