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
#include "tfm/Transforms/MemoryPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace tfm::hwy {

std::string num(int64_t v) { return std::to_string(v); }

StringRef activationKernel(Activation activation) {
  switch (activation) {
  case Activation::Relu:
    return "ReluInPlace";
  case Activation::Gelu:
    return "GeluInPlace";
  case Activation::GeluTanh:
    return "GeluTanhInPlace";
  case Activation::Silu:
    return "SiluInPlace";
  }
  llvm_unreachable("unknown activation");
}

std::string floatLiteral(float v) {
  return llvm::formatv("{0:e9}f", static_cast<double>(v)).str();
}

Dim staticDim(int64_t v) { return {num(v), v, true}; }

namespace {

/// Replaces parameter names by the caller's expressions.
Dim substitute(const Dim &dim, const llvm::StringMap<Dim> &map) {
  if (dim.isStatic)
    return dim;
  auto it = map.find(dim.expr);
  return it == map.end() ? dim : it->second;
}

/// Why `slot` cannot hold a buffer of `maxCount` floats in a frame of
/// `frameFloats`; empty if it can.
std::string slotMismatch(FrameSlotAttr slot, int64_t frameFloats,
                         int64_t maxCount) {
  if (slot.getOffset() < 0 || slot.getFloats() > frameFloats - slot.getOffset())
    return llvm::formatv("frame slot '{0}' (floats {1} to {2}) ends past the "
                         "function's frame of {3} floats",
                         slot.describe(), slot.getOffset(),
                         slot.getOffset() + slot.getFloats(), frameFloats)
        .str();
  if (slot.getFloats() < maxCount)
    return llvm::formatv("frame slot '{0}' holds {1} floats; the code needs "
                         "{2}",
                         slot.describe(), slot.getFloats(), maxCount)
        .str();
  return "";
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

void FunctionEmitter::frameBuffer(const std::string &name, FrameBuffer kind,
                                  unsigned index, int64_t maxCount) {
  for (auto [i, slot] : llvm::enumerate(opSlots)) {
    if (slotTaken[i] || slot.getBuffer() != kind ||
        slot.getIndex() != int64_t(index))
      continue;
    slotTaken[i] = true;
    if (planError.empty())
      planError = slotMismatch(slot, frameFloats, maxCount);
    os << "float *" << name << " = frame + " << slot.getOffset() << ";\n";
    return;
  }
  if (planError.empty())
    planError =
        ("the memory plan (tfm_codegen.frame) has no slot '" +
         FrameSlotAttr::get(func.getContext(), kind, index, 0, 1).describe() +
         "' for this op's code; run tfm-plan-memory again");
  os << "float *" << name << " = nullptr;\n";
}

Buffer FunctionEmitter::allocate(Value value, Dims dims) {
  Buffer buffer{"", std::move(dims)};
  auto it = resultIndex.find(value);
  if (it != resultIndex.end()) {
    buffer.ptr = resultPtrs[it->second];
  } else {
    buffer.ptr = fresh("v");
    frameBuffer(buffer.ptr, FrameBuffer::Result,
                cast<OpResult>(value).getResultNumber(),
                maxProduct(buffer.dims));
    frameValues.insert(value);
  }
  buffers[value] = buffer;
  return buffer;
}

std::string FunctionEmitter::scratch(FrameBuffer kind, const std::string &count,
                                     int64_t maxCount) {
  std::string name = fresh(stringifyFrameBuffer(kind));
  os << "// " << name << ": " << count << " floats\n";
  // Scratch slots are taken in order: the next one not yet taken that is
  // not a result's.
  for (auto [i, slot] : llvm::enumerate(opSlots))
    if (!slotTaken[i] && slot.getBuffer() != FrameBuffer::Result) {
      if (slot.getBuffer() != kind && planError.empty())
        planError = llvm::formatv("the code takes scratch '{0}' where the "
                                  "memory plan (tfm_codegen.frame) has '{1}'",
                                  stringifyFrameBuffer(kind), slot.describe())
                        .str();
      frameBuffer(name, slot.getBuffer(), 0, maxCount);
      return name;
    }
  frameBuffer(name, kind, 0, maxCount);
  return name;
}

bool FunctionEmitter::planned(FrameBuffer kind) const {
  return llvm::any_of(
      opSlots, [&](FrameSlotAttr slot) { return slot.getBuffer() == kind; });
}

void FunctionEmitter::beginOpPlan(Operation &op) {
  opSlots.clear();
  planError.clear();
  opSlots = getFrameSlots(&op);
  slotTaken.assign(opSlots.size(), false);
}

LogicalResult FunctionEmitter::endOpPlan(Operation &op) {
  if (planError.empty())
    for (auto [i, slot] : llvm::enumerate(opSlots))
      if (!slotTaken[i]) {
        planError = "the memory plan (tfm_codegen.frame) has a slot '" +
                    slot.describe() + "' this op's code does not take";
        break;
      }
  if (planError.empty())
    return success();
  return op.emitError("the Highway backend cannot follow the memory plan: ")
         << planError;
}

//===----------------------------------------------------------------------===//
// Signature and body
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitSignature(EntryKind entry) {
  bool isEntry = entry != EntryKind::None;
  FunctionType type = func.getFunctionType();
  // Which values the function returns, so they are computed in place.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    resultIndex.try_emplace(v, i);
    resultPtrs.push_back(isEntry ? "out" : "result" + num(i));
  }
  if (isEntry && type.getNumResults() != 1)
    return func.emitError("an entry point must return one tensor");

  // Dynamic sizes first, then the arguments in order: how emitCall passes
  // them.
  SmallVector<std::string> params, argParams, prologue;
  unsigned inputIndex = 0;
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    std::string name = "a" + num(i);
    if (arg.getType().isIndex()) {
      // In entry points: the runtime's `position` or `memoryLength`.
      if (isEntry) {
        auto role = func.getArgAttrOfType<StringAttr>(i, "tfm.input");
        if (!role || (role.getValue() != "position" &&
                      role.getValue() != "memory_length"))
          return func.emitError("index argument ")
                 << i
                 << " of an entry point must be the tfm.input \"position\" "
                    "or \"memory_length\"";
        scalars[arg] =
            role.getValue() == "position" ? "position" : "memoryLength";
      } else {
        scalars[arg] = name;
        argParams.push_back("int64_t " + name);
      }
      continue;
    }
    if (isa<StateBufferTypeInterface>(arg.getType())) {
      if (isEntry)
        return func.emitError("caches cannot be entry-point arguments");
      argParams.push_back("float *" + name);
      buffers[arg] = {name, {}};
      continue;
    }
    auto tensor = dyn_cast<RankedTensorType>(arg.getType());
    if (!tensor)
      return func.emitError("argument ")
             << i << " has a type the Highway backend cannot pass: "
             << arg.getType();
    bool isTokens = tensor.getElementType().isInteger(32);
    unsigned input = inputIndex++;
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
      std::string dimName;
      if (isEntry) {
        StringRef field = d == 0 ? "batch" : "seq";
        dimName = llvm::formatv("in{0}_{1}", input, field).str();
        prologue.push_back(llvm::formatv("const int64_t {0} = in[{1}].{2};",
                                         dimName, input, field)
                               .str());
      } else {
        dimName = llvm::formatv("a{0}_d{1}", i, d).str();
        params.push_back("int64_t " + dimName);
        summary.dynamicArgDims.push_back({unsigned(i), unsigned(d)});
      }
      dims.push_back({dimName, max, false});
    }
    if (isEntry) {
      prologue.push_back(llvm::formatv("const {0} *{1} = static_cast<const "
                                       "{0} *>(in[{2}].data);",
                                       isTokens ? "int32_t" : "float", name,
                                       input)
                             .str());
    } else {
      if (isTokens)
        return func.emitError("token ids are only supported as inputs of an "
                              "entry point");
      argParams.push_back("const float *" + name);
    }
    buffers[arg] = {name, dims};
  }
  llvm::append_range(params, argParams);
  for (unsigned i = 0; !isEntry && i < type.getNumResults(); ++i)
    params.push_back("float *result" + num(i));

  std::string name = func.getSymName().str();
  summary.name = name;
  switch (entry) {
  case EntryKind::Forward:
    os << "void forward(const float *const *w, const tfm::rt::InputView *in, "
          "float *out, tfm::rt::Arena &arena, tfm::rt::ThreadPool &pool) {\n";
    break;
  case EntryKind::Generation:
    os << "void " << name
       << "(const float *const *w, float *const *caches, const "
          "tfm::rt::InputView *in, int64_t position, int64_t memoryLength, "
          "float *out, tfm::rt::Arena &arena, tfm::rt::ThreadPool &pool) "
          "{\n";
    prologue.insert(prologue.begin(), "(void)position, (void)memoryLength;");
    break;
  case EntryKind::None:
    params.insert(params.begin(),
                  {"tfm::rt::Arena &arena", "tfm::rt::ThreadPool &pool"});
    os << "static void " << name << "(" << llvm::join(params, ", ") << ") {\n";
    break;
  }
  os.indent();
  for (const std::string &line : prologue)
    os << line << "\n";
  return success();
}

