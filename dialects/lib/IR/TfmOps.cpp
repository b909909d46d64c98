//===- TfmOps.cpp - tfm operations: verifiers and type inference ----------===//
//
// Every shape rule of the dialect lives here. Dynamic dimensions (`?`) are
// accepted wherever a static one is expected; static ones must agree.
//
//===----------------------------------------------------------------------===//

#include "tfm/IR/TfmOps.h"

#include "TfmMaskSyntax.h"

#include "tfm/IR/TfmInterfaces.cpp.inc"
#include "tfm/IR/TfmTypeInterfaces.cpp.inc"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <string>
#include <utility>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Reports a shape error as "'tfm.x' op ...". Verifiers have the op;
/// inferReturnTypes runs inside verification with only a location, and
/// without one (a C++ builder probing types) stays silent.
class Diag {
public:
  explicit Diag(Operation *op) : op(op) {}
  Diag(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Args> LogicalResult fail(Args &&...args) {
    if (op) {
      InFlightDiagnostic d = op->emitOpError();
      (d << ... << std::forward<Args>(args));
    } else if (loc) {
      InFlightDiagnostic d = emitError(*loc) << "'" << opName << "' op ";
      (d << ... << std::forward<Args>(args));
    }
    return failure();
  }

private:
  Operation *op = nullptr;
  std::optional<Location> loc;
  StringRef opName;
};

bool isDynamic(int64_t dim) { return ShapedType::isDynamic(dim); }

bool dimsMatch(int64_t a, int64_t b) {
  return isDynamic(a) || isDynamic(b) || a == b;
}

/// The more precise of two matching dimensions.
int64_t refineDim(int64_t a, int64_t b) { return isDynamic(a) ? b : a; }

std::string formatDim(int64_t dim) {
  return isDynamic(dim) ? "?" : std::to_string(dim);
}

/// "[96, 32]", with "?" for dimensions left open.
std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += formatDim(dim);
  }
  return s + "]";
}

/// Dimension `i` of `type` if it has the expected `rank`, else dynamic: a
/// tensor of the wrong rank fixes nothing (its own check reports it).
int64_t dimOr(RankedTensorType type, int64_t rank, int64_t i) {
  return type && type.getRank() == rank ? type.getDimSize(i)
                                        : ShapedType::kDynamic;
}

/// The first static dimension among several that must all agree.
int64_t firstStatic(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (!isDynamic(d))
      return d;
  return ShapedType::kDynamic;
}

RankedTensorType tensorType(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

/// Checks `type` against `expected`, where a dynamic expected dimension
/// matches anything.
LogicalResult expectShape(Diag &diag, StringRef what, RankedTensorType type,
                          ArrayRef<int64_t> expected) {
  bool ok = type && type.getRank() == static_cast<int64_t>(expected.size());
  for (size_t i = 0; ok && i < expected.size(); ++i)
    ok = dimsMatch(type.getDimSize(i), expected[i]);
  if (ok)
    return success();
  return diag.fail(what, " must be ", formatShape(expected), ", got ",
                   Type(type));
}

LogicalResult expectRankAtLeast(Diag &diag, StringRef what,
                                RankedTensorType type, int64_t rank,
                                StringRef layout) {
  if (type && type.getRank() >= rank)
    return success();
  return diag.fail(what, " must be ", layout, " (rank >= ", rank, "), got ",
                   Type(type));
}

/// Checks the score parameters of `tfm.attention` and
/// `tfm.multi_head_attention` against `heads` heads of `dk` features.
LogicalResult verifyScoreParams(Diag &diag, ScoreKind kind, ValueRange params,
                                int64_t heads, int64_t dk) {
  size_t expected = 0;
  StringRef layout;
  if (kind == ScoreKind::Bilinear) {
    expected = 1;
    layout = " (weight [heads, dk, dk])";
  } else if (kind == ScoreKind::Additive) {
    expected = 3;
    layout = " (w_key [heads, A, dk], w_query [heads, A, dk], v [heads, A])";
  }
  if (params.size() != expected) {
    if (expected == 0)
      return diag.fail("score <", stringifyScoreKind(kind),
                       "> takes no parameters, got ", params.size());
    return diag.fail("score <", stringifyScoreKind(kind), "> takes ", expected,
                     " parameter(s)", layout, ", got ", params.size());
  }

  if (kind == ScoreKind::Bilinear)
    return expectShape(diag, "bilinear score weight", tensorType(params[0]),
                       {heads, dk, dk});
  if (kind != ScoreKind::Additive)
    return success();

  // Heads and the inner size A may be open in one tensor and fixed in
  // another: take them from whichever fixes them, then check all three.
  RankedTensorType wKey = tensorType(params[0]);
  RankedTensorType wQuery = tensorType(params[1]);
  RankedTensorType v = tensorType(params[2]);
  heads = firstStatic(
      {heads, dimOr(wKey, 3, 0), dimOr(wQuery, 3, 0), dimOr(v, 2, 0)});
  int64_t inner =
      firstStatic({dimOr(wKey, 3, 1), dimOr(wQuery, 3, 1), dimOr(v, 2, 1)});
  if (inner == 0)
    return diag.fail("additive score inner size (A) must be positive");
  if (failed(expectShape(diag, "additive score w_key", wKey,
                         {heads, inner, dk})) ||
      failed(expectShape(diag, "additive score w_query", wQuery,
                         {heads, inner, dk})))
    return failure();
  return expectShape(diag, "additive score v", v, {heads, inner});
}

/// Checks rotary positions (`rope`, `rope_base`) for heads of `dk` features.
LogicalResult verifyRope(Diag &diag, std::optional<RopeStyle> rope,
                         std::optional<APFloat> base, int64_t dk) {
  if (rope && dk % 2 != 0)
    return diag.fail("rotary positions need an even head size, got dk = ", dk);
  if (base) {
    if (!rope)
      return diag.fail("rope_base is set but rope is not");
    if (!(base->convertToFloat() > 0.0f))
      return diag.fail("rope_base must be positive, got ",
                       base->convertToFloat());
  }
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// ParamOp / WeightOp
//===----------------------------------------------------------------------===//

// MLIR accepts the symbol name @"" but prints it as @<<INVALID EMPTY
// SYMBOL>>, which does not parse back: tfm's symbols reject it.

LogicalResult ParamOp::verify() {
  if (getSymName().empty())
    return emitOpError("name must not be empty (it is the weight's "
                       "state_dict name)");
  auto type = dyn_cast<RankedTensorType>(getType());
  if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
    return emitOpError("type must be a statically shaped f32 tensor, got ")
           << getType();
  if (std::optional<StringRef> alias = getAlias(); alias && alias->empty())
    return emitOpError("alias must not be empty");
  if (std::optional<ArrayAttr> sources = getSources()) {
    if (getAlias())
      return emitOpError("takes an alias or sources, not both");
    if (sources->empty())
      return emitOpError("sources must name at least one tensor");
    for (Attribute source : *sources)
      if (cast<StringAttr>(source).getValue().empty())
        return emitOpError("a source must not be empty");
  }
  if (getTransposed() && (!getSources() || type.getRank() != 2))
    return emitOpError("`transposed` applies to the sources of a rank-2 "
                       "weight");
  if (getBlockIds() && (type.getRank() != 2 || getSources()))
    return emitOpError("`block_ids` applies to a rank-2 weight read under "
                       "its own name ([rows, R] key-block ids), got ")
           << getType();
  if (getFormat() && (type.getRank() != 2 || getBlockIds()))
    return emitOpError("`format` applies to a rank-2 GEMM weight ([out, "
                       "in]), got ")
           << getType() << (getBlockIds() ? " of key-block ids" : "");
  return success();
}

LogicalResult WeightOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param =
      symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
  if (!param)
    return emitOpError("@") << getParam() << " does not name a tfm.param";
  if (param.getType() != getType())
    return emitOpError("result type ")
           << getType() << " does not match the type " << param.getType()
           << " declared by @" << getParam();
  return success();
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t maxBatch, int64_t heads,
                                  int64_t maxSeq, int64_t headDim,
                                  int64_t features,
                                  std::optional<int64_t> window,
                                  int64_t globals) {
  if (maxBatch <= 0 || heads <= 0 || maxSeq <= 0 || headDim <= 0)
    return emitError() << "kv_cache sizes must be positive, got maxBatch = "
                       << maxBatch << ", heads = " << heads
                       << ", maxSeq = " << maxSeq << ", headDim = " << headDim;
  if (features < 0)
    return emitError() << "kv_cache features must be positive (or left out "
                          "for a cache of positions), got "
                       << features;
  if (!window) {
    if (globals != 0)
      return emitError() << "kv_cache globals = " << globals
                         << " without a window";
    return success();
  }
  if (features > 0)
    return emitError() << "a kv_cache of feature sums keeps no window";
  if (*window < 0 || globals < 0)
    return emitError() << "kv_cache window and globals must not be negative, "
                          "got window = "
                       << *window << ", globals = " << globals;
  if (*window + globals == 0 || *window + globals >= maxSeq)
    return emitError() << "a windowed kv_cache keeps between 1 and maxSeq - 1 "
                          "positions, got window + globals = "
                       << *window + globals << " of maxSeq = " << maxSeq
                       << " (leave the window out to keep every position)";
  return success();
}

/// An attention op's mask, by its rules (`causal window 4 global 1`).
static OptionalParseResult parseMaskRules(OpAsmParser &parser, MaskAttr &mask) {
  return parseMaskRuleList(parser, mask);
}

static void printMaskRules(OpAsmPrinter &printer, Operation *, MaskAttr mask) {
  printMaskRuleList(printer.getStream(), mask);
}

LogicalResult KVCacheDeclOp::verify() {
  if (getSymName().empty())
    return emitOpError("name must not be empty");
  return success();
}

LogicalResult CacheOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto decl =
      symbolTable.lookupNearestSymbolFrom<KVCacheDeclOp>(*this, getNameAttr());
  if (!decl)
    return emitOpError("@") << getName() << " does not name a tfm.kv_cache";
  if (decl.getType() != getType())
    return emitOpError("result type ")
           << getType() << " does not match the type " << decl.getType()
           << " declared by @" << getName();
  return success();
}

