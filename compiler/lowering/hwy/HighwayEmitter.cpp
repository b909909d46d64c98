//===- HighwayEmitter.cpp - tfm IR -> one Highway C++ file ----------------===//
//
// The generated file has three parts:
//  - per Highway target (re-included by foreach_target.h): one C++ function
//    per func.func, loops over the model's shapes around the runtime's
//    vector micro-kernels;
//  - once: the dispatch table, the weight table (names, shapes, default
//    initialisation), the FLOP counts and `tfm::rt::kModel`;
//  - once: the C API, forwarding to the runtime under the model's name.
//
// A printer of our own rather than EmitC: Highway code is templates, lambdas
// and per-target namespaces that EmitC's opaque types would only spell out
// as strings anyway, and the loops here carry run-time bounds (batch,
// sequence) that EmitC's static-shape lowering rejects.
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/HighwayEmitter.h"

#include "FunctionEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace tfm {

std::string cIdentifier(StringRef name) {
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) ? c : '_';
  if (id.empty() || llvm::isDigit(id[0]))
    id = "_" + id;
  return id;
}

namespace {

/// PyTorch's default initialisation of the module a weight belongs to, by
/// its state_dict name: what `--weights`-less runs fill it with.
std::pair<StringRef, float> defaultInit(StringRef name,
                                        ArrayRef<int64_t> shape) {
  auto uniform = [](int64_t fanIn) {
    return 1.0f / std::sqrt(static_cast<float>(fanIn));
  };
  if (name.ends_with("in_proj_weight")) // xavier_uniform over [3d, d]
    return {"Uniform",
            std::sqrt(6.0f / static_cast<float>(shape[0] + shape[1]))};
  if (name.ends_with("in_proj_bias") || name.ends_with("out_proj.bias"))
    return {"Zeros", 0.0f};
  if (name.contains("norm") && name.ends_with(".weight"))
    return {"Ones", 0.0f};
  if (name.contains("norm") && name.ends_with(".bias"))
    return {"Zeros", 0.0f};
  if (name.contains("embed"))
    return {"Normal", 1.0f};
  if (name.ends_with(".bias")) // nn.Linear bias: fan-in of its weight
    return {"Uniform", 0.0f};
  // nn.Linear weights [out, in] and per-head score tensors [h, a, dk]: 1/sqrt
  // of the last dimension.
  return {"Uniform", uniform(shape.back())};
}

class ModuleEmitter {
public:
  ModuleEmitter(ModuleOp module, StringRef cName, StringRef fileName,
                raw_ostream &out)
      : module(module), cName(cName), fileName(fileName), out(out) {}

  LogicalResult emit(HighwayEmitStats *stats);

private:
  LogicalResult collectFacts();
  void emitParamTable(raw_ostream &os);
  void emitPacking(raw_ostream &os);