LogicalResult FunctionEmitter::emit(EntryKind entry) {
  if (func.getBody().getBlocks().size() != 1)
    return func.emitError("the Highway backend needs single-block functions");
  if (failed(findPackedArguments()) || failed(emitSignature(entry)))
    return failure();
  // The frame tfm-plan-memory sized (planned here if it did not run: the
  // ops' scratch comes from the interface tfm_codegen attaches).
  func.getContext()->getOrLoadDialect<TfmCodegenDialect>();
  if (!getFrameFloats(func) &&
      failed(planFrame(func, {facts.maxBatch, facts.maxSeqLen})))
    return failure();
  frameFloats = *getFrameFloats(func);
  os << "const size_t arenaMark = arena.mark();\n";
  os << llvm::formatv("[[maybe_unused]] float *frame = arena.take({0}); // {1} "
                      "bytes, planned\n",
                      frameFloats, frameFloats * 4);
  for (Operation &op : func.getBody().front()) {
    beginOpPlan(op);
    if (failed(emitOp(op)) || failed(endOpPlan(op)))
      return failure();
  }
  os << "arena.release(arenaMark);\n";
  os.unindent();
  os << "}\n\n";
  os.flush();
  out << text;

  summary.peakBytes = size_t(frameFloats) * sizeof(float) + calleeBytes;
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
  if (auto constant = dyn_cast<arith::ConstantIndexOp>(op)) {
    scalars[constant] = num(constant.value());
    return success();
  }
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    std::optional<int64_t> index = dim.getConstantIndex();
    auto it = buffers.find(dim.getSource());
    if (!index || it == buffers.end() || *index < 0 ||
        *index >= int64_t(it->second.dims.size()))
      return dim.emitError("the Highway backend reads constant dimensions "
                           "of tensors only");
    scalars[dim] = it->second.dims[*index].expr;
    return success();
  }
  if (auto cache = dyn_cast<CacheOp>(op)) {
    auto it = facts.cacheIndex.find(cache.getName());
    if (it == facts.cacheIndex.end())
      return cache.emitError("unknown cache");
    buffers[cache.getResult()] = {"caches[" + num(it->second) + "]", {}};
    return success();
  }
  os << "// " << op.getName() << " at " << op.getLoc() << "\n";
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](LinearOp o) { return emitLinear(o); })
      .Case([&](EmbeddingOp o) { return emitEmbedding(o); })
      .Case([&](PositionEncodingOp o) { return emitPositions(o); })
      .Case([&](SliceRowsOp o) { return emitSliceRows(o); })
      .Case([&](SplitHeadsOp o) { return emitSplitHeads(o); })
      .Case([&](MergeHeadsOp o) { return emitMergeHeads(o); })
      .Case([&](RotaryOp o) { return emitRotary(o); })
      .Case([&](FeatureMapOp o) { return emitFeatureMap(o); })
      .Case([&](LinearAttentionOp o) { return emitLinearAttention(o); })
      .Case([&](SequenceProjectionOp o) { return emitSequenceProjection(o); })
      .Case([&](CacheAppendOp o) { return emitCacheAppend(o); })
      .Case([&](CacheReadOp o) { return emitCacheRead(o); })
      .Case([&](CacheWindowOp o) { return emitCacheWindow(o); })
      .Case([&](AttentionOp o) { return emitAttention(o); })
      .Case([&](LayerNormOp o) { return emitLayerNorm(o); })
      .Case([&](TakeLastOp o) { return emitTakeLast(o); })
      .Case([&](AddOp o) { return emitAdd(o); })
      .Case([&](AddLayerNormOp o) { return emitAddLayerNorm(o); })
      .Case([&](GluOp o) { return emitGlu(o); })
      .Case([&](RouteExpertsOp o) { return emitRouteExperts(o); })
      .Case([&](GatherRowsOp o) { return emitGatherRows(o); })
      .Case([&](GroupedLinearOp o) { return emitGroupedLinear(o); })
      .Case([&](CausalConv1dOp o) { return emitCausalConv1d(o); })
      .Case([&](SelectiveScanOp o) { return emitSelectiveScan(o); })
      .Case([&](func::CallOp o) { return emitCall(o); })
      .Case([&](func::ReturnOp o) { return emitReturn(o); })
      .Default([&](Operation *o) {
        return o->emitError("the Highway backend cannot lower '")
               << o->getName()
               << "' (graph-level ops are decomposed by tfm-optimize first)";
      });
}