LogicalResult
TakeLastOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                             Adaptor adaptor,
                             SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType input = tensorType(adaptor.getInput());
  if (failed(expectRankAtLeast(diag, "input", input, 2, "[..., seq, d]")))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  shape[shape.size() - 2] = 1;
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Embeddings and positions
//===----------------------------------------------------------------------===//

LogicalResult
EmbeddingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType ids = tensorType(adaptor.getIds());
  RankedTensorType table = tensorType(adaptor.getTable());
  if (!ids || !table)
    return diag.fail("operands must be ranked tensors");
  if (table.getRank() != 2)
    return diag.fail("table must be [vocab_size, d_model], got ", Type(table));
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, table.getElementType()));
  return success();
}

LogicalResult PositionEncodingOp::verify() {
  Diag diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(expectRankAtLeast(diag, "input", input, 2, "[..., seq, d_model]")))
    return failure();
  bool learned = getKind() == PositionKind::Learned;
  if (learned && !getTable())
    return emitOpError("learned positions need a position table operand");
  if (!learned && getTable())
    return emitOpError("sinusoidal positions take no table operand");
  if (!learned)
    return success();

  RankedTensorType table = getTable().getType();
  int64_t dModel = input.getDimSize(input.getRank() - 1);
  if (failed(expectShape(diag, "position table", table,
                         {ShapedType::kDynamic, dModel})))
    return failure();
  int64_t seq = input.getDimSize(input.getRank() - 2);
  int64_t rows = table.getDimSize(0);
  if (!isDynamic(seq) && !isDynamic(rows) && seq > rows)
    return emitOpError("sequence length ")
           << seq << " exceeds the " << rows << " rows of the position table";
  return success();
}

LogicalResult RotaryOp::verify() {
  Diag diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(expectRankAtLeast(diag, "input", input, 2, "[..., seq, dk]")))
    return failure();
  int64_t dk = input.getDimSize(input.getRank() - 1);
  if (isDynamic(dk) || dk % 2 != 0)
    return emitOpError("rotary embedding needs an even, static head size, got ")
           << formatDim(dk);
  if (!(getBase().convertToFloat() > 0.0f))
    return emitOpError("base must be positive, got ")
           << getBase().convertToFloat();
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and heads
//===----------------------------------------------------------------------===//

LogicalResult
LinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           Adaptor adaptor,
                           SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType input = tensorType(adaptor.getInput());
  RankedTensorType weight = tensorType(adaptor.getWeight());
  if (!input || !weight)
    return diag.fail("operands must be ranked tensors");
  if (failed(expectRankAtLeast(diag, "input", input, 1, "[..., in_features]")))
    return failure();
  if (weight.getRank() != 2)
    return diag.fail("weight must be [out_features, in_features], got ",
                     Type(weight));
  int64_t in = input.getDimSize(input.getRank() - 1);
  if (!dimsMatch(in, weight.getDimSize(1)))
    return diag.fail("input has ", formatDim(in),
                     " features but the weight expects ",
                     formatDim(weight.getDimSize(1)));
  int64_t out = weight.getDimSize(0);
  if (Value bias = adaptor.getBias()) {
    if (failed(expectShape(diag, "bias", tensorType(bias), {out})))
      return failure();
    out = refineDim(out, tensorType(bias).getDimSize(0));
  }
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = out;
  if (Value residual = adaptor.getResidual())
    if (failed(expectShape(diag, "residual", tensorType(residual), shape)))
      return failure();
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult SequenceProjectionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType input = tensorType(adaptor.getInput());
  RankedTensorType projection = tensorType(adaptor.getProjection());
  if (failed(expectRankAtLeast(diag, "input", input, 2, "[..., n, d]")))
    return failure();
  if (!projection || projection.getRank() != 2 || projection.isDynamicDim(0) ||
      projection.isDynamicDim(1))
    return diag.fail("projection must be a static [K, S], got ",
                     Type(projection));
  int64_t rank = input.getRank(), rows = projection.getDimSize(0),
          columns = projection.getDimSize(1), n = input.getDimSize(rank - 2);
  if (rows < 1 || columns < 1)
    return diag.fail("projection ", Type(projection),
                     " has no rows or "
                     "columns");
  if (!isDynamic(n) && n > columns)
    return diag.fail("the input's ", n, " rows exceed the projection's ",
                     columns, " columns");
  SmallVector<int64_t> shape(input.getShape());
  shape[rank - 2] = rows;
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult
FeatureMapOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                               Adaptor adaptor,
                               SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType input = tensorType(adaptor.getInput());
  RankedTensorType features = tensorType(adaptor.getFeatures());
  if (failed(expectRankAtLeast(diag, "input", input, 3, "[..., heads, n, dk]")))
    return failure();
  if (!features || features.getRank() != 3 || !features.hasStaticShape() ||
      features.getNumElements() == 0)
    return diag.fail("features must be a static [heads, M, dk] with no "
                     "dimension 0, got ",
                     Type(features));
  int64_t rank = input.getRank(), heads = features.getDimSize(0),
          count = features.getDimSize(1), dk = features.getDimSize(2),
          inputHeads = input.getDimSize(rank - 3);
  if (!dimsMatch(input.getDimSize(rank - 1), dk))
    return diag.fail("the input's rows have ",
                     formatDim(input.getDimSize(rank - 1)),
                     " features, W_h's rows ", dk);
  if (!isDynamic(inputHeads) && (inputHeads == 0 || heads % inputHeads != 0))
    return diag.fail("the input's ", inputHeads,
                     " heads must divide the features' ", heads);
  SmallVector<int64_t> shape(input.getShape());
  shape[rank - 3] = heads;
  shape[rank - 1] = count;
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult LinearAttentionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType query = tensorType(adaptor.getQueryFeatures());
  RankedTensorType key = tensorType(adaptor.getKeyFeatures());
  RankedTensorType value = tensorType(adaptor.getValue());
  if (failed(expectRankAtLeast(diag, "query_features", query, 3,
                               "[..., heads, n, M]")))
    return failure();
  int64_t rank = query.getRank();
  if (!key || !value || key.getRank() != rank || value.getRank() != rank)
    return diag.fail("query_features, key_features and value must have the "
                     "same rank, got ",
                     Type(query), ", ", Type(key), ", ", Type(value));
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank - 2; ++i) {
    int64_t q = query.getDimSize(i), k = key.getDimSize(i),
            v = value.getDimSize(i);
    if (!dimsMatch(q, k))
      return diag.fail("leading dimension ", i, " differs: query_features ",
                       formatDim(q), ", key_features ", formatDim(k));
    int64_t qk = refineDim(q, k);
    // The heads: the values' may divide the features' (grouped-query).
    bool heads = i == rank - 3;
    bool grouped =
        heads && !isDynamic(qk) && !isDynamic(v) && v > 0 && qk % v == 0;
    if (!grouped && !dimsMatch(qk, v))
      return diag.fail("leading dimension ", i, " differs: features ",
                       formatDim(qk), ", value ", formatDim(v),
                       heads ? " (value heads must equal or divide the "
                               "features' heads)"
                             : "");
    shape.push_back(grouped ? qk : refineDim(qk, v));
  }
  int64_t m = query.getDimSize(rank - 1), mk = key.getDimSize(rank - 1);
  if (!dimsMatch(m, mk))
    return diag.fail("query rows have ", formatDim(m), " features, key rows ",
                     formatDim(mk));
  if (!dimsMatch(key.getDimSize(rank - 2), value.getDimSize(rank - 2)))
    return diag.fail("key length ", formatDim(key.getDimSize(rank - 2)),
                     " does not match value length ",
                     formatDim(value.getDimSize(rank - 2)));
  shape.push_back(query.getDimSize(rank - 2));
  shape.push_back(value.getDimSize(rank - 1));
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, query.getElementType()));
  return success();
}

