//===- PerformerEmitter.cpp - FAVOR+ features, linear attention -> C++ ----===//
//
// The performer part of FunctionEmitter: tfm.feature_map (each head row's
// positive random features, one task per block of rows) and
// tfm.linear_attention (each sequence and head's sums over the keys'
// features, made once and read by every query row, or carried from block
// to block of query rows when causal), which writes its heads merged for
// tfm.merge_heads. Both are register-tiled products (features-inl.h's
// MultiplyAdd).
//
//===----------------------------------------------------------------------===//

#include "FunctionEmitter.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace tfm::hwy {

LogicalResult FunctionEmitter::emitFeatureMap(FeatureMapOp op) {
  auto it = heads.find(op.getInput());
  if (it == heads.end())
    return op.emitError("the Highway backend maps the features of per-head "
                        "rows (tfm.split_heads, tfm.rotary, tfm.cache_read)");
  Heads in = it->second;
  RankedTensorType w = op.getFeatures().getType();
  int64_t count = w.getDimSize(0), features = w.getDimSize(1), dk = in.dk;
  if (count % in.heads != 0)
    return op.emitError("the input's heads must divide the features' heads");
  // Grouped-query keys: head h's features read key head h / group.
  int64_t group = count / in.heads;
  if (group != 1)
    in.view.head = "h / " + num(group);
  // Rows a task maps. When a call maps at least kFeatureMapTransposeRows
  // rows, each W_h is transposed once (dk rows of M, the scratch slot) and
  // a task's rows are one register-tiled product with it, the features
  // along the lanes; fewer rows (a decode step's) take each row's dot
  // products with the rows of W_h. Whether any call may map that many is
  // the op's scratch model's decision (ScratchBuffers.cpp): without a
  // features_transposed slot in the plan, no such branch.
  constexpr int64_t kRowBlock = 16;
  const int64_t kBlockedRows = int64_t(kFeatureMapTransposeRows);
  const bool mayBlock = planned(FrameBuffer::FeaturesTransposed);
  Buffer out = allocate(op.getResult(), {in.batch, staticDim(count), in.seq,
                                         staticDim(features)});
  Heads mapped{{out.ptr, in.seq.expr + " * " + num(count * features),
                in.seq.expr + " * " + num(features), features},
               in.batch,
               in.seq,
               count,
               features};
  std::string wPtr = buffers[op.getFeatures()].ptr;
  std::string transposed =
      mayBlock ? scratch(FrameBuffer::FeaturesTransposed,
                         num(count * features * dk), count * features * dk)
               : std::string();
  // phi(x) = exp(x W^T - |x|^2 / 2) / sqrt(M) of x = row / dk^(1/4): the
  // 1 / sqrt(M) is the shift's log M / 2.
  double scale = std::pow(double(dk), -0.25);
  double logRoot = 0.5 * std::log(double(features));
  os << "{ // feature map (performer): " << features
     << " positive random features of each head row / dk^(1/4)\n";
  os.indent();
  os << "const int64_t n = " << in.seq.expr << ", blocks = (n + "
     << kRowBlock - 1 << ") / " << kRowBlock << ";\n";
  if (mayBlock) {
    os << "const bool blocked = " << in.batch.expr << " * n >= " << kBlockedRows
       << ";\n";
    os << "if (blocked)\n";
    os << "  pool.parallelFor(" << count << ", [&](int64_t h) {\n";
    os << "    k::TransposeRows(" << wPtr << " + h * " << features * dk << ", "
       << dk << ", " << features << ", " << dk << ", " << transposed
       << " + h * " << features * dk << ", " << features << ");\n";
    os << "  });\n";
  }
  os << "pool.parallelFor(" << in.batch.expr << " * " << count
     << " * blocks, [&](int64_t t) {\n";
  os.indent();
  os << "const int64_t b = t / (" << count << " * blocks), h = (t / blocks) % "
     << count << ", i0 = (t % blocks) * " << kRowBlock << ";\n";
  os << "const int64_t rows = std::min<int64_t>(" << kRowBlock
     << ", n - i0);\n";
  os << "HWY_ALIGN float x[" << kRowBlock * dk << "];\n";
  os << "float shifts[" << kRowBlock << "];\n";
  os << "for (int64_t i = i0; i < i0 + rows; ++i) {\n";
  os.indent();
  os << "const float *row = " << in.view.at("i") << ";\n";
  os << "float *xi = x + (i - i0) * " << dk << ";\n";
  if (in.view.featureStride == 1) {
    os << "k::Scale(" << floatLiteral(float(scale)) << ", row, xi, " << dk
       << ");\n";
  } else {
    // Keys a cache holds transposed: one feature every featureStride.
    os << "for (int64_t f = 0; f < " << dk << "; ++f)\n";
    os << "  xi[f] = " << floatLiteral(float(scale)) << " * row[f * "
       << in.view.featureStride << "];\n";
  }
  os << "shifts[i - i0] = 0.5f * k::Dot(xi, xi, " << dk << ") + "
     << floatLiteral(float(logRoot)) << ";\n";
  os.unindent();
  os << "}\n";
  if (mayBlock) {
    os << "if (blocked)\n";
    os << "  k::PositiveFeatureRows(x, rows, " << transposed << " + h * "
       << features * dk << ", " << features << ", " << dk << ", shifts, "
       << mapped.view.at("i0") << ", " << features << ");\n";
    os << "else\n  ";
  }
  os << "for (int64_t i = i0; i < i0 + rows; ++i)\n";
  os << "  k::PositiveFeatures(x + (i - i0) * " << dk << ", " << wPtr
     << " + h * " << features * dk << ", " << features << ", " << dk
     << ", shifts[i - i0], " << mapped.view.at("i") << ");\n";
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
  heads[op.getResult()] = mapped;
  remark(op, "performer: " + std::to_string(features) +
                 " features of each head row, in tasks of " +
                 std::to_string(kRowBlock) + " rows: " +
                 (mayBlock ? "from " + std::to_string(kBlockedRows) +
                                 " rows a call, each W_h transposed once and "
                                 "a task's rows one register-tiled product "
                                 "with it; fewer, each row's dot products "
                                 "with W_h's rows"
                           : "each row's dot products with W_h's rows (a "
                             "call maps fewer than " +
                                 std::to_string(kBlockedRows) +
                                 " rows: no transposed W_h)") +
                 "; then exp" +
                 (in.view.featureStride == 1
                      ? std::string()
                      : ", the keys read transposed where the cache holds "
                        "them"));
  return success();
}

