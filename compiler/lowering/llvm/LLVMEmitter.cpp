//===- LLVMEmitter.cpp - LLVM dialect -> object file; the C++ glue --------===//
//
// The object comes from LLVM's TargetMachine in-process. What the runtime
// needs besides the computation (kModel, the weight tables, the C API) is
// the same C++ the Highway backend prints (ModelGlue), plus an adapter that
// wraps the runtime's pointers and shapes into memref descriptors for
// `_mlir_ciface_forward` (exported as `tfm_<model>_forward`).
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/LLVMBackend.h"
#include "tfm/Lowering/ModelGlue.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mlir::tfm;

namespace tfm {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// "{d0, d1, ...}" of a memref descriptor's sizes: static sizes as numbers,
/// dynamic ones from the input they belong to.
std::string sizesOf(ArrayRef<int64_t> shape, StringRef batch, StringRef seq) {
  SmallVector<std::string> sizes;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (!ShapedType::isDynamic(d))
      sizes.push_back(std::to_string(d));
    else
      sizes.push_back((i == 0 ? batch : seq).str());
  }
  return "{" + llvm::join(sizes, ", ") + "}";
}

/// The middle end's defaults this backend changes, each unless the command
/// line named it (LLVM's own options are tfm-compile's too): neither a
/// vectorised loop's remainder vectorised again nor a scalar loop unrolled
/// by a trip count known only at run time. The linalg loops of attention,
/// norms and softmax are vectorised whole by LLVM, each into a main loop, a
/// vectorised epilogue and an unrolled scalar remainder; the two removed
/// copies are about 40% of the object's compile time (a 2-layer
/// encoder_decoder: 26 -> 16 s) and no measured speed (BERT-base seq 128,
/// GPT-2 small, 1 thread: within the run-to-run noise). The GEMMs' register
/// tiles are vector code already and not touched.
///
/// And no loop strength reduction in the code generator: on the loop nests
/// this backend emits it took a quarter of the object's compile time (a
/// 2-layer encoder_decoder: 8.5 s in the LLVM pipelines, 2.1 s of them in
/// LSR; the whole compile 11.7 -> 8.9 s) and made no measured difference to
/// the code's speed (BERT-base layer seq 128: 20.5 and 20.5 ms; a GPT-2
/// small-shaped 2-layer decoder, seq 512: 464-477 and 456-462 ms, its
/// decode steps 41 tokens/s either way; 1 thread, interleaved runs).
void setMiddleEndDefaults() {
  auto &options = llvm::cl::getRegisteredOptions();
  auto setDefault = [&](StringRef name, StringRef value) {
    auto it = options.find(name);
    if (it != options.end() && it->second->getNumOccurrences() == 0)
      it->second->addOccurrence(0, name, value);
  };
  setDefault("enable-epilogue-vectorization", "false");
  setDefault("unroll-runtime", "false");
  setDefault("disable-lsr", "true");
}

/// -O2, not -O3: O3's extra passes (non-trivial loop unswitching, argument
/// promotion, a higher inlining threshold) took the object of a 2-layer
/// encoder_decoder from 11 to 19 s and made no measured difference to the
/// code's speed (BERT-base seq 128, GPT-2 small seq 512, d 256 x 4 layers,
/// seq-4096 window and BigBird layers, 1 thread, interleaved runs).
enum class MiddleEnd { O1 = 1, O2, O3 };
llvm::cl::opt<MiddleEnd> middleEndLevel(
    "tfm-llvm-opt-level",
    llvm::cl::desc("The LLVM backend's middle-end pipeline (default 2)"),
    llvm::cl::values(clEnumValN(MiddleEnd::O1, "1", "LLVM's -O1"),
                     clEnumValN(MiddleEnd::O2, "2", "LLVM's -O2"),
                     clEnumValN(MiddleEnd::O3, "3", "LLVM's -O3")),
    llvm::cl::init(MiddleEnd::O2));