LogicalResult LinearAttentionOp::verify() {
  if (getQueryOffset() && !getCausal())
    return emitOpError("`offset` places the queries for `causal`; without "
                       "it every row sees every key");
  // Causal rows without an offset are the keys' positions themselves (and
  // so are a decode step's with sums: its own keys).
  int64_t n = getQueryFeatures().getType().getDimSize(
              getQueryFeatures().getType().getRank() - 2),
          s = getKeyFeatures().getType().getDimSize(
              getKeyFeatures().getType().getRank() - 2);
  if (getCausal() && (!getQueryOffset() || getSums()) && !isDynamic(n) &&
      !isDynamic(s) && n != s)
    return emitOpError("causal rows attend the keys of their own positions: ")
           << n << " query rows over " << s << " keys";
  TypedValue<KVCacheType> sums = getSums();
  if (!sums)
    return success();
  if (!getQueryOffset())
    return emitOpError("`sums` carry a causal attention from call to call: "
                       "they need `causal` and `offset`");
  KVCacheType type = sums.getType();
  RankedTensorType result = getType();
  int64_t rank = result.getRank();
  int64_t features = getQueryFeatures().getType().getDimSize(rank - 1);
  if (rank != 4 || !type.holdsFeatureSums() ||
      !dimsMatch(features, type.getFeatures()) ||
      !dimsMatch(result.getDimSize(1), type.getHeads()) ||
      !dimsMatch(result.getDimSize(3), type.getHeadDim()))
    return emitOpError("`sums` ")
           << type << " do not hold the sums of the heads of " << Type(result)
           << " over " << formatDim(features) << " features";
  if (!isDynamic(result.getDimSize(0)) &&
      result.getDimSize(0) > type.getMaxBatch())
    return emitOpError("the step has ")
           << result.getDimSize(0) << " sequences; the cache holds "
           << type.getMaxBatch();
  return success();
}

void LinearAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // Pure unless it carries sums: then it reads and updates them.
  if (!getSumsMutable().empty()) {
    effects.emplace_back(MemoryEffects::Read::get(), &getSumsMutable()[0]);
    effects.emplace_back(MemoryEffects::Write::get(), &getSumsMutable()[0]);
  }
}

LogicalResult
SplitHeadsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                               Adaptor adaptor,
                               SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType input = tensorType(adaptor.getInput());
  if (failed(expectRankAtLeast(diag, "input", input, 2, "[..., seq, d_model]")))
    return failure();
  int64_t heads = adaptor.getNumHeads();
  if (heads <= 0)
    return diag.fail("num_heads must be positive, got ", heads);
  int64_t dModel = input.getDimSize(input.getRank() - 1);
  if (isDynamic(dModel))
    return diag.fail("d_model (the last dimension) must be static");
  if (bool(adaptor.getPart()) != bool(adaptor.getParts()))
    return diag.fail("`part` and `parts` come together");
  int64_t parts = adaptor.getParts() ? int64_t(*adaptor.getParts()) : 1;
  int64_t part = adaptor.getPart() ? int64_t(*adaptor.getPart()) : 0;
  if (parts < 1 || part < 0 || part >= parts)
    return diag.fail("part ", part, " of ", parts, " does not name a block");
  if (dModel % parts != 0)
    return diag.fail("the ", dModel, " features do not split into ", parts,
                     " equal blocks");
  dModel /= parts;
  if (dModel == 0)
    return diag.fail("the heads of ", heads, " would have no features");
  if (dModel % heads != 0)
    return diag.fail("d_model ", dModel, " is not divisible by ", heads,
                     " heads");
  SmallVector<int64_t> shape(input.getShape().drop_back(2));
  shape.append({heads, input.getDimSize(input.getRank() - 2), dModel / heads});
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, input.getElementType()));
  return success();
}

void SplitHeadsOp::build(OpBuilder &builder, OperationState &state, Value input,
                         int64_t numHeads, int64_t part, int64_t parts) {
  IntegerAttr partAttr, partsAttr;
  if (parts != 1) {
    partAttr = builder.getI64IntegerAttr(part);
    partsAttr = builder.getI64IntegerAttr(parts);
  }
  build(builder, state, input, builder.getI64IntegerAttr(numHeads), partAttr,
        partsAttr);
}

LogicalResult SplitHeadsOp::verify() {
  // The shape rules are inferReturnTypes'; a block of one is no block.
  if (getParts() && *getParts() == 1)
    return emitOpError("`part 0 of 1` is the whole input: leave it out");
  return success();
}

LogicalResult SliceRowsOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (input.getRank() < 1 || input.getRank() != result.getRank())
    return emitOpError("input and result must have the same rank (>= 1), "
                       "got ")
           << input << " and " << result;
  int64_t rows = input.getDimSize(0), taken = result.getDimSize(0);
  if (isDynamic(rows) || isDynamic(taken))
    return emitOpError("the rows of input and result must be static, got ")
           << input << " and " << result;
  for (int64_t i = 1; i < input.getRank(); ++i)
    if (input.getDimSize(i) != result.getDimSize(i))
      return emitOpError("dimension ")
             << i << " differs: input " << input << ", result " << result;
  int64_t offset = getOffset();
  if (taken < 1)
    return emitOpError("the result must take at least one row, got ") << result;
  if (offset < 0 || offset > rows - taken)
    return emitOpError("rows from ")
           << offset << " (" << taken << " of them) are not within the " << rows
           << " rows of the input";
  return success();
}

