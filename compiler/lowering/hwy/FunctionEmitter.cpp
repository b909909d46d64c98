//===- FunctionEmitter.cpp - one func.func -> Highway C++ -----------------===//
//
// Every tfm op becomes loops with its shapes baked in; the innermost vector
// loops are the runtime's micro-kernels (runtime/include/tfm/runtime/
// kernels/*-inl.h, namespace `k` in generated code). Rows are spread over the
// thread pool in a fixed blocking, so results do not depend on the number
// of threads. Batch and sequence lengths are run-time values.
//
//===----------------------------------------------------------------------===//

#include "FunctionEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace tfm::hwy {

namespace {

constexpr size_t kAlignment = 64;

size_t alignedBytes(int64_t floats) {
  size_t bytes = static_cast<size_t>(floats) * sizeof(float);
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

std::string num(int64_t v) { return std::to_string(v); }

/// A float literal that reads back to exactly `v`.
std::string floatLiteral(float v) {
  return llvm::formatv("{0:e9}f", static_cast<double>(v)).str();
}

Dim staticDim(int64_t v) { return {num(v), v, true}; }

/// Replaces parameter names by the caller's expressions.
Dim substitute(const Dim &dim, const llvm::StringMap<Dim> &map) {
  if (dim.isStatic)
    return dim;
  auto it = map.find(dim.expr);
  return it == map.end() ? dim : it->second;
}

} // namespace

std::string product(ArrayRef<Dim> dims) {
  if (dims.empty())
    return "1";
  SmallVector<std::string> parts;
  for (const Dim &d : dims)
    parts.push_back(d.expr);
  return dims.size() == 1 ? parts[0] : "(" + llvm::join(parts, " * ") + ")";
}

int64_t maxProduct(ArrayRef<Dim> dims) {
  int64_t p = 1;
  for (const Dim &d : dims)
    p *= d.max;
  return p;
}

std::string FunctionEmitter::fresh(StringRef hint) {
  return (hint + std::to_string(counter++)).str();
}

Buffer FunctionEmitter::allocate(Value value, Dims dims) {
  Buffer buffer{"", std::move(dims)};
  auto it = resultIndex.find(value);
  if (it != resultIndex.end()) {
    buffer.ptr = resultPtrs[it->second];
  } else {
    buffer.ptr = fresh("v");
    os << "float *" << buffer.ptr << " = arena.take(" << product(buffer.dims)
       << ");\n";
    ownBytes += alignedBytes(maxProduct(buffer.dims));
  }
  buffers[value] = buffer;
  return buffer;
}

std::string FunctionEmitter::scratch(StringRef hint, const std::string &count,
                                     int64_t maxCount) {
  std::string name = fresh(hint);
  os << "float *" << name << " = arena.take(" << count << ");\n";
  ownBytes += alignedBytes(maxCount);
  return name;
}

//===----------------------------------------------------------------------===//
// Signature and body
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitSignature(bool isEntry) {
  FunctionType type = func.getFunctionType();
  // Which values the function returns, so they are computed in place.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    resultIndex.try_emplace(v, i);
    resultPtrs.push_back(isEntry ? "out" : "result" + num(i));
  }
  if (isEntry && type.getNumResults() != 1)
    return func.emitError("the entry point must return one tensor");