LogicalResult FunctionEmitter::emitLinearAttention(LinearAttentionOp op) {
  FailureOr<Heads> queryRows =
      headRows(op, op.getQueryFeatures(), "attends with");
  FailureOr<Heads> keyRows = headRows(op, op.getKeyFeatures(), "attends with");
  FailureOr<Heads> valueRows = headRows(op, op.getValue(), "attends with");
  if (failed(queryRows) || failed(keyRows) || failed(valueRows))
    return failure();
  if (!llvm::all_of(op->getUsers(),
                    [](Operation *user) { return isa<MergeHeadsOp>(user); }))
    return op.emitError("the Highway backend stores tfm.linear_attention's "
                        "heads merged: only tfm.merge_heads may read its "
                        "result");
  const Heads &q = *queryRows, &k = *keyRows;
  Heads v = *valueRows;
  int64_t count = q.heads, features = q.dk, dv = v.dk;
  if (count % v.heads != 0)
    return op.emitError("the values' heads must divide the features' heads");
  if (int64_t group = count / v.heads; group != 1)
    v.view.head = "h / " + num(group);
  int64_t d = count * dv, perTask = features * (dv + 1);
  Buffer out = allocate(op.getResult(), {q.batch, q.seq, staticDim(d)});
  HeadView o{out.ptr, q.seq.expr + " * " + num(d), num(dv), d};
  bool causal = op.getCausal();
  os << "{ // linear attention (performer"
     << (causal ? ", causal: the sums carried from block to block of rows" : "")
     << "): each head's sums over the keys' " << features
     << " features, then each query row's products with them\n";
  os.indent();
  os << "const int64_t sq = " << q.seq.expr << ", sk = " << k.seq.expr << ";\n";
  // A decode step's sums live in the cache from call to call; otherwise
  // each task's are scratch.
  TypedValue<KVCacheType> carried = op.getSums();
  std::string sums = carried
                         ? buffers[carried].ptr
                         : scratch(FrameBuffer::FeatureSums,
                                   q.batch.expr + " * " + num(count * perTask),
                                   q.batch.max * count * perTask);
  std::string offset =
      op.getQueryOffset() ? scalars[op.getQueryOffset()] : std::string("0");
  os << "pool.parallelFor(" << q.batch.expr << " * " << count
     << ", [&](int64_t t) {\n";
  os.indent();
  os << "const int64_t b = t / " << count << ", h = t % " << count << ";\n";
  if (carried) {
    // Where the cache's type puts this sequence and head's sums.
    KVCacheType type = carried.getType();
    std::array<int64_t, 4> rows = type.getSumsStrides();
    std::array<int64_t, 3> totals = type.getFeatureSumsStrides();
    os << "float *sums = " << sums << " + b * " << rows[0] << " + h * "
       << rows[1] << ", *featureSums = " << sums << " + "
       << type.getFeatureSumsOffset() << " + b * " << totals[0] << " + h * "
       << totals[1] << ";\n";
  } else {
    os << "float *sums = " << sums << " + t * " << perTask
       << ", *featureSums = sums + " << features * dv << ";\n";
  }
  // The cache's sums are of the positions before offset: none at 0 (what
  // it holds then is an earlier sequence's).
  if (carried)
    os << "if (" << offset << " == 0)\n  ";
  os << "k::Zero(sums, " << perTask << ");\n";
  // Keys are added a block of kKeyBlock at a time (a block's value rows
  // stay in L1 while each register tile of the sums takes them); causal
  // query rows are applied a block of kCausalRows at a time: the sums of
  // the keys before the block's first row's own, then within the block
  // each row's own keys up to its own, as dot products.
  constexpr int64_t kKeyBlock = 128, kCausalRows = 16;
  auto addKeys = [&](StringRef first, const std::string &keys) {
    return "k::AddKeyFeatures(" + k.view.at(first) + ", " +
           num(k.view.rowStride) + ", " + v.view.at(first) + ", " +
           num(v.view.rowStride) + ", " + keys + ", " + num(features) + ", " +
           num(dv) + ", sums, featureSums);\n";
  };
  auto apply = [&](StringRef first, StringRef rows) {
    return "k::ApplyKeyFeatures(" + q.view.at(first) + ", " +
           num(q.view.rowStride) + ", " + rows.str() + ", sums, featureSums, " +
           num(features) + ", " + num(dv) + ", " + o.at(first) + ", " + num(d);
  };
  auto blockOf = [&](StringRef end, StringRef from) {
    return "std::min<int64_t>(" + num(kKeyBlock) + ", " + end.str() + " - " +
           from.str() + ")";
  };
  if (!causal) {
    os << "for (int64_t j0 = 0; j0 < sk; j0 += " << kKeyBlock << ")\n  "
       << addKeys("j0", blockOf("sk", "j0"));
    os << apply("0", "sq") << ");\n";
  } else {
    // Row i's sums are those of keys [0, min(sk, offset + i + 1)), each
    // key added once (carried sums hold the keys before offset already,
    // and this call's keys are its rows' own).
    std::string keyOffset = carried ? std::string("0") : offset;
    os << "int64_t added = 0;\n";
    os << "for (int64_t i0 = 0; i0 < sq; i0 += " << kCausalRows << ") {\n";
    os.indent();
    os << "const int64_t rows = std::min<int64_t>(" << kCausalRows
       << ", sq - i0);\n";
    os << "const int64_t first = std::min<int64_t>(sk, " << keyOffset
       << " + i0), last = std::min<int64_t>(sk, " << keyOffset
       << " + i0 + rows);\n";
    os << "for (; added < first; added += " << blockOf("first", "added")
       << ")\n  " << addKeys("added", blockOf("first", "added"));
    os << apply("i0", "rows") << ", " << k.view.at("first") << ", "
       << k.view.rowStride << ", " << v.view.at("first") << ", "
       << v.view.rowStride << ", last - first);\n";
    os.unindent();
    os << "}\n";
    if (carried) {
      // The cache's sums go on with every key of this call.
      os << "for (const int64_t end = std::min<int64_t>(sk, sq); added < end; "
            "added += "
         << blockOf("end", "added") << ")\n  "
         << addKeys("added", blockOf("end", "added"));
    }
  }
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
  remark(op, std::string("performer: linear attention, ") +
                 (causal ? "each head's sums over the keys' features "
                           "carried from block to block of " +
                               std::to_string(kCausalRows) +
                               " query rows (a block reads the sums of the "
                               "keys before it, then each row's own keys in "
                               "it as dot products)"
                         : "each head's sums over every key's features made "
                           "once, " +
                               std::to_string(kKeyBlock) +
                               " keys at a time, then read by every query "
                               "row") +
                 "; no score matrix, " + std::to_string(features) + " x " +
                 std::to_string(dv + 1) + " sums a head" +
                 (carried ? " kept in the cache from step to step (a step "
                            "costs the same at any position)"
                          : "") +
                 "; the heads written merged, as tfm.merge_heads reads "
                 "them");
  return success();
}

} // namespace tfm::hwy