LogicalResult
MergeHeadsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                               Adaptor adaptor,
                               SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType input = tensorType(adaptor.getInput());
  if (failed(
          expectRankAtLeast(diag, "input", input, 3, "[..., heads, seq, dk]")))
    return failure();
  int64_t rank = input.getRank();
  int64_t heads = input.getDimSize(rank - 3);
  int64_t dk = input.getDimSize(rank - 1);
  if (isDynamic(heads) || isDynamic(dk))
    return diag.fail("heads and dk must be static, got ", Type(input));
  int64_t merged;
  if (llvm::MulOverflow(heads, dk, merged))
    return diag.fail("heads x dk = ", heads, " x ", dk,
                     " does not fit in a dimension");
  SmallVector<int64_t> shape(input.getShape().drop_back(3));
  shape.append({input.getDimSize(rank - 2), merged});
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

LogicalResult
AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType query = tensorType(adaptor.getQuery());
  RankedTensorType key = tensorType(adaptor.getKey());
  RankedTensorType value = tensorType(adaptor.getValue());
  if (failed(expectRankAtLeast(diag, "query", query, 2, "[..., seq, dk]")))
    return failure();
  int64_t rank = query.getRank();
  if (!key || !value || key.getRank() != rank || value.getRank() != rank)
    return diag.fail("query, key and value must have the same rank, got ",
                     Type(query), ", ", Type(key), ", ", Type(value));

  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank - 2; ++i) {
    int64_t q = query.getDimSize(i), k = key.getDimSize(i),
            v = value.getDimSize(i);
    // The heads (the dimension before the sequence): the keys' may divide
    // the queries' (grouped-query attention).
    bool heads = rank >= 3 && i == rank - 3;
    int64_t kv = refineDim(k, v);
    bool grouped = heads && dimsMatch(k, v) && !isDynamic(q) &&
                   !isDynamic(kv) && kv > 0 && q % kv == 0 && q != kv;
    if (!grouped && (!dimsMatch(q, k) || !dimsMatch(q, v) || !dimsMatch(k, v)))
      return diag.fail(
          "leading dimension ", i, " differs: query ", formatDim(q), ", key ",
          formatDim(k), ", value ", formatDim(v),
          heads ? " (key heads must equal or divide query heads)" : "");
    shape.push_back(grouped ? q : refineDim(q, kv));
  }
  int64_t dk = query.getDimSize(rank - 1);
  if (!dimsMatch(dk, key.getDimSize(rank - 1)))
    return diag.fail("query head size ", formatDim(dk),
                     " does not match key head size ",
                     formatDim(key.getDimSize(rank - 1)));
  dk = refineDim(dk, key.getDimSize(rank - 1));
  if (!dimsMatch(key.getDimSize(rank - 2), value.getDimSize(rank - 2)))
    return diag.fail("key length ", formatDim(key.getDimSize(rank - 2)),
                     " does not match value length ",
                     formatDim(value.getDimSize(rank - 2)));

  ScoreKind kind = adaptor.getScore();
  ValueRange params = adaptor.getScoreParams();
  if (!params.empty() && rank < 3)
    return diag.fail("score <", stringifyScoreKind(kind),
                     "> has per-head parameters: query must be "
                     "[..., heads, seq, dk]");
  int64_t heads = rank >= 3 ? shape[rank - 3] : 1;
  if (failed(verifyScoreParams(diag, kind, params, heads, dk)))
    return failure();

  shape.append({query.getDimSize(rank - 2), value.getDimSize(rank - 1)});
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, query.getElementType()));
  return success();
}

void AttentionOp::build(OpBuilder &builder, OperationState &state,
                        ScoreKind score, Value query, Value key, Value value,
                        ValueRange scoreParams, bool causal,
                        Value queryOffset) {
  build(builder, state, score, query, key, value, scoreParams,
        causal ? MaskAttr::get(builder.getContext(), true) : MaskAttr(),
        queryOffset, /*blockPattern=*/Value(), /*keyPadding=*/Value(),
        /*weightsSlot=*/Value());
}

/// BigBird's pattern operand: given exactly when the mask has random key
/// blocks, [rows, R] f32 with the mask's R.
static LogicalResult verifyBlockPattern(Diag &diag, MaskAttr mask,
                                        Value pattern) {
  std::optional<int64_t> random = mask ? mask.getRandomBlocks() : std::nullopt;
  if (!pattern && !random)
    return success();
  if (!pattern)
    return diag.fail("the mask's 'random ", *random,
                     "' reads the key blocks of a `pattern` operand; none is "
                     "given");
  if (!random)
    return diag.fail("`pattern` holds random key blocks; the mask has no "
                     "'random' rule to read it");
  RankedTensorType type = tensorType(pattern);
  if (!type || type.getRank() != 2 || !type.getElementType().isF32() ||
      type.getDimSize(1) != *random)
    return diag.fail("pattern must be a [rows, ", *random,
                     "] f32 tensor (the mask's 'random ", *random, "'), got ",
                     pattern.getType());
  return success();
}

/// A padding mask of `keys`' positions: [batch, keys] f32, the batch that
/// of `query` (rank >= 3, [batch, ..., seq, dk]).
static LogicalResult verifyKeyPadding(Diag &diag, Value keyPadding,
                                      RankedTensorType query, int64_t keys) {
  if (!keyPadding)
    return success();
  RankedTensorType type = tensorType(keyPadding);
  if (!type || type.getRank() != 2 || !type.getElementType().isF32())
    return diag.fail("key_padding must be a [batch, keys] f32 tensor, got ",
                     keyPadding.getType());
  if (query.getRank() < 3)
    return diag.fail("key_padding needs a batch: the query must be "
                     "[batch, ..., seq, dk], got ",
                     Type(query));
  if (!dimsMatch(type.getDimSize(0), query.getDimSize(0)))
    return diag.fail("key_padding's batch ", formatDim(type.getDimSize(0)),
                     " does not match the query's ",
                     formatDim(query.getDimSize(0)));
  if (!dimsMatch(type.getDimSize(1), keys))
    return diag.fail("key_padding's ", formatDim(type.getDimSize(1)),
                     " positions do not match the ", formatDim(keys), " keys");
  return success();
}

LogicalResult AttentionOp::verify() {
  if (getQueryOffset() && !getMaskAttr())
    return emitOpError("`offset` places the queries for the mask; without "
                       "a mask it means nothing");
  Diag diag(*this);
  if (failed(verifyBlockPattern(diag, getMaskAttr(), getBlockPattern())))
    return failure();
  // Shapes of fewer dimensions fail type inference with their own message.
  RankedTensorType key = tensorType(getKey());
  if (!getKeyPadding() || !key || key.getRank() < 2)
    return success();
  return verifyKeyPadding(diag, getKeyPadding(), getQuery().getType(),
                          key.getDimSize(key.getRank() - 2));
}

//===----------------------------------------------------------------------===//
// Key/value caches
//===----------------------------------------------------------------------===//

namespace {

/// Checks that `type` is [batch, heads, ?, headDim] of the cache's heads.
LogicalResult expectCacheRows(Diag &diag, StringRef what, RankedTensorType type,
                              KVCacheType cache) {
  if (failed(expectShape(diag, what, type,
                         {ShapedType::kDynamic, cache.getHeads(),
                          ShapedType::kDynamic, cache.getHeadDim()})))
    return failure();
  if (!isDynamic(type.getDimSize(0)) &&
      type.getDimSize(0) > cache.getMaxBatch())
    return diag.fail(what, " has ", type.getDimSize(0),
                     " sequences; the cache holds ", cache.getMaxBatch());
  if (!isDynamic(type.getDimSize(2)) && type.getDimSize(2) > cache.getMaxSeq())
    return diag.fail(what, " has ", type.getDimSize(2),
                     " positions; the cache holds ", cache.getMaxSeq());
  return success();
}

} // namespace