  // Dynamic sizes first, then pointers: the order emitCall passes them in.
  SmallVector<std::string> params, pointerParams, flopParams, prologue;
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto tensor = dyn_cast<RankedTensorType>(arg.getType());
    if (!tensor)
      return func.emitError("argument ") << i << " is not a ranked tensor";
    bool isTokens = tensor.getElementType().isInteger(32);
    std::string ptr = "a" + num(i);
    Dims dims;
    for (int64_t d = 0; d < tensor.getRank(); ++d) {
      if (!tensor.isDynamicDim(d)) {
        dims.push_back(staticDim(tensor.getDimSize(d)));
        continue;
      }
      // The frontend's tensors are [batch, seq, ...]: only those two dims
      // are dynamic, and their maxima are the compiled limits.
      if (d > 1)
        return func.emitError("argument ")
               << i << " has a dynamic dimension " << d
               << "; only batch (0) and sequence (1) may be dynamic";
      int64_t max = d == 0 ? facts.maxBatch : facts.maxSeqLen;
      std::string name;
      if (isEntry) {
        name = llvm::formatv("in{0}_{1}", i, d == 0 ? "batch" : "seq").str();
        prologue.push_back(llvm::formatv("const int64_t {0} = in[{1}].{2};",
                                         name, i, d == 0 ? "batch" : "seq")
                               .str());
      } else {
        name = llvm::formatv("a{0}_d{1}", i, d).str();
        params.push_back("int64_t " + name);
        flopParams.push_back("int64_t " + name);
        summary.dynamicArgDims.push_back({unsigned(i), unsigned(d)});
      }
      dims.push_back({name, max, false});
    }
    if (isEntry) {
      prologue.push_back(llvm::formatv("const {0} *{1} = static_cast<const "
                                       "{0} *>(in[{2}].data);",
                                       isTokens ? "int32_t" : "float", ptr, i)
                             .str());
    } else {
      if (isTokens)
        return func.emitError("token ids are only supported as inputs of the "
                              "entry point");
      pointerParams.push_back("const float *" + ptr);
    }
    buffers[arg] = {ptr, dims};
  }
  llvm::append_range(params, pointerParams);
  for (unsigned i = 0; !isEntry && i < type.getNumResults(); ++i)
    params.push_back("float *result" + num(i));

  std::string name = func.getSymName().str();
  summary.name = name;
  if (isEntry) {
    os << "void forward(const float *const *w, const tfm::rt::InputView *in, "
          "float *out, tfm::rt::Arena &arena, tfm::rt::ThreadPool &pool) {\n";
    flopsOs << "static double matmulFlops(const tfm::rt::InputView *in) {\n";
  } else {
    params.insert(params.begin(),
                  {"tfm::rt::Arena &arena", "tfm::rt::ThreadPool &pool"});
    os << "static void " << name << "(" << llvm::join(params, ", ") << ") {\n";
    flopsOs << "static double flops_" << name << "("
            << llvm::join(flopParams, ", ") << ") {\n";
  }
  os.indent();
  flopsOs.indent();
  for (const std::string &line : prologue) {
    os << line << "\n";
    if (StringRef(line).contains("int64_t"))
      flopsOs << line << "\n";
  }
  return success();
}

LogicalResult FunctionEmitter::emit(bool isEntry) {
  if (func.getBody().getBlocks().size() != 1)
    return func.emitError("the Highway backend needs single-block functions");
  if (failed(emitSignature(isEntry)))
    return failure();
  os << "const size_t arenaMark = arena.mark();\n";
  for (Operation &op : func.getBody().front())
    if (failed(emitOp(op)))
      return failure();
  os << "arena.release(arenaMark);\n";
  os.unindent();
  os << "}\n\n";

  flopsOs << "double flops = 0;\n";
  for (const std::string &term : flopTerms)
    flopsOs << "flops += " << term << ";\n";
  flopsOs << "return flops;\n";
  flopsOs.unindent();
  flopsOs << "}\n\n";

  summary.peakBytes = std::max(summary.peakBytes, ownBytes);
  summaries[summary.name] = summary;
  return success();
}

LogicalResult FunctionEmitter::emitOp(Operation &op) {
  if (auto weight = dyn_cast<WeightOp>(op)) {
    auto it = facts.paramIndex.find(weight.getParam());
    if (it == facts.paramIndex.end())
      return weight.emitError("unknown parameter");
    Dims dims;
    for (int64_t d : weight.getType().getShape())
      dims.push_back(staticDim(d));
    buffers[weight.getResult()] = {"w[" + num(it->second) + "]", dims};
    return success();
  }
  os << "// " << op.getName() << " at " << op.getLoc() << "\n";
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](LinearOp o) { return emitLinear(o); })
      .Case([&](EmbeddingOp o) { return emitEmbedding(o); })
      .Case([&](PositionEncodingOp o) { return emitPositions(o); })
      .Case([&](MultiHeadAttentionOp o) { return emitMultiHeadAttention(o); })
      .Case([&](LayerNormOp o) { return emitLayerNorm(o); })
      .Case([&](FeedForwardOp o) { return emitFeedForward(o); })
      .Case([&](AddOp o) { return emitAdd(o); })
      .Case([&](func::CallOp o) { return emitCall(o); })
      .Case([&](func::ReturnOp o) { return emitReturn(o); })
      .Default([&](Operation *o) {
        return o->emitError("the Highway backend cannot lower '")
               << o->getName() << "' yet";
      });
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