llvm::OptimizationLevel middleEndPipelineLevel() {
  switch (middleEndLevel) {
  case MiddleEnd::O1:
    return llvm::OptimizationLevel::O1;
  case MiddleEnd::O3:
    return llvm::OptimizationLevel::O3;
  case MiddleEnd::O2:
    break;
  }
  return llvm::OptimizationLevel::O2;
}

} // namespace

namespace {

/// The adapter from the runtime's entry point to `_mlir_ciface_NAME` of
/// `entry` (after tfm-weights-to-arguments): a memref descriptor per tensor,
/// weight and cache argument; `position` and `memory_length` by value.
llvm::Error emitDispatch(StringRef cName, func::FuncOp entry, bool step,
                         const llvm::StringMap<unsigned> &paramIndex,
                         const llvm::StringMap<unsigned> &cacheIndex,
                         std::vector<PackSpec> &packs, raw_ostream &os) {
  StringRef name = entry.getSymName();
  if (entry.getNumResults() != 1)
    return error("@" + name + " must have one result");
  SmallVector<std::string> declParams = {"void *"}, setup,
                           callArgs = {"&result"};
  unsigned tensorInputs = 0;
  for (auto [i, arg] : llvm::enumerate(entry.getArguments())) {
    std::string var = "a" + std::to_string(i);
    auto input = entry.getArgAttrOfType<StringAttr>(i, "tfm.input");
    auto param = entry.getArgAttrOfType<StringAttr>(i, "tfm.param");
    auto cache = entry.getArgAttrOfType<StringAttr>(i, "tfm.cache");
    auto packsArg = entry.getArgAttrOfType<IntegerAttr>(i, "tfm.packs");
    if (arg.getType().isIndex()) {
      StringRef which = input ? input.getValue() : "";
      if (!step || (which != "position" && which != "memory_length"))
        return error(llvm::formatv("argument {0} of @{1} is an index other "
                                   "than a step's position or memory_length",
                                   i, name));
      declParams.push_back("int64_t");
      callArgs.push_back(which == "position" ? "position" : "memoryLength");
      continue;
    }
    std::string elem = "float", data, batch = "1", seq = "1";
    SmallVector<int64_t> shape;
    if (auto type = dyn_cast<StateBufferTypeInterface>(arg.getType())) {
      auto it = cache ? cacheIndex.find(cache.getValue()) : cacheIndex.end();
      if (it == cacheIndex.end())
        return error(llvm::formatv(
            "argument {0} of @{1} is a cache no tfm.kv_cache declares", i,
            name));
      data = "caches[" + std::to_string(it->second) + "]";
      shape = {type.getFloats()};
    } else if (auto type = dyn_cast<RankedTensorType>(arg.getType())) {
      shape.assign(type.getShape().begin(), type.getShape().end());
      if (packsArg) {
        // The runtime's packed copy of the weight argument it packs.
        unsigned of = packsArg.getInt();
        auto ofName = of < entry.getNumArguments()
                          ? entry.getArgAttrOfType<StringAttr>(of, "tfm.param")
                          : StringAttr();
        auto it =
            ofName ? paramIndex.find(ofName.getValue()) : paramIndex.end();
        auto segments = entry.getArgAttrOfType<IntegerAttr>(i, "tfm.segments");
        if (it == paramIndex.end() || !segments)
          return error(llvm::formatv(
              "argument {0} of @{1} packs no weight argument", i, name));
        auto weightType =
            cast<RankedTensorType>(entry.getArgument(of).getType());
        PackSpec spec{it->second, segments.getInt(),
                      weightType.getDimSize(0) / segments.getInt(),
                      weightType.getDimSize(1)};
        spec.bf16 = bool(entry.getArgAttr(i, "tfm.bf16"));
        size_t j = 0;
        while (j < packs.size() &&
               !(packs[j].param == spec.param && packs[j].sameLayout(spec)))
          ++j;
        if (j == packs.size())
          packs.push_back(spec);
        data = "w[" + std::to_string(paramIndex.size() + j) + "]";
      } else if (param) {
        auto it = paramIndex.find(param.getValue());
        if (it == paramIndex.end())
          return error(llvm::formatv(
              "argument {0} of @{1} is a weight no tfm.param declares", i,
              name));
        data = "w[" + std::to_string(it->second) + "]";
      } else {
        if (type.getElementType().isInteger(32))
          elem = "int32_t";
        std::string in = "in[" + std::to_string(tensorInputs++) + "]";
        data = "static_cast<const " + elem + " *>(" + in + ".data)";
        batch = in + ".batch";
        seq = in + ".seq";
      }
    } else {
      return error(llvm::formatv("argument {0} of @{1} has a type the glue "
                                 "cannot pass",
                                 i, name));
    }
    setup.push_back(llvm::formatv("  MemRef<{0}, {1}> {2}({3}, {4});\n", elem,
                                  shape.size(), var, data,
                                  sizesOf(shape, batch, seq)));
    declParams.push_back("void *");
    callArgs.push_back("&" + var);
  }
  if (tensorInputs == 0)
    return error("@" + name + " takes no input tensor");
  // The result comes back as a descriptor of a buffer the function
  // allocated (the first parameter); the glue copies it out and frees it.
  auto resultType = cast<RankedTensorType>(entry.getResultTypes()[0]);
  std::string last = "in[" + std::to_string(tensorInputs - 1) + "]";
  std::string resultSizes =
      sizesOf(resultType.getShape(), last + ".batch", last + ".seq");

  os << "extern \"C\" void " << entrySymbol(cName, name) << "("
     << llvm::join(declParams, ", ") << ");\n\n"
     << "static void " << name << "Dispatch(const float *const *w, "
     << (step ? "float *const *caches, " : "")
     << "const tfm::rt::InputView *in, "
     << (step ? "int64_t position, int64_t memoryLength, " : "")
     << "float *out, tfm::rt::Arena &, tfm::rt::ThreadPool &pool) {\n"
     << "  PoolScope scope(pool);\n";
  for (const std::string &line : setup)
    os << line;
  os << "  MemRef<float, " << resultType.getRank() << "> result(nullptr, "
     << resultSizes << ");\n"
     << "  " << entrySymbol(cName, name) << "(" << llvm::join(callArgs, ", ")
     << ");\n"
     << "  copyOut(result, out);\n"
     << "}\n\n";
  return llvm::Error::success();
}

} // namespace

