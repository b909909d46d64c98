//===- AttentionEmitter.cpp - multi-head attention -> Highway C++ ---------===//
//
// The attention part of FunctionEmitter: Q/K/V projections, rotary
// positions, the key/value cache, and the attention core (a group of query
// rows per task, online softmax over blocks of keys, the score matrix never
// stored).
//
//===----------------------------------------------------------------------===//

#include "FunctionEmitter.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace tfm::hwy {

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

void FunctionEmitter::emitRotary(const HeadView &view, const std::string &batch,
                                 const std::string &seq, int64_t maxSeq,
                                 int64_t heads, int64_t dk, RopeStyle style,
                                 float base, const std::string &offset) {
  int64_t half = dk / 2;
  bool interleaved = style == RopeStyle::Interleaved;
  os << "{ // rotary positions (" << stringifyRopeStyle(style) << ", base "
     << floatLiteral(base) << ")\n";
  os.indent();
  os << "const int64_t seq = " << seq << ";\n";
  std::string cosT = scratch("ropeCos", "seq * " + num(half), maxSeq * half);
  std::string sinT = scratch("ropeSin", "seq * " + num(half), maxSeq * half);
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
  os << "pool.parallelFor(" << batch << " * seq, [&](int64_t t) {\n";
  os.indent();
  os << "const int64_t b = t / seq, s = t % seq;\n";
  os << "for (int64_t h = 0; h < " << heads << "; ++h) {\n";
  os.indent();
  os << "float *x = " << view.ptr << " + b * " << view.batchStride << " + h * "
     << view.headStride << " + s * " << view.rowStride << ";\n";
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

AttentionTiling FunctionEmitter::emitAttentionCore(
    ScoreKind score, bool causal, const std::string &batch, int64_t maxBatch,
    const std::string &sq, int64_t maxSq, const std::string &sk, int64_t maxSk,
    int64_t heads, int64_t dk, const HeadView &q, const HeadView &k,
    const HeadView &v, const HeadView &out, ValueRange scoreParams,
    const std::string &queryOffset, const std::string &cachedKeysT,
    int64_t cachedKeysLd, AttentionTilingAttr tilingAttr) {
  AttentionTiling tiling = tilingAttr
                               ? AttentionTiling{tilingAttr.getQueryRows512(),
                                                 tilingAttr.getQueryRows256(),
                                                 tilingAttr.getQueryRows128(),
                                                 tilingAttr.getKeyBlock(), ""}
                               : chooseAttentionTiling(maxSq, maxSk);
  // The verifier holds these to its ranges; unverified IR from the C++ API
  // must not make a task of no rows or a block of part of a vector.
  for (int64_t *rows :
       {&tiling.queryRows512, &tiling.queryRows256, &tiling.queryRows128})
    *rows = std::clamp<int64_t>(*rows, 1, 16);
  tiling.keyBlock = std::clamp<int64_t>(tiling.keyBlock / 16 * 16, 16, 1024);
  auto at = [](const HeadView &view, StringRef row) {
    return llvm::formatv("{0} + b * {1} + h * {2} + {3} * {4}", view.ptr,
                         view.batchStride, view.headStride, row, view.rowStride)
        .str();
  };
  os << "{ // attention core: score " << stringifyScoreKind(score)
     << (causal ? ", causal" : "") << ", " << heads << " heads of " << dk
     << "\n";
  os.indent();
  os << "const int64_t batch = " << batch << ", sq = " << sq << ", sk = " << sk
     << ";\n";

  std::string queryRow = at(q, "i");
  std::string scoreExpr;
  float scale = score == ScoreKind::ScaledDot
                    ? 1.0f / std::sqrt(static_cast<float>(dk))
                    : 1.0f;
  // FLOP terms are evaluated outside this block, over the dims themselves.
  std::string fb = "double(" + batch + ")", fq = "double(" + sq + ")",
              fk = "double(" + sk + ")";
  std::string pairs = causal ? "(" + fq + " * (" + fq + " + 1) / 2)"
                             : "(" + fq + " * " + fk + ")";
  if (score == ScoreKind::Bilinear) {
    // q_hᵀ W_h k = (W_hᵀ q_h)·k: fold W into each query row once.
    std::string wPtr = buffers[scoreParams[0]].ptr;
    std::string qb =
        scratch("qW", "batch * " + num(heads) + " * sq * " + num(dk),
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
    scoreExpr = "k::Dot(q, " + at(k, "j") + ", " + num(dk) + ")";
    addFlops(
        llvm::formatv("2.0 * {0} * {1} * {2} * {3} * {3}", fb, heads, fq, dk)
            .str());
  } else if (score == ScoreKind::Additive) {
    // v_hᵀ tanh(W_key k + W_query q): project every key and query once.
    std::string wKey = buffers[scoreParams[0]].ptr;
    std::string wQuery = buffers[scoreParams[1]].ptr;
    std::string vPtr = buffers[scoreParams[2]].ptr;
    int64_t a = cast<RankedTensorType>(scoreParams[0].getType()).getDimSize(1);
    std::string kp =
        scratch("keyProj", "batch * " + num(heads) + " * sk * " + num(a),
                maxBatch * heads * maxSk * a);
    std::string qp =
        scratch("queryProj", "batch * " + num(heads) + " * sq * " + num(a),
                maxBatch * heads * maxSq * a);
    for (auto [proj, len, w, view] :
         {std::make_tuple(kp, std::string("sk"), wKey, k),
          std::make_tuple(qp, std::string("sq"), wQuery, q)}) {
      os << "pool.parallelFor(batch * " << heads << " * " << len
         << ", [&](int64_t t) {\n";
      os.indent();
      os << "const int64_t b = t / (" << heads << " * " << len << "), h = (t / "
         << len << ") % " << heads << ", j = t % " << len << ";\n";
      os << "const float *row = " << at(view, "j") << ";\n";
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
    addFlops(llvm::formatv("2.0 * {0} * {1} * ({2} + {3}) * {4} * {5}", fb,
                           heads, fq, fk, a, dk)
                 .str());
    addFlops(llvm::formatv("2.0 * {0} * {1} * {2} * {3}", fb, heads, pairs, a)
                 .str());
  } else {
    scoreExpr = "k::Dot(q, " + at(k, "j") + ", " + num(dk) + ")";
    if (score == ScoreKind::ScaledDot)
      scoreExpr +=
          " * " + floatLiteral(1.0f / std::sqrt(static_cast<float>(dk)));
    addFlops(llvm::formatv("2.0 * {0} * {1} * {2} * {3}", fb, heads, pairs, dk)
                 .str());
  }
  addFlops(
      llvm::formatv("2.0 * {0} * {1} * {2} * {3}", fb, heads, pairs, dk).str());

  // Dot-product scores read the keys transposed ([batch, heads, dk, sk]):
  // a block of keys' scores is then dk vector FMAs.
  std::string keysTransposed = cachedKeysT;
  std::string keysLd = cachedKeysT.empty() ? "sk" : num(cachedKeysLd);
  if (score != ScoreKind::Additive && cachedKeysT.empty()) {
    keysTransposed = scratch("keysT", "batch * " + num(heads * dk) + " * sk",
                             maxBatch * heads * dk * maxSk);
    os << "pool.parallelFor(batch * " << heads << ", [&](int64_t t) {\n";
    os.indent();
    os << "const int64_t b = t / " << heads << ", h = t % " << heads << ";\n";
    os << "k::TransposeRows(" << at(k, "0") << ", " << k.rowStride << ", sk, "
       << dk << ", " << keysTransposed << " + t * " << dk << " * sk, sk);\n";
    os.unindent();
    os << "});\n";
  }

  // One query row per task: scores, online softmax and the weighted sum of
  // value rows in one pass over the keys; the score matrix is never stored.
  std::string keyLimit =
      causal ? "std::min<int64_t>(sk, " + queryOffset + " + i + 1)"
             : std::string("sk");
  if (keysTransposed.empty()) {
    // One query row per task, one key at a time.
    os << "pool.parallelFor(batch * " << heads << " * sq, [&](int64_t t) {\n";
    os.indent();
    os << "const int64_t b = t / (" << heads << " * sq), h = (t / sq) % "
       << heads << ", i = t % sq;\n";
    os << "const float *q = " << queryRow << ";\n";
    os << "float *o = " << at(out, "i") << ";\n";
    os << "k::Zero(o, " << dk << ");\n";
    os << "k::OnlineSoftmax state;\n";
    os << "const int64_t keys = " << keyLimit << ";\n";
    os << "for (int64_t j = 0; j < keys; ++j)\n";
    os << "  k::OnlineSoftmaxStep(state, " << scoreExpr << ", " << at(v, "j")
       << ", o, " << dk << ");\n";
    os << "k::Scale(1.0f / state.sum, o, o, " << dk << ");\n";
    os.unindent();
    os << "});\n";
    os.unindent();
    os << "}\n";
    return tiling;
  }

  // queryRows query rows per task, a block of keyBlock keys at a time: each
  // key block is loaded once for all of them; each row keeps its own online
  // softmax (and, causal, its own key limit). The rows of a task are fixed
  // by the shapes and the tiling alone, so results do not depend on the
  // thread count.
  os << "// Attention tiles ("
     << (tilingAttr ? "#tfm.attention_tiling"
                    : "chosen here: no #tfm.attention_tiling")
     << "): " << tiling.queryRows512 << " query rows a task on 512-bit "
     << "vectors, " << tiling.queryRows256 << " on 256-bit, "
     << tiling.queryRows128 << " on 128-bit; blocks of " << tiling.keyBlock
     << " keys.\n";
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
  os << "k::OnlineSoftmax states[queryRows];\n";
  os << "for (int64_t r = 0; r < int64_t(queryRows); ++r) {\n";
  os.indent();
  os << "// Rows past the end repeat the last one: scored, never used.\n";
  os << "const int64_t i = i0 + std::min<int64_t>(r, rows - 1);\n";
  os << "[[maybe_unused]] const int64_t t = (b * " << heads
     << " + h) * sq + i;\n";
  os << "qs[r] = " << queryRow << ";\n";
  os << "os[r] = " << at(out, "i") << ";\n";
  os << "keys[r] = " << keyLimit << ";\n";
  os << "if (r < rows)\n";
  os << "  k::Zero(os[r], " << dk << ");\n";
  os.unindent();
  os << "}\n";
  os << "HWY_ALIGN float s[queryRows * keyBlock];\n";
  // Causal limits grow with the row: the last row's is the largest.
  os << "for (int64_t j0 = 0; j0 < keys[rows - 1]; j0 += keyBlock) {\n";
  os.indent();
  os << "const int64_t n = std::min<int64_t>(keyBlock, keys[rows - 1] - "
        "j0);\n";
  os << "k::TransposedKeyScoresRows<queryRows, keyBlock>(qs, " << keysTransposed
     << " + (b * " << heads << " + h) * " << dk << " * " << keysLd << " + j0, "
     << keysLd << ", n, " << dk << ", " << floatLiteral(scale) << ", s);\n";
  os << "size_t blockKeys[queryRows];\n";
  os << "for (int64_t r = 0; r < rows; ++r)\n";
  os << "  blockKeys[r] = size_t(std::clamp<int64_t>(keys[r] - j0, 0, n));\n";
  os << "k::OnlineSoftmaxBlockRows<queryRows, keyBlock>(states, s, n, "
        "blockKeys, rows, "
     << at(v, "j0") << ", " << v.rowStride << ", os, " << dk << ");\n";
  os.unindent();
  os << "}\n";
  os << "for (int64_t r = 0; r < rows; ++r)\n";
  os << "  k::Scale(1.0f / states[r].sum, os[r], os[r], " << dk << ");\n";
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
  return tiling;
}

LogicalResult FunctionEmitter::emitMultiHeadAttention(MultiHeadAttentionOp op) {
  Buffer x = buffers[op.getQuery()];
  int64_t rank = x.dims.size();
  if (rank != 3)
    return op.emitError("the Highway backend expects [batch, seq, d_model]");
  int64_t d = op.getQuery().getType().getDimSize(2);
  int64_t heads = op.getNumHeads(), dk = d / heads;
  const Dim &batch = x.dims[0], &seq = x.dims[1];
  std::string rows = product(ArrayRef<Dim>(x.dims).take_front(2));
  int64_t maxRows = batch.max * seq.max;
  // Self-attention projects Q, K and V together: in_proj packed as one
  // segment of 3 x d_model rows, as tfm-fuse-attention's GEMM packs it (one
  // packed copy when both forms are in a model). Otherwise Q and K/V are
  // separate GEMMs over segments of d_model rows.
  int64_t inSegments = op.isSelfAttention() ? 1 : 3;
  std::string wIn =
      packedWeight(op.getInProjWeight(), inSegments, 3 * d / inSegments);
  std::string bIn = buffers[op.getInProjBias()].ptr;

  HeadView q, k, v;
  Dim keySeq = seq;
  std::string position =
      op.getPosition() ? scalars[op.getPosition()] : std::string("0");
  if (op.isSelfAttention()) {
    std::string qkv =
        scratch("qkv", rows + " * " + num(3 * d), maxRows * 3 * d);
    emitMatmul("in_proj (Q, K, V)", rows, maxRows, x.ptr, d, wIn, 0, 1, 3 * d,
               d, bIn, qkv, 3 * d, std::nullopt);
    emitStackedHeads(qkv, batch, seq, heads, dk, op.getRope(), op.getRopeBase(),
                     position, q, k, v);
  } else {
    std::string qp = scratch("q", rows + " * " + num(d), maxRows * d);
    emitMatmul("in_proj (Q)", rows, maxRows, x.ptr, d, wIn, 0, 1, d, d, bIn, qp,
               d, std::nullopt);
    q = {qp, seq.expr + " * " + num(d), dk, d};
    // Over a read-only cache the keys and values are already projected.
    if (Value memory = op.getMemory()) {
      Buffer mem = buffers[memory];
      keySeq = mem.dims[1];
      std::string memRows = product(ArrayRef<Dim>(mem.dims).take_front(2));
      int64_t maxMemRows = mem.dims[0].max * keySeq.max;
      std::string kv =
          scratch("kv", memRows + " * " + num(2 * d), maxMemRows * 2 * d);
      emitMatmul("in_proj (K, V) of memory", memRows, maxMemRows, mem.ptr, d,
                 wIn, 1, 2, d, d, bIn, kv, 2 * d, std::nullopt);
      std::string stride = keySeq.expr + " * " + num(2 * d);
      k = {kv, stride, dk, 2 * d};
      v = {kv + " + " + num(d), stride, dk, 2 * d};
    }
  }
  std::string cachedKeysT;
  int64_t cacheSeq = 0;
  if (Value cache = op.getCache()) {
    // The new positions' keys and values (of the queries' rows, or of the
    // memory's) go into the cache at `position`; attention then reads every
    // position so far from it. A read-only cache only reads its first
    // `position` positions. Keys are stored transposed ([b, h, dk, seq]) for
    // dot-product scores, as rows for additive ones; values as rows
    // ([b, h, seq, dk]) after all keys.
    auto type = cast<KVCacheType>(cache.getType());
    cacheSeq = type.getMaxSeq();
    std::string base = buffers[cache].ptr;
    std::string values =
        base + " + " + num(type.getMaxBatch() * heads * dk * cacheSeq);
    bool transposed = op.getScore() != ScoreKind::Additive;
    auto at = [](const HeadView &view, StringRef row) {
      return llvm::formatv("{0} + b * {1} + h * {2} + {3} * {4}", view.ptr,
                           view.batchStride, view.headStride, row,
                           view.rowStride)
          .str();
    };
    bool readOnly = op.getCacheReadOnly();
    if (!readOnly) {
      os << "{ // append the new keys and values to the cache\n";
      os.indent();
      os << "const int64_t seq = " << keySeq.expr << ", first = " << position
         << ";\n";
      os << "pool.parallelFor(" << batch.expr << " * " << heads
         << ", [&](int64_t t) {\n";
      os.indent();
      os << "const int64_t b = t / " << heads << ", h = t % " << heads << ";\n";
      os << "float *keys = " << base << " + t * " << dk * cacheSeq << ";\n";
      os << "float *vals = " << values << " + t * " << dk * cacheSeq << ";\n";
      if (transposed)
        os << "k::TransposeRows(" << at(k, "0") << ", " << k.rowStride
           << ", seq, " << dk << ", keys + first, " << cacheSeq << ");\n";
      os << "for (int64_t s = 0; s < seq; ++s) {\n";
      if (!transposed)
        os << "  std::memcpy(keys + (first + s) * " << dk << ", " << at(k, "s")
           << ", sizeof(float) * " << dk << ");\n";
      os << "  std::memcpy(vals + (first + s) * " << dk << ", " << at(v, "s")
         << ", sizeof(float) * " << dk << ");\n";
      os << "}\n";
      os.unindent();
      os << "});\n";
      os.unindent();
      os << "}\n";
    }
    std::string perBatch = num(heads * cacheSeq * dk);
    if (transposed)
      cachedKeysT = base;
    else
      k = {base, perBatch, cacheSeq * dk, dk};
    v = {values, perBatch, cacheSeq * dk, dk};
    keySeq = readOnly ? Dim{position, cacheSeq, false}
                      : Dim{"(" + position + " + " + keySeq.expr + ")",
                            cacheSeq, false};
  }
  std::string merged = scratch("heads", rows + " * " + num(d), maxRows * d);
  HeadView o{merged, seq.expr + " * " + num(d), dk, d};
  AttentionTiling tiling = emitAttentionCore(
      op.getScore(), op.getCausal(), batch.expr, batch.max, seq.expr, seq.max,
      keySeq.expr, keySeq.max, heads, dk, q, k, v, o, op.getScoreParams(),
      position, cachedKeysT, cacheSeq);
  Buffer out = allocate(op.getResult(), x.dims);
  emitMatmul("out_proj", rows, maxRows, merged, d,
             packedWeight(op.getOutProjWeight(), 1, d), 0, 1, d, d,
             buffers[op.getOutProjBias()].ptr, out.ptr, d, std::nullopt);
  if (facts.remarks)
    remark(op, describeAttentionFusion(op, tiling));
  return success();
}

void FunctionEmitter::emitStackedHeads(
    const std::string &qkv, const Dim &batch, const Dim &seq, int64_t heads,
    int64_t dk, std::optional<RopeStyle> rope, std::optional<APFloat> ropeBase,
    const std::string &position, HeadView &q, HeadView &k, HeadView &v) {
  int64_t d = heads * dk;
  std::string stride = seq.expr + " * " + num(3 * d);
  q = {qkv, stride, dk, 3 * d};
  k = {qkv + " + " + num(d), stride, dk, 3 * d};
  v = {qkv + " + " + num(2 * d), stride, dk, 3 * d};
  if (!rope)
    return;
  float base = ropeBaseOrDefault(ropeBase);
  emitRotary(q, batch.expr, seq.expr, seq.max, heads, dk, *rope, base,
             position);
  emitRotary(k, batch.expr, seq.expr, seq.max, heads, dk, *rope, base,
             position);
}

LogicalResult FunctionEmitter::emitFlashAttention(FlashAttentionOp op) {
  Buffer qkv = buffers[op.getQkv()];
  if (qkv.dims.size() != 3)
    return op.emitError("the Highway backend expects [batch, seq, 3*d_model]");
  int64_t d = op.getQkv().getType().getDimSize(2) / 3;
  int64_t heads = op.getNumHeads(), dk = d / heads;
  const Dim &batch = qkv.dims[0], &seq = qkv.dims[1];
  std::string rows = product(ArrayRef<Dim>(qkv.dims).take_front(2));
  std::string rowsIn = qkv.ptr;
  // Rotary positions rotate the queries and keys where they are: only in a
  // buffer that no other op reads and that is this function's own.
  if (op.getRope() &&
      !(op.getQkv().hasOneUse() && frameValues.count(op.getQkv()))) {
    rowsIn = scratch("qkv", rows + " * " + num(3 * d),
                     maxProduct(ArrayRef<Dim>(qkv.dims)));
    os << "std::memcpy(" << rowsIn << ", " << qkv.ptr << ", sizeof(float) * "
       << rows << " * " << 3 * d << ");\n";
  }
  HeadView q, k, v;
  emitStackedHeads(rowsIn, batch, seq, heads, dk, op.getRope(),
                   op.getRopeBase(), "0", q, k, v);
  Buffer out = allocate(op.getResult(), {batch, seq, staticDim(d)});
  HeadView o{out.ptr, seq.expr + " * " + num(d), dk, d};
  AttentionTiling tiling = emitAttentionCore(
      op.getScore(), op.getCausal(), batch.expr, batch.max, seq.expr, seq.max,
      seq.expr, seq.max, heads, dk, q, k, v, o, op.getScoreParams(), "0", "", 0,
      op.getTilingAttr());
  if (facts.remarks) {
    std::string text;
    llvm::raw_string_ostream what(text);
    if (op.getRope())
      what << "rotary positions applied to Q and K "
           << (rowsIn == qkv.ptr ? "in place"
                                 : "in a copy of the rows (other "
                                   "ops read them too)")
           << "; ";
    describeAttentionCore(what, op.getScore(), op.getCausal(), tiling);
    remark(op, text);
  }
  return success();
}

void FunctionEmitter::describeAttentionCore(llvm::raw_ostream &what,
                                            ScoreKind score, bool causal,
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
  if (causal)
    what << "; causal mask in the loop bounds: each query row stops at its "
            "own position, no key above the diagonal is scored";
}

std::string
FunctionEmitter::describeAttentionFusion(MultiHeadAttentionOp op,
                                         const AttentionTiling &tiling) {
  std::string text;
  llvm::raw_string_ostream what(text);
  if (op.isSelfAttention())
    what << "Q, K and V projections fused into one GEMM over the stacked "
            "in_proj weight";
  else if (op.getMemory())
    what << "Q projected by one GEMM over in_proj's first d_model rows, K and "
            "V of the memory fused into one GEMM over the other 2 x d_model";
  else
    what << "Q projected by one GEMM over in_proj's first d_model rows; K and "
            "V read from the cache (projected when it was filled)";
  if (op.getRope())
    what << "; rotary positions applied to Q and K in place";
  if (op.getCache() && !op.getCacheReadOnly())
    what << "; the new keys and values appended to the cache";
  what << "; ";
  describeAttentionCore(what, op.getScore(), op.getCausal(), tiling);
  what << "; out_proj one GEMM, its bias added as each tile is stored";
  return text;
}

} // namespace tfm::hwy