  ModuleOp module;
  std::string cName;
  std::string fileName;
  raw_ostream &out;
  hwy::ModelFacts facts;
  SmallVector<ParamOp> params;
  SmallVector<KVCacheDeclOp> caches;
  func::FuncOp entry;
  /// `prefill` and `decode`, when the model has them.
  llvm::StringSet<> generationEntries;
};

LogicalResult ModuleEmitter::collectFacts() {
  for (ParamOp p : module.getOps<ParamOp>()) {
    facts.paramIndex[p.getSymName()] = params.size();
    params.push_back(p);
  }
  auto intAttr = [&](StringRef name) -> std::optional<int64_t> {
    if (auto a = module->getAttrOfType<IntegerAttr>(name))
      return a.getInt();
    return std::nullopt;
  };
  std::optional<int64_t> maxBatch = intAttr("tfm.max_batch");
  std::optional<int64_t> maxSeq = intAttr("tfm.max_seq_len");
  if (!maxBatch || !maxSeq)
    return module.emitError(
        "the module needs tfm.max_batch and tfm.max_seq_len attributes");
  facts.maxBatch = *maxBatch;
  facts.maxSeqLen = *maxSeq;
  for (KVCacheDeclOp c : module.getOps<KVCacheDeclOp>()) {
    facts.cacheIndex[c.getSymName()] = caches.size();
    caches.push_back(c);
  }
  bool hasPrefill = bool(module.lookupSymbol<func::FuncOp>("prefill"));
  bool hasDecode = bool(module.lookupSymbol<func::FuncOp>("decode"));
  if (hasPrefill != hasDecode)
    return module.emitError("a model has both @prefill and @decode or neither");
  if (hasPrefill)
    for (StringRef step : {"prefill", "decode"})
      generationEntries.insert(step);
  entry = module.lookupSymbol<func::FuncOp>("forward");
  if (!entry || entry.isExternal())
    return module.emitError("the module has no @forward function");
  return success();
}

void ModuleEmitter::emitParamTable(raw_ostream &os) {
  os << "static const tfm::rt::ParamInfo kParams[] = {\n";
  for (ParamOp p : params) {
    ArrayRef<int64_t> shape = p.getTensorType().getShape();
    auto [init, bound] = defaultInit(p.getSymName(), shape);
    if (init == "Uniform" && bound == 0.0f) {
      // A Linear bias: its weight is the same name with ".weight".
      std::string weightName =
          (p.getSymName().drop_back(strlen("bias")) + "weight").str();
      auto it = facts.paramIndex.find(weightName);
      int64_t fanIn =
          it == facts.paramIndex.end()
              ? shape.back()
              : params[it->second].getTensorType().getShape().back();
      bound = 1.0f / std::sqrt(static_cast<float>(fanIn));
    }
    SmallVector<std::string> dims;
    for (int64_t d : shape)
      dims.push_back(std::to_string(d));
    os << llvm::formatv("    {{\"{0}\", {1}, {2}, {{{3}}, "
                        "tfm::rt::ParamInit::{4}, {5:e9}f},\n",
                        p.getSymName(),
                        p.getAlias() ? "\"" + p.getAlias()->str() + "\""
                                     : std::string("nullptr"),
                        shape.size(), llvm::join(dims, ", "), init, bound);
  }
  os << "};\n\n";
}

void ModuleEmitter::emitPacking(raw_ostream &os) {
  os << "// GEMM weights, packed once after loading: panels of 32 output\n"
        "// columns (zero-padded), each holding every k; a stacked weight\n"
        "// (in_proj's Q, K, V) is packed segment by segment.\n"
        "static float *packPanels(const float *src, int64_t k, int64_t "
        "rowOffset, int64_t rows, float *dst) {\n"
        "  for (int64_t p = 0; p < (rows + 31) / 32; ++p)\n"
        "    for (int64_t kk = 0; kk < k; ++kk)\n"
        "      for (int64_t j = 0; j < 32; ++j) {\n"
        "        const int64_t n = p * 32 + j;\n"
        "        *dst++ = n < rows ? src[(rowOffset + n) * k + kk] : 0.0f;\n"
        "      }\n"
        "  return dst;\n"
        "}\n\n";
  SmallVector<std::string> sizes;
  for (const hwy::PackSpec &p : facts.packs)
    sizes.push_back(std::to_string(p.floats()));
  sizes.push_back("0"); // keeps the array non-empty
  os << "static const size_t kPackedFloats[] = {" << llvm::join(sizes, ", ")
     << "};\n\n";
  os << "static void packWeights(const float *const *w, float *const *packed) "
        "{\n";
  for (auto [j, p] : llvm::enumerate(facts.packs)) {
    os << "  // " << params[p.param].getSymName() << ": " << p.segments << " x "
       << p.segmentRows << " rows, k = " << p.k << "\n";
    os << "  {\n    float *dst = packed[" << j << "];\n";
    os << "    for (int64_t s = 0; s < " << p.segments << "; ++s)\n";
    os << "      dst = packPanels(w[" << p.param << "], " << p.k << ", s * "
       << p.segmentRows << ", " << p.segmentRows << ", dst);\n  }\n";
  }
  os << "}\n\n";
}

LogicalResult ModuleEmitter::emit(HighwayEmitStats *stats) {
  if (failed(collectFacts()))
    return failure();

  std::string body, flops;
  llvm::raw_string_ostream bodyStream(body), flopsStream(flops);
  raw_indented_ostream bodyOs(bodyStream), flopsOs(flopsStream);
  llvm::StringMap<hwy::FunctionSummary> summaries;
  size_t functions = 0;
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    if (f.isExternal())
      return f.emitError("external functions cannot be compiled");
    hwy::FunctionEmitter fe(f, facts, summaries, bodyOs, flopsOs);
    hwy::EntryKind kind = f == entry ? hwy::EntryKind::Forward
                          : generationEntries.contains(f.getSymName())
                              ? hwy::EntryKind::Generation
                              : hwy::EntryKind::None;
    if (failed(fe.emit(kind)))
      return failure();
    ++functions;
  }
  // One arena serves every entry point.
  size_t arenaBytes = summaries["forward"].peakBytes;
  for (StringRef step : {"prefill", "decode"})
    if (generationEntries.contains(step))
      arenaBytes = std::max(arenaBytes, summaries[step].peakBytes);