llvm::Expected<std::string> emitLLVMParallelGlue(ModuleOp lowered,
                                                 StringRef cName) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "namespace tfm_generated {\n\n";
  for (auto func : lowered.getOps<LLVM::LLVMFuncOp>()) {
    StringRef name = func.getName();
    if (!func.isExternal() || !name.consume_front("_mlir_ciface_") ||
        !name.starts_with(kParallelLoopPrefix))
      continue;
    // The C interface passes memrefs as their descriptors' addresses and
    // indices as int64_t: the glue passes each argument through.
    LLVM::LLVMFunctionType type = func.getFunctionType();
    if (!isa<LLVM::LLVMVoidType>(type.getReturnType()) ||
        type.getNumParams() == 0 || !type.getParamType(0).isInteger(64))
      return error("@" + func.getName() +
                   " is not (int64_t n, captures...) -> void");
    SmallVector<std::string> types, params, args;
    for (auto [i, param] : llvm::enumerate(type.getParams())) {
      std::string cType;
      if (isa<LLVM::LLVMPointerType>(param))
        cType = "void *";
      else if (param.isInteger(1))
        cType = "bool";
      else if (param.isInteger(8) || param.isInteger(16) ||
               param.isInteger(32) || param.isInteger(64))
        cType = "int" + std::to_string(param.getIntOrFloatBitWidth()) + "_t";
      else if (param.isF32())
        cType = "float";
      else if (param.isF64())
        cType = "double";
      else
        return error(llvm::formatv("argument {0} of @{1} has a type the glue "
                                   "cannot pass",
                                   i, func.getName()));
      types.push_back(cType);
      params.push_back(cType + " a" + std::to_string(i));
      args.push_back(i == 0 ? "i" : "a" + std::to_string(i));
    }
    // The body takes the index where the dispatch takes the count.
    os << "extern \"C\" void " << entrySymbol(cName, name.str() + "_body")
       << "(" << llvm::join(types, ", ") << ");\n"
       << "extern \"C\" void " << entrySymbol(cName, name) << "("
       << llvm::join(params, ", ") << ") {\n"
       << "  runParallel(a0, [&](int64_t i) { "
       << entrySymbol(cName, name.str() + "_body") << "("
       << llvm::join(args, ", ") << "); });\n"
       << "}\n\n";
  }
  os << "} // namespace tfm_generated\n";
  return text;
}