void FunctionEmitter::emitMatmul(StringRef what, const std::string &rows,
                                 const std::string &rowsMax,
                                 const std::string &x, int64_t xStride,
                                 const std::string &w, int64_t n, int64_t k,
                                 const std::string &bias,
                                 const std::string &out, int64_t outStride,
                                 std::optional<Activation> act) {
  (void)rowsMax;
  // Pointer expressions may be sums ("w + 1024"): index them parenthesised.
  auto paren = [](const std::string &e) {
    return e.find(' ') == std::string::npos ? e : "(" + e + ")";
  };
  std::string plusBias = bias.empty() ? "" : " + " + paren(bias) + "[n]";
  os << "{ // " << what << ": [" << rows << ", " << k << "] x [" << n << ", "
     << k << "]^T -> [" << rows << ", " << n << "]\n";
  os.indent();
  os << "const int64_t rows = " << rows << ";\n";
  // Blocks of four rows share each weight row's loads (k::Dot4).
  os << "pool.parallelFor((rows + 3) / 4, [&](int64_t block) {\n";
  os.indent();
  os << "const int64_t r0 = block * 4;\n";
  os << "const int64_t rEnd = std::min<int64_t>(r0 + 4, rows);\n";
  os << "if (rEnd - r0 == 4) {\n";
  os.indent();
  os << "for (int64_t n = 0; n < " << n << "; ++n) {\n";
  os.indent();
  os << "float acc[4];\n";
  os << "k::Dot4(" << x << " + r0 * " << xStride << ", " << xStride << ", " << w
     << " + n * " << k << ", " << k << ", acc);\n";
  os << "for (int64_t r = 0; r < 4; ++r)\n";
  os << "  " << paren(out) << "[(r0 + r) * " << outStride << " + n] = acc[r]"
     << plusBias << ";\n";
  os.unindent();
  os << "}\n";
  os.unindent();
  os << "} else {\n";
  os.indent();
  os << "for (int64_t r = r0; r < rEnd; ++r)\n";
  os << "  for (int64_t n = 0; n < " << n << "; ++n)\n";
  os << "    " << paren(out) << "[r * " << outStride << " + n] = k::Dot(" << x
     << " + r * " << xStride << ", " << w << " + n * " << k << ", " << k << ")"
     << plusBias << ";\n";
  os.unindent();
  os << "}\n";
  if (act) {
    StringRef kernel = *act == Activation::Relu   ? "ReluInPlace"
                       : *act == Activation::Gelu ? "GeluInPlace"
                                                  : "GeluTanhInPlace";
    os << "for (int64_t r = r0; r < rEnd; ++r)\n";
    os << "  k::" << kernel << "(" << out << " + r * " << outStride << ", " << n
       << ");\n";
  }
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
  addFlops(llvm::formatv("2.0 * double({0}) * {1} * {2}", rows, n, k).str());
}

LogicalResult FunctionEmitter::emitLinear(LinearOp op) {
  const Buffer &x = buffers[op.getInput()];
  const Buffer &w = buffers[op.getWeight()];
  int64_t n = op.getWeight().getType().getDimSize(0);
  int64_t k = op.getWeight().getType().getDimSize(1);
  ArrayRef<Dim> lead = ArrayRef<Dim>(x.dims).drop_back();
  Dims outDims(lead.begin(), lead.end());
  outDims.push_back(staticDim(n));
  std::string bias = op.getBias() ? buffers[op.getBias()].ptr : "";
  Buffer out = allocate(op.getResult(), outDims);
  emitMatmul("linear", product(lead), num(maxProduct(lead)), x.ptr, k, w.ptr, n,
             k, bias, out.ptr, n, std::nullopt);
  return success();
}