  // Inputs and the output, from the entry point's signature.
  SmallVector<std::string> inputs;
  int64_t dModel = 0, vocab = 0;
  for (auto [i, arg] : llvm::enumerate(entry.getArguments())) {
    auto type = cast<RankedTensorType>(arg.getType());
    auto name = entry.getArgAttrOfType<StringAttr>(i, "tfm.input");
    bool tokens = type.getElementType().isInteger(32);
    if (!tokens)
      dModel = type.getShape().back();
    inputs.push_back(llvm::formatv("{{\"{0}\", tfm::rt::InputKind::{1}}",
                                   name ? name.getValue() : "input",
                                   tokens ? "TokenIds" : "Embeddings")
                         .str());
  }
  entry.walk([&](EmbeddingOp e) {
    vocab = e.getTable().getType().getDimSize(0);
    dModel = e.getTable().getType().getDimSize(1);
  });
  auto resultType = cast<RankedTensorType>(entry.getResultTypes()[0]);

  StringRef name = module.getSymName() ? *module.getSymName() : "model";
  out << "// Generated by tfm-compile for model '" << name
      << "'. Do not edit.\n"
      << "//\n"
      << "// Highway re-includes this file once per SIMD target as \""
      << fileName << "\":\n"
      << "// compile it with its folder on the include path (-I).\n\n"
      << "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n"
      << "#include <cstring>\n\n"
      << "#include \"tfm/runtime/Arena.h\"\n"
      << "#include \"tfm/runtime/CApi.h\"\n"
      << "#include \"tfm/runtime/Model.h\"\n"
      << "#include \"tfm/runtime/ThreadPool.h\"\n"
      << "#include \"tfm/tfm.h\"\n\n"
      << "#undef HWY_TARGET_INCLUDE\n"
      << "#define HWY_TARGET_INCLUDE \"" << fileName << "\"\n"
      << "#include \"hwy/foreach_target.h\" // IWYU pragma: keep\n"
      << "#include \"hwy/highway.h\"\n"
      << "#include \"tfm/runtime/kernels/activation-inl.h\"\n"
      << "#include \"tfm/runtime/kernels/attention-inl.h\"\n"
      << "#include \"tfm/runtime/kernels/gemm-inl.h\"\n"
      << "#include \"tfm/runtime/kernels/norm-inl.h\"\n"
      << "#include \"tfm/runtime/kernels/vector-inl.h\"\n\n"
      << "HWY_BEFORE_NAMESPACE();\n"
      << "namespace tfm_generated {\n"
      << "namespace HWY_NAMESPACE {\n"
      << "namespace k = tfm::rt::kernels::HWY_NAMESPACE;\n\n"
      << body << "} // namespace HWY_NAMESPACE\n"
      << "} // namespace tfm_generated\n"
      << "HWY_AFTER_NAMESPACE();\n\n"
      << "#if HWY_ONCE\n"
      << "namespace tfm_generated {\n\n"
      << "// --target=native compiles one target (HWY_COMPILE_ONLY_STATIC);\n"
      << "// otherwise every x86-64 target, chosen at run time.\n"
      << "#if !defined(HWY_COMPILE_ONLY_STATIC)\n"
      << "HWY_EXPORT(forward);\n"
      << "#endif\n\n"
      << "static void forwardDispatch(const float *const *w, const "
         "tfm::rt::InputView *in, float *out, tfm::rt::Arena &arena, "
         "tfm::rt::ThreadPool &pool) {\n"
      << "#if defined(HWY_COMPILE_ONLY_STATIC)\n"
      << "  HWY_STATIC_DISPATCH(forward)(w, in, out, arena, pool);\n"
      << "#else\n"
      << "  HWY_DYNAMIC_DISPATCH(forward)(w, in, out, arena, pool);\n"
      << "#endif\n"
      << "}\n\n";
  for (StringRef step : {"prefill", "decode"}) {
    if (!generationEntries.contains(step))
      continue;
    out << "#if !defined(HWY_COMPILE_ONLY_STATIC)\n"
        << "HWY_EXPORT(" << step << ");\n"
        << "#endif\n"
        << "static void " << step
        << "Dispatch(const float *const *w, float *const *caches, const "
           "tfm::rt::InputView *in, int64_t position, int64_t memoryLength, "
           "float *out, tfm::rt::Arena &arena, tfm::rt::ThreadPool &pool) "
           "{\n"
        << "#if defined(HWY_COMPILE_ONLY_STATIC)\n"
        << "  HWY_STATIC_DISPATCH(" << step
        << ")(w, caches, in, position, memoryLength, out, arena, pool);\n"
        << "#else\n"
        << "  HWY_DYNAMIC_DISPATCH(" << step
        << ")(w, caches, in, position, memoryLength, out, arena, pool);\n"
        << "#endif\n"
        << "}\n\n";
  }
  SmallVector<std::string> cacheSizes;
  for (KVCacheDeclOp c : caches) {
    auto t = cast<KVCacheType>(c.getType());
    cacheSizes.push_back(std::to_string(2 * t.getMaxBatch() * t.getHeads() *
                                        t.getMaxSeq() * t.getHeadDim()));
  }
  cacheSizes.push_back("0"); // keeps the array non-empty
  out << "// Keys then values of each self-attention, kept across calls.\n"
      << "static const size_t kCacheFloats[] = {"
      << llvm::join(cacheSizes, ", ") << "};\n\n"
      << flops;
  emitParamTable(out);
  emitPacking(out);
  out << "static const tfm::rt::InputInfo kInputs[] = {"
      << llvm::join(inputs, ", ") << "};\n\n"
      << "} // namespace tfm_generated\n\n"
      << "const tfm::rt::ModelInfo tfm::rt::kModel = {\n"
      << "    \"" << name << "\",\n"
      << "    tfm_generated::kParams, " << params.size() << ",\n"
      << "    tfm_generated::kInputs, " << inputs.size() << ",\n"
      << "    /*dModel=*/" << dModel << ", /*vocabSize=*/" << vocab
      << ", /*outputWidth=*/" << resultType.getShape().back() << ",\n"
      << "    /*maxSeqLen=*/" << facts.maxSeqLen << ", /*maxBatch=*/"
      << facts.maxBatch << ",\n"
      << "    /*arenaBytes=*/" << arenaBytes << ",\n"
      << "    tfm_generated::matmulFlops, tfm_generated::forwardDispatch,\n"
      << "    /*numPacked=*/" << facts.packs.size()
      << ", tfm_generated::kPackedFloats, tfm_generated::packWeights,\n"
      << "    /*numCaches=*/" << caches.size()
      << ", tfm_generated::kCacheFloats,\n"
      << (generationEntries.empty() ? "    nullptr, nullptr};\n\n"
                                    : "    tfm_generated::prefillDispatch, "
                                      "tfm_generated::decodeDispatch};\n\n")
      << "// The C API of contract section 5, under the model's name.\n"
      << "extern \"C\" {\n"
      << "tfm_model *" << cName
      << "_create(const char *weights_path, char *err, size_t err_len) {\n"
      << "  return tfm_rt_create(&tfm::rt::kModel, weights_path, err, "
         "err_len);\n"
      << "}\n"
      << "int " << cName
      << "_forward(tfm_model *model, const tfm_tensor *inputs, size_t "
         "n_inputs, tfm_tensor *output) {\n"
      << "  return tfm_rt_forward(model, inputs, n_inputs, output);\n"
      << "}\n"
      << "int " << cName
      << "_prefill(tfm_model *model, const tfm_tensor *inputs, size_t "
         "n_inputs, tfm_tensor *output) {\n"
      << "  return tfm_rt_prefill(model, inputs, n_inputs, output);\n"
      << "}\n"
      << "int " << cName
      << "_decode(tfm_model *model, const tfm_tensor *tokens, tfm_tensor "
         "*output) {\n"
      << "  return tfm_rt_decode(model, tokens, output);\n"
      << "}\n"
      << "const char *" << cName << "_last_error(const tfm_model *model) {\n"
      << "  return tfm_rt_last_error(model);\n"
      << "}\n"
      << "void " << cName << "_destroy(tfm_model *model) { "
      << "tfm_rt_destroy(model); }\n"
      << "}\n"
      << "#endif // HWY_ONCE\n";

  if (stats) {
    stats->arenaBytes = arenaBytes;
    stats->functions = functions;
  }
  return success();
}

} // namespace

LogicalResult emitHighwayCpp(ModuleOp module, StringRef cName,
                             StringRef fileName, raw_ostream &os,
                             HighwayEmitStats *stats) {
  return ModuleEmitter(module, cName, fileName, os).emit(stats);
}

} // namespace tfm