std::string entrySymbol(StringRef cName, StringRef entry) {
  return ("tfm_" + cName + "_" + entry).str();
}

llvm::Expected<std::string> emitLLVMGlue(ModuleOp declarations,
                                         ModuleOp entries, StringRef cName) {
  llvm::StringMap<unsigned> paramIndex, cacheIndex;
  for (ParamOp p : declarations.getOps<ParamOp>())
    paramIndex.try_emplace(p.getSymName(), paramIndex.size());
  for (KVCacheDeclOp c : declarations.getOps<KVCacheDeclOp>())
    cacheIndex.try_emplace(c.getSymName(), cacheIndex.size());
  func::FuncOp original = declarations.lookupSymbol<func::FuncOp>("forward");
  func::FuncOp forward = entries.lookupSymbol<func::FuncOp>("forward");
  if (!original || !forward)
    return error("the module has no @forward function");
  func::FuncOp prefill = entries.lookupSymbol<func::FuncOp>("prefill");
  func::FuncOp decode = entries.lookupSymbol<func::FuncOp>("decode");
  if (bool(prefill) != bool(decode))
    return error("a model has both @prefill and @decode or neither");

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// Generated by tfm-compile (LLVM backend) for model '" << cName
     << "'. Do not edit.\n"
     << "// The computation is in the object tfm-compile wrote with it;\n"
     << "// this file is what the runtime needs to call it.\n\n"
     << "#include <malloc.h>\n\n#include <algorithm>\n#include "
        "<cstdint>\n#include "
        "<cstdlib>\n#include <cstring>\n\n"
     << "#include \"tfm/runtime/Arena.h\"\n"
     << "#include \"tfm/runtime/AttentionWeights.h\"\n"
     << "#include \"tfm/runtime/CApi.h\"\n"
     << "#include \"tfm/runtime/Model.h\"\n"
     << "#include \"tfm/runtime/ThreadPool.h\"\n"
     << "#include \"tfm/runtime/WeightFormat.h\"\n"
     << "#include \"tfm/tfm.h\"\n\n"
     << "namespace tfm_generated {\n\n"
     << "// MLIR's strided memref descriptor, row-major.\n"
     << "template <typename T, int R> struct MemRef {\n"
     << "  T *allocated, *aligned;\n"
     << "  int64_t offset, sizes[R], strides[R];\n"
     << "  MemRef(const T *data, const int64_t (&dims)[R])\n"
     << "      : allocated(const_cast<T *>(data)), "
        "aligned(const_cast<T *>(data)), offset(0) {\n"
     << "    int64_t stride = 1;\n"
     << "    for (int i = R - 1; i >= 0; --i) {\n"
     << "      sizes[i] = dims[i];\n"
     << "      strides[i] = stride;\n"
     << "      stride *= dims[i];\n"
     << "    }\n"
     << "  }\n"
     << "};\n\n"
     << "// The runtime services the object calls (kRuntimeCallPrefix): the\n"
     << "// attention weights of --dump-attention, computed only while the\n"
     << "// runtime collects them, and copied out of the generated buffer.\n"
     << "extern \"C\" int64_t "
     << entrySymbol(cName,
                    (kRuntimeCallPrefix + "attention_weights_wanted").str())
     << "(int64_t slot) {\n"
     << "  return tfm::rt::attentionWeightsWanted(slot) ? 1 : 0;\n"
     << "}\n\n"
     << "extern \"C\" void "
     << entrySymbol(cName,
                    (kRuntimeCallPrefix + "attention_weights_write").str())
     << "(int64_t slot, const MemRef<float, 4> *w) {\n"
     << "  float *out = tfm::rt::attentionWeightsFor(slot, w->sizes[0], "
        "w->sizes[1], w->sizes[2], w->sizes[3]);\n"
     << "  if (out == nullptr)\n"
     << "    return;\n"
     << "  const float *in = w->aligned + w->offset;\n"
     << "  for (int64_t b = 0; b < w->sizes[0]; ++b)\n"
     << "    for (int64_t h = 0; h < w->sizes[1]; ++h)\n"
     << "      for (int64_t i = 0; i < w->sizes[2]; ++i)\n"
     << "        for (int64_t j = 0; j < w->sizes[3]; ++j)\n"
     << "          *out++ = in[b * w->strides[0] + h * w->strides[1] + i * "
        "w->strides[2] + j * w->strides[3]];\n"
     << "}\n\n"
     << "// The generated code allocates its intermediate tensors with malloc\n"
     << "// and frees them as it goes: keep freed memory in the heap (no\n"
     << "// mmap/munmap and page faults on every call).\n"
     << "[[maybe_unused]] static const bool kHeapKept = [] {\n"
     << "  mallopt(M_MMAP_THRESHOLD, 1 << 30);\n"
     << "  mallopt(M_TRIM_THRESHOLD, 1 << 30);\n"
     << "  return true;\n"
     << "}();\n\n"
     << "// The thread pool of the call in progress on this thread: the\n"
     << "// generated code's parallel loops run their iterations on it.\n"
     << "static thread_local tfm::rt::ThreadPool *currentPool = nullptr;\n\n"
     << "struct PoolScope {\n"
     << "  explicit PoolScope(tfm::rt::ThreadPool &pool) : saved(currentPool) "
        "{\n"
     << "    currentPool = &pool;\n"
     << "  }\n"
     << "  ~PoolScope() { currentPool = saved; }\n"
     << "  tfm::rt::ThreadPool *saved;\n"
     << "};\n\n"
     << "// f(i) for i in [0, n) on the current pool; a loop inside an\n"
     << "// iteration (or with no pool) runs on its own thread.\n"
     << "template <typename F> void runParallel(int64_t n, const F &f) {\n"
     << "  tfm::rt::ThreadPool *pool = currentPool;\n"
     << "  if (pool == nullptr) {\n"
     << "    for (int64_t i = 0; i < n; ++i)\n"
     << "      f(i);\n"
     << "    return;\n"
     << "  }\n"
     << "  currentPool = nullptr;\n"
     << "  pool->parallelFor(n, f);\n"
     << "  currentPool = pool;\n"
     << "}\n\n"
     << "// The result the generated function returns, copied to the\n"
     << "// runtime's output row by row (it may be a strided view of a larger\n"
     << "// buffer, such as a GEMM's padded rows) and its buffer freed.\n"
     << "template <int R> void copyOut(const MemRef<float, R> &result, "
        "float *out) {\n"
     << "  int64_t rows = 1;\n"
     << "  for (int i = 0; i + 1 < R; ++i)\n"
     << "    rows *= result.sizes[i];\n"
     << "  const int64_t width = result.sizes[R - 1];\n"
     << "  for (int64_t r = 0; r < rows; ++r) {\n"
     << "    int64_t at = result.offset, rest = r;\n"
     << "    for (int i = R - 2; i >= 0; --i) {\n"
     << "      at += (rest % result.sizes[i]) * result.strides[i];\n"
     << "      rest /= result.sizes[i];\n"
     << "    }\n"
     << "    const float *row = result.aligned + at;\n"
     << "    if (result.strides[R - 1] == 1)\n"
     << "      std::memcpy(out + r * width, row, width * sizeof(float));\n"
     << "    else\n"
     << "      for (int64_t j = 0; j < width; ++j)\n"
     << "        out[r * width + j] = row[j * result.strides[R - 1]];\n"
     << "  }\n"
     << "  std::free(result.allocated);\n"
     << "}\n\n";
  ModelGlue glue;
  for (auto [f, step] : {std::pair{forward, false}, std::pair{prefill, true},
                         std::pair{decode, true}})
    if (f)
      if (llvm::Error e = emitDispatch(cName, f, step, paramIndex, cacheIndex,
                                       glue.packs, os))
        return std::move(e);
  glue.module = declarations;
  glue.cName = cName.str();
  glue.entry = original;
  glue.generation = bool(prefill);
  // The matmul FLOPs of the decomposed IR, as the Highway backend counts
  // them.
  FailureOr<std::string> flops = emitMatmulFlops(entries);
  if (failed(flops))
    return error("counting the model's matmul FLOPs failed");
  glue.flopsDefinition = *flops;
  emitModelGlue(glue, os);
  return text;
}