//===----------------------------------------------------------------------===//
// Embeddings and positions
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitEmbedding(EmbeddingOp op) {
  const Buffer &ids = buffers[op.getIds()];
  const Buffer &table = buffers[op.getTable()];
  int64_t d = op.getTable().getType().getDimSize(1);
  Dims outDims = ids.dims;
  outDims.push_back(staticDim(d));
  Buffer out = allocate(op.getResult(), outDims);
  os << "pool.parallelFor(" << product(ids.dims) << ", [&](int64_t r) {\n";
  os << "  k::Scale(" << floatLiteral(op.getScale().convertToFloat()) << ", "
     << table.ptr << " + int64_t(" << ids.ptr << "[r]) * " << d << ", "
     << out.ptr << " + r * " << d << ", " << d << ");\n";
  os << "});\n";
  return success();
}

LogicalResult FunctionEmitter::emitPositions(PositionEncodingOp op) {
  const Buffer &x = buffers[op.getInput()];
  int64_t d = op.getInput().getType().getShape().back();
  Buffer out = allocate(op.getResult(), x.dims);
  ArrayRef<Dim> rows = ArrayRef<Dim>(x.dims).drop_back();
  const Dim &seq = x.dims[x.dims.size() - 2];
  os << "{\n";
  os.indent();
  os << "const int64_t seq = " << seq.expr << ";\n";
  os << "pool.parallelFor(" << product(rows) << ", [&](int64_t r) {\n";
  os.indent();
  if (op.getKind() == PositionKind::Learned) {
    os << "k::Add(" << x.ptr << " + r * " << d << ", "
       << buffers[op.getTable()].ptr << " + (r % seq) * " << d << ", "
       << out.ptr << " + r * " << d << ", " << d << ");\n";
  } else {
    // PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(same), in double.
    os << "const double pos = double(r % seq);\n";
    os << "for (int64_t c = 0; c < " << d << "; ++c) {\n";
    os << "  const double angle = pos * std::pow(10000.0, -double(c - c % 2) / "
       << d << ".0);\n";
    os << "  const float pe = float(c % 2 == 0 ? std::sin(angle) : "
          "std::cos(angle));\n";
    os << "  " << out.ptr << "[r * " << d << " + c] = " << x.ptr << "[r * " << d
       << " + c] + pe;\n";
    os << "}\n";
  }
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

void FunctionEmitter::emitRotary(const HeadView &view, const std::string &batch,
                                 const std::string &seq, int64_t maxSeq,
                                 int64_t heads, int64_t dk, RopeStyle style,
                                 float base) {
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
  os << "    const double angle = double(s) * std::pow(double("
     << floatLiteral(base) << "), -2.0 * double(i) / " << dk << ".0);\n";
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

void FunctionEmitter::emitAttentionCore(
    ScoreKind score, bool causal, const std::string &batch, int64_t maxBatch,
    const std::string &sq, int64_t maxSq, const std::string &sk, int64_t maxSk,
    int64_t heads, int64_t dk, const HeadView &q, const HeadView &k,
    const HeadView &v, const HeadView &out, ValueRange scoreParams) {
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

  // One query row per task: scores, online softmax and the weighted sum of
  // value rows in one pass over the keys; the score matrix is never stored.
  os << "pool.parallelFor(batch * " << heads << " * sq, [&](int64_t t) {\n";
  os.indent();
  os << "const int64_t b = t / (" << heads << " * sq), h = (t / sq) % " << heads
     << ", i = t % sq;\n";
  os << "const float *q = " << queryRow << ";\n";
  os << "float *o = " << at(out, "i") << ";\n";
  os << "k::Zero(o, " << dk << ");\n";
  os << "k::OnlineSoftmax state;\n";
  os << "const int64_t keys = "
     << (causal ? "std::min<int64_t>(sk, i + 1)" : "sk") << ";\n";
  os << "for (int64_t j = 0; j < keys; ++j)\n";
  os << "  k::OnlineSoftmaxStep(state, " << scoreExpr << ", " << at(v, "j")
     << ", o, " << dk << ");\n";
  os << "k::Scale(1.0f / state.sum, o, o, " << dk << ");\n";
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
}

LogicalResult FunctionEmitter::emitMultiHeadAttention(MultiHeadAttentionOp op) {
  const Buffer &x = buffers[op.getQuery()];
  int64_t rank = x.dims.size();
  if (rank != 3)
    return op.emitError("the Highway backend expects [batch, seq, d_model]");
  int64_t d = op.getQuery().getType().getDimSize(2);
  int64_t heads = op.getNumHeads(), dk = d / heads;
  const Dim &batch = x.dims[0], &seq = x.dims[1];
  std::string rows = product(ArrayRef<Dim>(x.dims).take_front(2));
  int64_t maxRows = batch.max * seq.max;
  std::string wIn = buffers[op.getInProjWeight()].ptr;
  std::string bIn = buffers[op.getInProjBias()].ptr;

  HeadView q, k, v;
  Dim keySeq = seq;
  if (!op.getMemory()) {
    std::string qkv =
        scratch("qkv", rows + " * " + num(3 * d), maxRows * 3 * d);
    emitMatmul("in_proj (Q, K, V)", rows, num(maxRows), x.ptr, d, wIn, 3 * d, d,
               bIn, qkv, 3 * d, std::nullopt);
    std::string stride = seq.expr + " * " + num(3 * d);
    q = {qkv, stride, dk, 3 * d};
    k = {qkv + " + " + num(d), stride, dk, 3 * d};
    v = {qkv + " + " + num(2 * d), stride, dk, 3 * d};
    if (std::optional<RopeStyle> rope = op.getRope()) {
      float base =
          op.getRopeBase() ? op.getRopeBase()->convertToFloat() : 10000.0f;
      emitRotary(q, batch.expr, seq.expr, seq.max, heads, dk, *rope, base);
      emitRotary(k, batch.expr, seq.expr, seq.max, heads, dk, *rope, base);
    }
  } else {
    const Buffer &mem = buffers[op.getMemory()];
    keySeq = mem.dims[1];
    std::string memRows = product(ArrayRef<Dim>(mem.dims).take_front(2));
    int64_t maxMemRows = mem.dims[0].max * keySeq.max;
    std::string qp = scratch("q", rows + " * " + num(d), maxRows * d);
    emitMatmul("in_proj (Q)", rows, num(maxRows), x.ptr, d, wIn, d, d, bIn, qp,
               d, std::nullopt);
    std::string kv =
        scratch("kv", memRows + " * " + num(2 * d), maxMemRows * 2 * d);
    emitMatmul("in_proj (K, V) of memory", memRows, num(maxMemRows), mem.ptr, d,
               wIn + " + " + num(d * d), 2 * d, d, bIn + " + " + num(d), kv,
               2 * d, std::nullopt);
    q = {qp, seq.expr + " * " + num(d), dk, d};
    std::string stride = keySeq.expr + " * " + num(2 * d);
    k = {kv, stride, dk, 2 * d};
    v = {kv + " + " + num(d), stride, dk, 2 * d};
  }
  std::string merged = scratch("heads", rows + " * " + num(d), maxRows * d);
  HeadView o{merged, seq.expr + " * " + num(d), dk, d};
  emitAttentionCore(op.getScore(), op.getCausal(), batch.expr, batch.max,
                    seq.expr, seq.max, keySeq.expr, keySeq.max, heads, dk, q, k,
                    v, o, op.getScoreParams());
  Buffer out = allocate(op.getResult(), x.dims);
  emitMatmul("out_proj", rows, num(maxRows), merged, d,
             buffers[op.getOutProjWeight()].ptr, d, d,
             buffers[op.getOutProjBias()].ptr, out.ptr, d, std::nullopt);
  return success();
}

//===----------------------------------------------------------------------===//
// Norms, feed-forward, residual
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitLayerNorm(LayerNormOp op) {
  const Buffer &x = buffers[op.getInput()];
  int64_t d = op.getInput().getType().getShape().back();
  Buffer out = allocate(op.getResult(), x.dims);
  os << "pool.parallelFor(" << product(ArrayRef<Dim>(x.dims).drop_back())
     << ", [&](int64_t r) {\n";
  os << "  k::LayerNormRow(" << x.ptr << " + r * " << d << ", "
     << buffers[op.getGamma()].ptr << ", " << buffers[op.getBeta()].ptr << ", "
     << floatLiteral(op.getEps().convertToFloat()) << ", " << d << ", "
     << out.ptr << " + r * " << d << ");\n";
  os << "});\n";
  return success();
}

LogicalResult FunctionEmitter::emitFeedForward(FeedForwardOp op) {
  const Buffer &x = buffers[op.getInput()];
  int64_t d = op.getInput().getType().getShape().back();
  int64_t ff = op.getW1().getType().getDimSize(0);
  ArrayRef<Dim> lead = ArrayRef<Dim>(x.dims).drop_back();
  std::string rows = product(lead);
  int64_t maxRows = maxProduct(lead);
  std::string hidden = scratch("hidden", rows + " * " + num(ff), maxRows * ff);
  emitMatmul("linear1 + activation", rows, num(maxRows), x.ptr, d,
             buffers[op.getW1()].ptr, ff, d, buffers[op.getB1()].ptr, hidden,
             ff, op.getActivation());
  Buffer out = allocate(op.getResult(), x.dims);
  emitMatmul("linear2", rows, num(maxRows), hidden, ff, buffers[op.getW2()].ptr,
             d, ff, buffers[op.getB2()].ptr, out.ptr, d, std::nullopt);
  return success();
}

LogicalResult FunctionEmitter::emitAdd(AddOp op) {
  const Buffer &a = buffers[op.getLhs()];
  const Buffer &b = buffers[op.getRhs()];
  Dims dims = a.dims;
  Buffer out = allocate(op.getResult(), dims);
  int64_t width = op.getType().getShape().back();
  os << "pool.parallelFor(" << product(ArrayRef<Dim>(dims).drop_back())
     << ", [&](int64_t r) {\n";
  os << "  k::Add(" << a.ptr << " + r * " << width << ", " << b.ptr << " + r * "
     << width << ", " << out.ptr << " + r * " << width << ", " << width
     << ");\n";
  os << "});\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Calls and returns
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitCall(func::CallOp op) {
  auto it = summaries.find(op.getCallee());
  if (it == summaries.end())
    return op.emitError("callee '")
           << op.getCallee() << "' must be defined before its callers";
  const FunctionSummary &callee = it->second;

  llvm::StringMap<Dim> dimMap;
  SmallVector<std::string> args = {"arena", "pool"}, flopArgs;
  for (auto [argIndex, dimIndex] : callee.dynamicArgDims) {
    const Dim &dim = buffers[op.getOperand(argIndex)].dims[dimIndex];
    dimMap[llvm::formatv("a{0}_d{1}", argIndex, dimIndex).str()] = dim;
    args.push_back(dim.expr);
    flopArgs.push_back(dim.expr);
  }
  for (Value operand : op.getOperands())
    args.push_back(buffers[operand].ptr);
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    Dims dims;
    for (const Dim &d : callee.resultDims[i])
      dims.push_back(substitute(d, dimMap));
    args.push_back(allocate(result, dims).ptr);
  }
  summary.peakBytes = std::max(summary.peakBytes, ownBytes + callee.peakBytes);
  os << callee.name << "(" << llvm::join(args, ", ") << ");\n";
  addFlops("flops_" + callee.name + "(" + llvm::join(flopArgs, ", ") + ")");
  return success();
}

LogicalResult FunctionEmitter::emitReturn(func::ReturnOp op) {
  for (auto [i, value] : llvm::enumerate(op.getOperands())) {
    const Buffer &b = buffers[value];
    summary.resultDims.push_back(b.dims);
    // A returned argument (or a value returned twice) is not computed in
    // place: copy it.
    if (b.ptr != resultPtrs[i])
      os << "std::memcpy(" << resultPtrs[i] << ", " << b.ptr
         << ", sizeof(float) * " << product(b.dims) << ");\n";
  }
  return success();
}

} // namespace tfm::hwy