/// The rule of tfm.cache_append, tfm.cache_read and tfm.cache_window: a
/// cache of positions.
LogicalResult expectPositions(Operation *op, KVCacheType cache) {
  if (!cache.holdsFeatureSums())
    return success();
  return op->emitOpError("reads and writes positions; ")
         << cache << " holds feature sums (tfm.linear_attention's `sums`)";
}

LogicalResult CacheAppendOp::verify() {
  Diag diag(*this);
  KVCacheType cache = getCache().getType();
  if (failed(expectPositions(*this, cache)))
    return failure();
  // Values have the keys' type (AllTypesMatch).
  return expectCacheRows(diag, "keys", getKeys().getType(), cache);
}

void CacheAppendOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Write::get(), &getCacheMutable());
}

/// What tfm.cache_read and tfm.cache_window give: keys or values
/// [batch, heads, positions, headDim] of the cache's heads.
static Type cacheRows(KVCacheType cache) {
  return RankedTensorType::get({ShapedType::kDynamic, cache.getHeads(),
                                ShapedType::kDynamic, cache.getHeadDim()},
                               Float32Type::get(cache.getContext()));
}

LogicalResult
CacheReadOp::inferReturnTypes(MLIRContext *context, std::optional<Location>,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Type rows = cacheRows(cast<KVCacheType>(adaptor.getCache().getType()));
  inferredReturnTypes.assign({rows, rows});
  return success();
}

LogicalResult CacheReadOp::verify() {
  KVCacheType cache = getCache().getType();
  if (cache.isWindowed())
    return emitOpError("reads every position up to `length`; ")
           << cache << " keeps only a window of them (tfm.cache_window)";
  return expectPositions(*this, cache);
}

void CacheReadOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), &getCacheMutable());
}

LogicalResult
CacheWindowOp::inferReturnTypes(MLIRContext *context, std::optional<Location>,
                                Adaptor adaptor,
                                SmallVectorImpl<Type> &inferredReturnTypes) {
  Type rows = cacheRows(cast<KVCacheType>(adaptor.getCache().getType()));
  inferredReturnTypes.assign({rows, rows, IndexType::get(context)});
  return success();
}

LogicalResult CacheWindowOp::verify() {
  Diag diag(*this);
  KVCacheType cache = getCache().getType();
  if (!cache.isWindowed())
    return emitOpError("reads a windowed cache; ")
           << cache << " keeps every position (tfm.cache_read)";
  // Values have the keys' type (AllTypesMatch).
  return expectCacheRows(diag, "keys", getKeys().getType(), cache);
}

void CacheWindowOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), &getCacheMutable());
}

LogicalResult MultiHeadAttentionOp::verify() {
  Diag diag(*this);
  RankedTensorType query = getQuery().getType();
  if (failed(expectRankAtLeast(diag, "query", query, 2, "[..., seq, d_model]")))
    return failure();
  int64_t rank = query.getRank();
  int64_t heads = getNumHeads();
  if (heads <= 0)
    return emitOpError("num_heads must be positive, got ") << heads;
  int64_t dModel = query.getDimSize(rank - 1);
  if (isDynamic(dModel))
    return emitOpError("d_model (the last dimension) must be static");
  if (dModel % heads != 0)
    return emitOpError("d_model ")
           << dModel << " is not divisible by " << heads << " heads";
  int64_t dk = dModel / heads;
  int64_t kvHeads = getKeyValueHeads();
  if (kvHeads <= 0 || heads % kvHeads != 0)
    return emitOpError("kv_heads must divide num_heads ")
           << heads << ", got " << kvHeads;
  // in_proj_weight has (heads + 2 kv_heads) dk <= 3 d_model rows, which
  // must be a dimension too.
  if (dModel > std::numeric_limits<int64_t>::max() / 3)
    return emitOpError("d_model ")
           << dModel << " is too large: in_proj_weight's 3 x d_model rows "
           << "do not fit in a dimension";
  int64_t inRows = (heads + 2 * kvHeads) * dk;
  if (bool(getInProjBias()) != bool(getOutProjBias()))
    return emitOpError("in_proj and out_proj biases come together: both or "
                       "neither");

  if (Value memory = getMemory()) {
    RankedTensorType mem = tensorType(memory);
    SmallVector<int64_t> expected(query.getShape());
    expected[rank - 2] = ShapedType::kDynamic;
    if (failed(expectShape(diag, "memory", mem, expected)))
      return failure();
    if (getMaskAttr())
      return emitOpError("a mask applies to self-attention only; attention "
                         "over memory sees every key");
    if (getRope())
      return emitOpError("rotary positions apply to self-attention only");
  }
  if (failed(verifyBlockPattern(diag, getMaskAttr(), getBlockPattern())))
    return failure();

  if (failed(expectShape(diag, "in_proj_weight", getInProjWeight().getType(),
                         {inRows, dModel})) ||
      (getInProjBias() &&
       failed(expectShape(diag, "in_proj_bias", getInProjBias().getType(),
                          {inRows}))) ||
      failed(expectShape(diag, "out_proj_weight", getOutProjWeight().getType(),
                         {dModel, dModel})) ||
      (getOutProjBias() &&
       failed(expectShape(diag, "out_proj_bias", getOutProjBias().getType(),
                          {dModel}))) ||
      failed(verifyScoreParams(diag, getScore(), getScoreParams(), heads, dk)))
    return failure();

  if (bool(getProjE()) != bool(getProjF()))
    return emitOpError("linformer's projections come together: E and F");
  if (Value e = getProjE()) {
    if (!isSelfAttention() || getCache() || getMaskAttr())
      return emitOpError("linformer projects the keys and values of "
                         "self-attention without a mask or a cache");
    if (getScore() != ScoreKind::ScaledDot)
      return emitOpError("linformer takes scaled_dot scores, got ")
             << stringifyScoreKind(getScore());
    RankedTensorType type = tensorType(e);
    if (!type || type.getRank() != 2 || type.isDynamicDim(0) ||
        type.isDynamicDim(1) || type.getDimSize(0) < 1 ||
        type.getDimSize(1) < 1)
      return emitOpError("linformer's E must be a static [K, S], got ")
             << Type(type);
    if (failed(expectShape(diag, "linformer's F", tensorType(getProjF()),
                           type.getShape())))
      return failure();
    int64_t n = query.getDimSize(rank - 2);
    if (!isDynamic(n) && n > type.getDimSize(1))
      return emitOpError("the query's ") << n << " rows exceed linformer's "
                                         << type.getDimSize(1) << " positions";
  }
  if (Value features = getFeatures()) {
    MaskAttr mask = getMaskAttr();
    if (!isSelfAttention() || getProjE() || getKeyPadding() ||
        getWeightsSlot() || (mask && (mask.getWindow() || !mask.getCausal())))
      return emitOpError("performer's features map the queries and keys of "
                         "self-attention with no mask but causal, no "
                         "linformer, no key padding and no weights_to");
    if (getScore() != ScoreKind::ScaledDot)
      return emitOpError("performer takes scaled_dot scores, got ")
             << stringifyScoreKind(getScore());
    RankedTensorType type = tensorType(features);
    if (!type || type.getRank() != 3 || !type.hasStaticShape() ||
        type.getDimSize(1) < 1)
      return emitOpError("performer's features must be a static [")
             << heads << ", M, " << dk << "], got " << Type(type);
    if (failed(expectShape(diag, "performer's features", type,
                           {heads, type.getDimSize(1), dk})))
      return failure();
  }
  if (Value keyPadding = getKeyPadding()) {
    if (getCache() || getProjE())
      return emitOpError("key_padding masks the keys of an attention without "
                         "a cache or linformer's projections");
    Value keys = getMemory() ? getMemory() : getQuery();
    if (failed(verifyKeyPadding(diag, keyPadding, query,
                                tensorType(keys).getDimSize(rank - 2))))
      return failure();
  }
  if (failed(verifyRope(diag, getRope(), getRopeBase(), dk)))
    return failure();
  if (bool(getCache()) != bool(getPosition()))
    return emitOpError("a cache needs a position and a position a cache");
  if (getCacheReadOnly() && !getCache())
    return emitOpError("cache_read_only is set but there is no cache");
  if (Value cache = getCache()) {
    // A cache holds [batch, heads, positions, dk]: the query's batch and
    // positions are its first two dimensions.
    if (rank != 3)
      return emitOpError("a key/value cache needs a [batch, seq, d_model] "
                         "query, got ")
             << query;
    if (getCacheReadOnly()) {
      if (getMemory())
        return emitOpError("a read-only cache holds the keys and values of "
                           "the memory: it replaces `memory`, not both");
      if (getMaskAttr() || getRope())
        return emitOpError("a read-only cache is cross-attention: neither "
                           "masked nor rotary");
    } else if (!getMemory() && !isCausal()) {
      return emitOpError("a key/value cache in self-attention needs causal "
                         "attention");
    }
    auto type = cast<KVCacheType>(cache.getType());
    if (Value features = getFeatures()) {
      // Performer's cache keeps the running sums of every query head.
      int64_t count = tensorType(features).getDimSize(1);
      if (!type.holdsFeatureSums() || type.getFeatures() != count ||
          type.getHeads() != heads || type.getHeadDim() != dk)
        return emitOpError("performer's cache ")
               << type << " does not hold the sums of " << heads << " heads of "
               << count << " features and " << dk << " values";
    } else if (type.holdsFeatureSums() || type.getHeads() != kvHeads ||
               type.getHeadDim() != dk) {
      return emitOpError("cache ")
             << type << " does not hold " << kvHeads << " heads of " << dk;
    }
    if (type.isWindowed()) {
      // The ring keeps what this mask's rows can attend, no more.
      MaskAttr mask = getMaskAttr();
      if (!isSelfAttention() || !mask || mask.getBlock() ||
          mask.getWindow() != type.getWindow() ||
          mask.getGlobalTokens().value_or(0) != type.getGlobals())
        return emitOpError("windowed cache ")
               << type << " needs self-attention with a sliding window of "
               << *type.getWindow() << " and " << type.getGlobals()
               << " global tokens";
    }
  }
  return success();
}

void MultiHeadAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // Pure unless it keeps a cache: then it reads (and appends to) the cache.
  if (OpOperand *cache =
          getCacheMutable().empty() ? nullptr : &getCacheMutable()[0]) {
    effects.emplace_back(MemoryEffects::Read::get(), cache);
    if (!getCacheReadOnly())
      effects.emplace_back(MemoryEffects::Write::get(), cache);
  }
}

/// `at %pos` (append from `pos`) or `upto %len` (read the first `len`).
static ParseResult
parseCacheAccess(OpAsmParser &parser,
                 std::optional<OpAsmParser::UnresolvedOperand> &position,
                 UnitAttr &readOnly) {
  if (succeeded(parser.parseOptionalKeyword("upto")))
    readOnly = parser.getBuilder().getUnitAttr();
  else if (failed(parser.parseKeyword("at", " or 'upto' after the cache")))
    return failure();
  position.emplace();
  return parser.parseOperand(*position);
}

static void printCacheAccess(OpAsmPrinter &printer, Operation *, Value position,
                             UnitAttr readOnly) {
  printer << (readOnly ? "upto " : "at ") << position;
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  int64_t dim = getDim();
  if (dim < -rank || dim >= rank)
    return emitOpError("dim ") << dim << " is out of range for rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// Norms, feed-forward
//===----------------------------------------------------------------------===//

/// What tfm.layer_norm and tfm.add_layer_norm check of their normalisation.
static LogicalResult verifyNorm(Operation *op, bool rms, RankedTensorType input,
                                RankedTensorType gamma, Value betaValue,
                                APFloat eps) {
  Diag diag(op);
  if (failed(expectRankAtLeast(diag, "input", input, 1, "[..., d_model]")))
    return failure();
  if (rms && betaValue)
    return op->emitOpError("an RMS norm has no beta (it does not centre)");
  if (!rms && !betaValue)
    return op->emitOpError("a layer norm needs beta (`rms` for RMS norm)");
  RankedTensorType beta = tensorType(betaValue);
  int64_t dModel = firstStatic({input.getDimSize(input.getRank() - 1),
                                dimOr(gamma, 1, 0), dimOr(beta, 1, 0)});
  if (failed(expectShape(diag, "gamma", gamma, {dModel})) ||
      (beta && failed(expectShape(diag, "beta", beta, {dModel}))))
    return failure();
  if (!(eps.convertToFloat() > 0.0f))
    return op->emitOpError("eps must be positive, got ")
           << eps.convertToFloat();
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getRms(), getInput().getType(), getGamma().getType(),
                    getBeta(), getEps());
}

LogicalResult AddLayerNormOp::verify() {
  return verifyNorm(*this, getRms(), getLhs().getType(), getGamma().getType(),
                    getBeta(), getEps());
}

LogicalResult FeedForwardOp::verify() {
  Diag diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(expectRankAtLeast(diag, "input", input, 1, "[..., d_model]")))
    return failure();
  if (bool(getB1()) != bool(getB2()))
    return emitOpError("b1 and b2 come together: both biases or neither");
  int64_t dModel = input.getDimSize(input.getRank() - 1);
  // A gated FFN's first linear makes the gate and the up rows: 2 d_ff.
  int64_t firstRows = getGated() ? 2 : 1;
  RankedTensorType w1 = getW1().getType(), w2 = getW2().getType();
  RankedTensorType b1 = tensorType(getB1()), b2 = tensorType(getB2());
  auto perPart = [&](int64_t rows) {
    return isDynamic(rows) || rows % firstRows != 0 ? ShapedType::kDynamic
                                                    : rows / firstRows;
  };
  // Sizes agree or the first that fixes d_ff names the others: w1's rows
  // (w2's columns when gated, where w1's rows may be d_ff by mistake).
  int64_t dFF =
      getGated()
          ? firstStatic({dimOr(w2, 2, 1), perPart(dimOr(w1, 2, 0)),
                         perPart(dimOr(b1, 1, 0))})
          : firstStatic({dimOr(w1, 2, 0), dimOr(b1, 1, 0), dimOr(w2, 2, 1)});
  // The GLU splits the gated product in halves: a width it knows.
  if (getGated() && w1.getRank() == 2 &&
      (isDynamic(w1.getDimSize(0)) || w1.getDimSize(0) % 2 != 0))
    return emitOpError("gated: w1 must have a static, even number of rows "
                       "(the gate rows, then as many up rows), got ")
           << w1;
  int64_t w1Rows = isDynamic(dFF) ? ShapedType::kDynamic : firstRows * dFF;
  if (failed(expectShape(diag, "w1", w1, {w1Rows, dModel})) ||
      (b1 && failed(expectShape(diag, "b1", b1, {w1Rows}))) ||
      failed(expectShape(diag, "w2", w2, {dModel, dFF})) ||
      (b2 && failed(expectShape(diag, "b2", b2, {dModel}))))
    return failure();
  return success();
}