llvm::Error emitLLVMCode(ModuleOp module, StringRef cName, bool native,
                         bool emitIR, llvm::raw_ostream &os) {
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "tfm");
  if (!llvmModule)
    return error("translating the LLVM dialect to LLVM IR failed");
  // Only the entry points' C interfaces leave the object, under the
  // model's name: `forward`, `encoder_layer` and the like stay internal and
  // cannot clash with a program's own symbols when it links the object.
  for (llvm::Function &f : *llvmModule) {
    StringRef name = f.getName();
    if (f.isDeclaration()) {
      // The parallel loops' dispatch functions and the runtime services,
      // defined by the glue.
      if (name.consume_front("_mlir_ciface_") &&
          (name.starts_with(kParallelLoopPrefix) ||
           name.starts_with(kRuntimeCallPrefix)))
        f.setName(entrySymbol(cName, name));
      continue;
    }
    if (name.consume_front("_mlir_ciface_"))
      f.setName(entrySymbol(cName, name));
    else
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  }

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return error("no LLVM target for " + triple.str() + ": " + lookupError);
  std::string cpu = native ? llvm::sys::getHostCPUName().str() : "x86-64";
  std::string features;
  if (native) {
    SmallVector<std::string> enabled;
    for (const auto &[name, on] : llvm::sys::getHostCPUFeatures())
      enabled.push_back((on ? "+" : "-") + name.str());
    features = llvm::join(enabled, ",");
  }
  llvm::TargetOptions options;
  // a * b + c as one FMA (the vectorised GEMM's multiply-add).
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);

  // The middle end at -O2 (vectorisers, inlining of the loop nests).
  setMiddleEndDefaults();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // LLVM's own instrumentation: --time-passes, --print-after-all and the
  // like on the command line apply to the middle end too.
  llvm::PassInstrumentationCallbacks instrumentation;
  llvm::StandardInstrumentations standard(llvmContext,
                                          /*DebugLogging=*/false);
  standard.registerCallbacks(instrumentation, &mam);
  llvm::PassBuilder builder(machine.get(), llvm::PipelineTuningOptions(),
                            std::nullopt, &instrumentation);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      builder.buildPerModuleDefaultPipeline(middleEndPipelineLevel());
  mpm.run(*llvmModule, mam);

  if (emitIR) {
    llvmModule->print(os, nullptr);
    return llvm::Error::success();
  }
  llvm::SmallString<0> object;
  llvm::raw_svector_ostream objectStream(object);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, objectStream, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return error("this LLVM target cannot emit object files");
  codegen.run(*llvmModule);
  os << object;
  return llvm::Error::success();
}

} // namespace tfm