void FunctionEmitter::remark(Operation *op, const Twine &what) {
  if (facts.remarks)
    op->emitRemark() << "in @" << func.getName() << ": " << what;
}

//===----------------------------------------------------------------------===//
// Embeddings and positions
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitEmbedding(EmbeddingOp op) {
  Buffer ids = buffers[op.getIds()];
  Buffer table = buffers[op.getTable()];
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
  Buffer x = buffers[op.getInput()];
  int64_t d = op.getInput().getType().getShape().back();
  Buffer out = allocate(op.getResult(), x.dims);
  ArrayRef<Dim> rows = ArrayRef<Dim>(x.dims).drop_back();
  const Dim &seq = x.dims[x.dims.size() - 2];
  std::string offset = op.getOffset() ? scalars[op.getOffset()] : "0";
  os << "{\n";
  os.indent();
  os << "const int64_t seq = " << seq.expr << ", first = " << offset << ";\n";
  os << "pool.parallelFor(" << product(rows) << ", [&](int64_t r) {\n";
  os.indent();
  if (op.getKind() == PositionKind::Learned) {
    os << "k::Add(" << x.ptr << " + r * " << d << ", "
       << buffers[op.getTable()].ptr << " + (first + r % seq) * " << d << ", "
       << out.ptr << " + r * " << d << ", " << d << ");\n";
  } else {
    // PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(same), in double.
    os << "const double pos = double(first + r % seq);\n";
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
// Norms, feed-forward, residual
//===----------------------------------------------------------------------===//

LogicalResult FunctionEmitter::emitLayerNorm(LayerNormOp op) {
  Buffer x = buffers[op.getInput()];
  int64_t d = op.getInput().getType().getShape().back();
  Buffer out = allocate(op.getResult(), x.dims);
  os << "pool.parallelFor(" << product(ArrayRef<Dim>(x.dims).drop_back())
     << ", [&](int64_t r) {\n";
  os << "  k::" << (op.getRms() ? "RmsNormRow(" : "LayerNormRow(") << x.ptr
     << " + r * " << d << ", " << buffers[op.getGamma()].ptr << ", ";
  if (!op.getRms())
    os << buffers[op.getBeta()].ptr << ", ";
  os << floatLiteral(op.getEps().convertToFloat()) << ", " << d << ", "
     << out.ptr << " + r * " << d << ");\n";
  os << "});\n";
  return success();
}

LogicalResult FunctionEmitter::emitGlu(GluOp op) {
  Buffer x = buffers[op.getInput()];
  int64_t n = op.getType().getShape().back();
  Dims dims = x.dims;
  dims.back() = staticDim(n);
  Buffer out = allocate(op.getResult(), dims);
  os << "pool.parallelFor(" << product(ArrayRef<Dim>(x.dims).drop_back())
     << ", [&](int64_t r) {\n";
  os << "  k::GatedRow(" << x.ptr << " + r * " << 2 * n << ", " << x.ptr
     << " + r * " << 2 * n << " + " << n << ", " << out.ptr << " + r * " << n
     << ", " << n
     << ", [](float *y, size_t m) { k::" << activationKernel(op.getActivation())
     << "(y, m); });\n";
  os << "});\n";
  return success();
}

LogicalResult FunctionEmitter::emitTakeLast(TakeLastOp op) {
  Buffer x = buffers[op.getInput()];
  size_t rank = x.dims.size();
  Dims dims = x.dims;
  dims[rank - 2] = staticDim(1);
  int64_t width = op.getType().getShape().back();
  Buffer out = allocate(op.getResult(), dims);
  os << "for (int64_t r = 0; r < "
     << product(ArrayRef<Dim>(x.dims).drop_back(2)) << "; ++r)\n";
  os << "  std::memcpy(" << out.ptr << " + r * " << width << ", " << x.ptr
     << " + (r * " << x.dims[rank - 2].expr << " + " << x.dims[rank - 2].expr
     << " - 1) * " << width << ", sizeof(float) * " << width << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitAdd(AddOp op) {
  Buffer a = buffers[op.getLhs()];
  Buffer b = buffers[op.getRhs()];
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

LogicalResult FunctionEmitter::emitAddLayerNorm(AddLayerNormOp op) {
  Buffer a = buffers[op.getLhs()];
  Buffer b = buffers[op.getRhs()];
  int64_t d = op.getResult().getType().getShape().back();
  Buffer out = allocate(op.getResult(), a.dims);
  // An unread sum is not stored: the row is summed into the output and
  // normalised there.
  std::string sum = "nullptr";
  if (!op.getSum().use_empty())
    sum = allocate(op.getSum(), a.dims).ptr + " + r * " + num(d);
  os << "pool.parallelFor(" << product(ArrayRef<Dim>(a.dims).drop_back())
     << ", [&](int64_t r) {\n";
  os << "  k::" << (op.getRms() ? "AddRmsNormRow(" : "AddLayerNormRow(")
     << a.ptr << " + r * " << d << ", " << b.ptr << " + r * " << d << ", "
     << buffers[op.getGamma()].ptr << ", ";
  if (!op.getRms())
    os << buffers[op.getBeta()].ptr << ", ";
  os << floatLiteral(op.getEps().convertToFloat()) << ", " << d << ", " << sum
     << ", " << out.ptr << " + r * " << d << ");\n";
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
  SmallVector<std::string> args = {"arena", "pool"};
  for (auto [argIndex, dimIndex] : callee.dynamicArgDims) {
    const Dim &dim = buffers[op.getOperand(argIndex)].dims[dimIndex];
    dimMap[llvm::formatv("a{0}_d{1}", argIndex, dimIndex).str()] = dim;
    args.push_back(dim.expr);
  }
  for (auto [j, operand] : llvm::enumerate(op.getOperands())) {
    const std::optional<PackSpec> &packing = callee.argPacking[j];
    if (operand.getType().isIndex()) {
      args.push_back(scalars[operand]);
    } else
      args.push_back(packing ? packedWeight(operand, *packing)
                             : buffers[operand].ptr);
  }
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    Dims dims;
    for (const Dim &d : callee.resultDims[i])
      dims.push_back(substitute(d, dimMap));
    args.push_back(allocate(result, dims).ptr);
  }
  calleeBytes = std::max(calleeBytes, callee.peakBytes);
  os << callee.name << "(" << llvm::join(args, ", ") << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitReturn(func::ReturnOp op) {
  for (auto [i, value] : llvm::enumerate(op.getOperands())) {
    Buffer b = buffers[value];
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