/// `%w1, %w2` or `%w1, %b1, %w2, %b2`: the biases come together.
static ParseResult
parseFeedForwardWeights(OpAsmParser &parser, OpAsmParser::UnresolvedOperand &w1,
                        std::optional<OpAsmParser::UnresolvedOperand> &b1,
                        OpAsmParser::UnresolvedOperand &w2,
                        std::optional<OpAsmParser::UnresolvedOperand> &b2) {
  SmallVector<OpAsmParser::UnresolvedOperand, 4> operands;
  SMLoc at = parser.getCurrentLocation();
  if (parser.parseOperandList(operands))
    return failure();
  if (operands.size() == 2) {
    w1 = operands[0];
    w2 = operands[1];
    return success();
  }
  if (operands.size() == 4) {
    w1 = operands[0];
    b1 = operands[1];
    w2 = operands[2];
    b2 = operands[3];
    return success();
  }
  return parser.emitError(at, "expected w1, w2 or w1, b1, w2, b2; got ")
         << operands.size() << " operands";
}

static void printFeedForwardWeights(OpAsmPrinter &printer, Operation *,
                                    Value w1, Value b1, Value w2, Value b2) {
  printer << w1;
  if (b1)
    printer << ", " << b1;
  printer << ", " << w2;
  if (b2)
    printer << ", " << b2;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult MixtureOfExpertsOp::verify() {
  Diag diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(expectRankAtLeast(diag, "input", input, 1, "[..., d_model]")))
    return failure();
  int64_t experts = getNumExperts();
  if (experts < 1)
    return emitOpError("needs at least one expert (linear1 and linear2 "
                       "weights)");
  if (int64_t(getW2().size()) != experts)
    return emitOpError("has ") << experts << " linear1 weights but "
                               << getW2().size() << " linear2 weights";
  if (getB1().size() != getB2().size() ||
      (!getB1().empty() && int64_t(getB1().size()) != experts))
    return emitOpError("biases come per expert and together: ")
           << experts << " of each or none, got " << getB1().size() << " and "
           << getB2().size();
  if (getTopK() < 1 || getTopK() > experts)
    return emitOpError("top ")
           << getTopK() << " must be from 1 to the " << experts << " experts";
  // The experts' weights are packed per target at load: static shapes.
  for (Value w : llvm::concat<Value>(getW1(), getW2()))
    if (!tensorType(w).hasStaticShape())
      return emitOpError("expert weights must have static shapes, got ")
             << w.getType();
  RankedTensorType w1 = tensorType(getW1()[0]), w2 = tensorType(getW2()[0]);
  if (w1.getRank() != 2 || w2.getRank() != 2)
    return emitOpError("expert weights must be [rows, columns], got ")
           << Type(w1) << " and " << Type(w2);
  // d_model: the input's, the gate's, w1's columns and w2's rows agree.
  int64_t dModel =
      firstStatic({input.getDimSize(input.getRank() - 1), w1.getDimSize(1)});
  int64_t dFF = w2.getDimSize(1);
  int64_t firstRows = getGated() ? 2 * dFF : dFF;
  if (failed(
          expectShape(diag, "gate", getGate().getType(), {experts, dModel})) ||
      failed(expectShape(diag, "linear1 weight", w1, {firstRows, dModel})) ||
      failed(expectShape(diag, "linear2 weight", w2, {dModel, dFF})) ||
      failed(expectShape(diag, "input", input, [&] {
        SmallVector<int64_t> shape(input.getShape());
        shape.back() = dModel;
        return shape;
      }())))
    return failure();
  // Every expert is a tfm.ffn of this op's kind, of expert 0's shapes.
  for (int64_t e = 0; e < experts; ++e) {
    if (getW1()[e].getType() != w1 || getW2()[e].getType() != w2)
      return emitOpError("expert ")
             << e << "'s weights " << getW1()[e].getType() << ", "
             << getW2()[e].getType() << " differ from expert 0's " << Type(w1)
             << ", " << Type(w2);
    if (!getB1().empty() &&
        (failed(expectShape(diag, "linear1 bias", tensorType(getB1()[e]),
                            {firstRows})) ||
         failed(expectShape(diag, "linear2 bias", tensorType(getB2()[e]),
                            {dModel}))))
      return failure();
  }
  return success();
}

LogicalResult RouteExpertsOp::verify() {
  Diag diag(*this);
  RankedTensorType logits = getLogits().getType();
  if (failed(expectRankAtLeast(diag, "logits", logits, 1, "[..., experts]")))
    return failure();
  int64_t experts = logits.getShape().back();
  if (isDynamic(experts))
    return emitOpError("logits need a static number of experts, got ")
           << Type(logits);
  if (getTopK() < 1 || getTopK() > experts)
    return emitOpError("top ")
           << getTopK() << " must be from 1 to the " << experts << " experts";
  SmallVector<int64_t> slots(logits.getShape());
  slots.back() = getTopK();
  if (failed(expectShape(diag, "tokens", getTokens().getType(), slots)) ||
      failed(expectShape(diag, "weights", getWeights().getType(), slots)) ||
      failed(expectShape(diag, "starts", getStarts().getType(), {experts + 1})))
    return failure();
  return success();
}

LogicalResult GatherRowsOp::verify() {
  Diag diag(*this);
  RankedTensorType input = getInput().getType(), tokens = getTokens().getType();
  if (failed(expectRankAtLeast(diag, "input", input, 1, "[..., d]")))
    return failure();
  SmallVector<int64_t> slots(input.getShape().drop_back());
  slots.push_back(tokens.getRank() > 0 ? tokens.getShape().back()
                                       : ShapedType::kDynamic);
  if (failed(expectShape(diag, "tokens", tokens, slots)))
    return failure();
  SmallVector<int64_t> rows(tokens.getShape());
  rows.push_back(input.getShape().back());
  return expectShape(diag, "result", getResult().getType(), rows);
}

SizeSum GatherRowsOp::getResultSize(unsigned, int64_t dim) {
  return {{getTokens(), dim}};
}

LogicalResult GroupedLinearOp::verify() {
  Diag diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(expectRankAtLeast(diag, "input", input, 2,
                               "[..., slots, in_features]")))
    return failure();
  int64_t groups = getNumGroups();
  if (groups < 1)
    return emitOpError("needs at least one weight");
  if (!getBiases().empty() && int64_t(getBiases().size()) != groups)
    return emitOpError("has ")
           << groups << " weights but " << getBiases().size()
           << " biases (one per weight, or none)";
  if (failed(expectShape(diag, "groups", getStarts().getType(), {groups + 1})))
    return failure();
  RankedTensorType first = tensorType(getWeights()[0]);
  if (!first.hasStaticShape())
    return emitOpError("weights must have static shapes (each is packed "
                       "into panels), got ")
           << Type(first);
  int64_t in = input.getShape().back();
  if (failed(expectShape(diag, "weight 0", first, {ShapedType::kDynamic, in})))
    return failure();
  int64_t out = first.getDimSize(0);
  for (auto [e, w] : llvm::enumerate(getWeights()))
    if (w.getType() != first)
      return emitOpError("weight ")
             << e << " is " << w.getType() << ", weight 0 " << Type(first);
  for (Value b : getBiases())
    if (failed(expectShape(diag, "bias", tensorType(b), {out})))
      return failure();
  if (bool(getTokens()) != bool(getRoutingWeights()))
    return emitOpError("scatter takes tokens and routing weights together");
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = out;
  if (getTokens()) {
    ArrayRef<int64_t> slots = input.getShape().drop_back();
    if (failed(expectShape(diag, "scatter tokens", getTokens().getType(),
                           slots)) ||
        failed(expectShape(diag, "routing weights",
                           getRoutingWeights().getType(), slots)))
      return failure();
    shape.erase(shape.end() - 2); // the slots go back to their tokens
  }
  if (getResidual()) {
    if (!getTokens())
      return emitOpError("adds a residual only with scatter (the result "
                         "rows are the tokens')");
    if (failed(expectShape(diag, "residual", getResidual().getType(), shape)))
      return failure();
  }
  return expectShape(diag, "result", getResult().getType(), shape);
}

LogicalResult
GluOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                        Adaptor adaptor,
                        SmallVectorImpl<Type> &inferredReturnTypes) {
  Diag diag(loc, getOperationName());
  RankedTensorType input = tensorType(adaptor.getInput());
  if (failed(expectRankAtLeast(diag, "input", input, 1, "[..., 2n]")))
    return failure();
  int64_t width = input.getShape().back();
  if (isDynamic(width) || width % 2 != 0)
    return diag.fail("the last dimension must be static and even (the gate "
                     "and the up halves), got ",
                     formatDim(width));
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = width / 2;
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, input.getElementType()));
  return success();
}

#define GET_OP_CLASSES
#include "tfm/IR/TfmOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Mamba mixers
//===----------------------------------------------------------------------===//

LogicalResult
MambaStateType::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t maxBatch, int64_t channels, int64_t convWidth,
                       int64_t stateSize) {
  if (maxBatch <= 0 || channels <= 0 || convWidth <= 0 || stateSize <= 0)
    return emitError() << "mamba_state sizes must be positive, got maxBatch = "
                       << maxBatch << ", channels = " << channels
                       << ", convWidth = " << convWidth
                       << ", stateSize = " << stateSize;
  return success();
}

namespace {

/// The reads and writes of a Mamba op that carries `state` (none without).
void stateEffects(
    MutableOperandRange state,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (state.empty())
    return;
  effects.emplace_back(MemoryEffects::Read::get(), &state[0]);
  effects.emplace_back(MemoryEffects::Write::get(), &state[0]);
}

/// `offset` and `state` come together; the state's channels (and conv
/// width or state size, when given) are the op's.
LogicalResult verifyCarriedState(Diag &diag, Value offset,
                                 TypedValue<MambaStateType> state,
                                 int64_t channels, int64_t convWidth,
                                 int64_t stateSize, int64_t batch) {
  if (bool(offset) != bool(state))
    return diag.fail("`offset` and `state` come together: a decode step's "
                     "rows start at offset and continue from the state");
  if (!state)
    return success();
  MambaStateType type = state.getType();
  if (!dimsMatch(channels, type.getChannels()) ||
      !dimsMatch(convWidth, type.getConvWidth()) ||
      !dimsMatch(stateSize, type.getStateSize())) {
    // What the op fixes of the state: its channels, and its conv width or
    // its state size or both.
    std::string what = formatDim(channels) + " channels";
    if (!isDynamic(convWidth))
      what += std::string(isDynamic(stateSize) ? " and" : ",") +
              " a conv width of " + formatDim(convWidth);
    if (!isDynamic(stateSize))
      what += " and states of " + formatDim(stateSize);
    return diag.fail("state ", Type(type), " does not hold ", what);
  }
  if (!isDynamic(batch) && batch > type.getMaxBatch())
    return diag.fail("the step has ", batch, " sequences; the state holds ",
                     type.getMaxBatch());
  return success();
}

/// The leading (batch) dimension of a [..., n, C] value carried with a
/// state: its first, when it has a batch dimension.
int64_t batchOf(RankedTensorType rows) {
  return rows.getRank() >= 3 ? rows.getDimSize(0) : 1;
}

} // namespace

LogicalResult MambaMixerOp::verify() {
  Diag diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(expectRankAtLeast(diag, "input", input, 2, "[..., seq, d_model]")))
    return failure();
  int64_t dModel = input.getDimSize(input.getRank() - 1);
  RankedTensorType aLog = getALog().getType(), xProj = getXProj().getType(),
                   dtProj = getDtProj().getType(),
                   conv = getConvWeight().getType();
  if (aLog.getRank() != 2 || dtProj.getRank() != 2 || conv.getRank() != 3)
    return diag.fail("a_log must be [d_inner, d_state], dt_proj [d_inner, "
                     "dt_rank] and conv_weight [d_inner, 1, width], got ",
                     Type(aLog), ", ", Type(dtProj), " and ", Type(conv));
  int64_t channels = firstStatic(
      {aLog.getDimSize(0), dtProj.getDimSize(0), conv.getDimSize(0)});
  int64_t states = aLog.getDimSize(1), rank = dtProj.getDimSize(1),
          width = conv.getDimSize(2);
  int64_t xRows = isDynamic(rank) || isDynamic(states) ? ShapedType::kDynamic
                                                       : rank + 2 * states;
  int64_t inRows = isDynamic(channels) ? ShapedType::kDynamic : 2 * channels;
  if (failed(expectShape(diag, "in_proj", getInProj().getType(),
                         {inRows, dModel})) ||
      failed(expectShape(diag, "conv_weight", conv, {channels, 1, width})) ||
      failed(expectShape(diag, "conv_bias", getConvBias().getType(),
                         {channels})) ||
      failed(expectShape(diag, "x_proj", xProj, {xRows, channels})) ||
      failed(expectShape(diag, "dt_proj", dtProj, {channels, rank})) ||
      failed(expectShape(diag, "dt_bias", getDtBias().getType(), {channels})) ||
      failed(expectShape(diag, "a_log", aLog, {channels, states})) ||
      failed(expectShape(diag, "d", getD().getType(), {channels})) ||
      failed(expectShape(diag, "out_proj", getOutProj().getType(),
                         {dModel, channels})))
    return failure();
  // The decomposition splits in_proj and x_proj by rows: static ones.
  if (isDynamic(channels) || isDynamic(states) || isDynamic(rank) ||
      isDynamic(width))
    return diag.fail("the mixer's sizes (d_inner, d_state, dt_rank, conv "
                     "width) must be static");
  return verifyCarriedState(diag, getOffset(), getState(), channels, width,
                            states, batchOf(input));
}

void MambaMixerOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  stateEffects(getStateMutable(), effects);
}

LogicalResult CausalConv1dOp::verify() {
  Diag diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(expectRankAtLeast(diag, "input", input, 2, "[..., seq, C]")))
    return failure();
  int64_t channels = input.getDimSize(input.getRank() - 1);
  RankedTensorType weight = getWeight().getType();
  int64_t width = dimOr(weight, 3, 2);
  if (failed(expectShape(diag, "weight", weight, {channels, 1, width})) ||
      failed(expectShape(diag, "bias", getBias().getType(), {channels})))
    return failure();
  if (isDynamic(channels) || isDynamic(width))
    return diag.fail("the channels and the conv width must be static, got ",
                     Type(input), " and ", Type(weight));
  return verifyCarriedState(diag, getOffset(), getState(), channels, width,
                            ShapedType::kDynamic, batchOf(input));
}

void CausalConv1dOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  stateEffects(getStateMutable(), effects);
}

LogicalResult SelectiveScanOp::verify() {
  Diag diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(expectRankAtLeast(diag, "input", input, 2, "[..., seq, C]")))
    return failure();
  int64_t rank = input.getRank();
  int64_t channels = input.getDimSize(rank - 1);
  RankedTensorType aLog = getALog().getType();
  int64_t states = dimOr(aLog, 2, 1);
  SmallVector<int64_t> rows(input.getShape());
  rows.back() = states;
  if (failed(expectShape(diag, "a_log", aLog, {channels, states})) ||
      failed(expectShape(diag, "b", getB().getType(), rows)) ||
      failed(expectShape(diag, "c", getC().getType(), rows)) ||
      failed(expectShape(diag, "d", getD().getType(), {channels})))
    return failure();
  if (isDynamic(channels) || isDynamic(states))
    return diag.fail("the channels and the state size must be static, got ",
                     Type(input), " and ", Type(aLog));
  return verifyCarriedState(diag, getOffset(), getState(), channels,
                            ShapedType::kDynamic, states, batchOf(input));
}

void SelectiveScanOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  stateEffects(getStateMutable(), effects);
}
