//===- tfm-compile.cpp - model description -> native artifact -------------===//
//
// Exit status (contract section 1): 0 on success, 1 on a user error (bad
// model file, bad option), 2 on an internal error.
//
//===----------------------------------------------------------------------===//

#include "tfm/Frontend/HuggingFace.h"
#include "tfm/Frontend/ModelBuilder.h"
#include "tfm/Frontend/ModelConfig.h"
#include "tfm/Frontend/ModelMemory.h"
#include "tfm/Lowering/HighwayEmitter.h"
#include "tfm/Lowering/LLVMBackend.h"
#include "tfm/Transforms/Passes.h"

#include "NativeBuild.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace llvm;

namespace {

enum class Emit { Exe, Lib, Obj, ModelJson, Mlir, MlirOpt, Cpp, Llvm };
enum class Backend { Hwy, Llvm };
enum class Target { Native, Generic };
enum class WeightDtype { F32, BF16, F16, Int8 };
enum class Compute { F32, BF16 };

// --help prints categories sorted by name: tfm's own options ("Compile
// ...") come before LLVM's "Generic Options" and MLIR's debugging switches.
cl::OptionCategory category("Compile options");
cl::OptionCategory mlirCategory(
    "MLIR debugging options",
    "MLIR's own switches, passed through to the pipeline tfm-compile runs");

cl::opt<std::string> inputPath(cl::Positional,
                               cl::desc("MODEL.json, or a Hugging Face folder "
                                        "(config.json + model.safetensors)"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output path ('-' for stdout)"),
                                cl::value_desc("OUT"), cl::init(""),
                                cl::cat(category));
cl::opt<Emit> emit(
    "emit", cl::desc("What to produce"), cl::init(Emit::Exe),
    cl::values(clEnumValN(Emit::Exe, "exe", "a native executable (default)"),
               clEnumValN(Emit::Lib, "lib", "a shared library and C header"),
               clEnumValN(Emit::Obj, "obj", "an object file and C header"),
               clEnumValN(Emit::ModelJson, "model-json",
                          "the model description (what a Hugging Face "
                          "config.json maps to)"),
               clEnumValN(Emit::Mlir, "mlir", "the tfm IR from the frontend"),
               clEnumValN(Emit::MlirOpt, "mlir-opt",
                          "the IR after the whole pipeline"),
               clEnumValN(Emit::Cpp, "cpp", "the generated Highway C++"),
               clEnumValN(Emit::Llvm, "llvm", "the LLVM IR")),
    cl::cat(category));
cl::opt<Backend> backend(
    "backend", cl::desc("Which lowering produces the code"),
    cl::init(Backend::Hwy),
    cl::values(clEnumValN(Backend::Hwy, "hwy", "Highway C++ (default)"),
               clEnumValN(Backend::Llvm, "llvm", "MLIR's LLVM dialect")),
    cl::cat(category));
cl::opt<Target> target(
    "target", cl::desc("Which CPUs the code runs on"), cl::init(Target::Native),
    cl::values(clEnumValN(Target::Native, "native", "tuned for this CPU"),
               clEnumValN(Target::Generic, "generic", "any x86-64")),
    cl::cat(category));
cl::opt<WeightDtype> weightDtype(
    "weight-dtype",
    cl::desc("The format the model keeps its GEMM weights in (converted at "
             "load from whatever the file holds)"),
    cl::init(WeightDtype::F32),
    cl::values(clEnumValN(WeightDtype::F32, "f32", "float32 (default)"),
               clEnumValN(WeightDtype::BF16, "bf16",
                          "bfloat16, rounded to nearest even"),
               clEnumValN(WeightDtype::F16, "f16",
                          "float16, rounded to nearest even"),
               clEnumValN(WeightDtype::Int8, "int8",
                          "int8 with an f32 scale per 32 input columns")),
    cl::cat(category));
cl::opt<Compute> compute(
    "compute", cl::desc("The precision of the GEMMs' inputs"),
    cl::init(Compute::F32),
    cl::values(clEnumValN(Compute::F32, "f32", "float32 (default)"),
               clEnumValN(Compute::BF16, "bf16",
                          "GEMM inputs rounded to bfloat16, sums in f32")),
    cl::cat(category));
cl::opt<int64_t> maxSeqLen(
    "max-seq-len",
    cl::desc("Longest sequence the artifact accepts (default: max_seq_len)"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
cl::opt<int64_t> maxBatch("max-batch",
                          cl::desc("Largest batch the artifact accepts"),
                          cl::value_desc("N"), cl::init(1), cl::cat(category));
cl::opt<bool> verbose("v",
                      cl::desc("Print each stage and its time, and the "
                               "pipeline's remarks (as --remarks)"),
                      cl::cat(category));
// Contract section 1's spelling of MLIR's --mlir-print-ir-* switches.
cl::opt<bool> printIRAfterAll(
    "print-ir-after-all",
    cl::desc("Print the IR after each pass of the pipeline, to stderr"),
    cl::cat(category));
cl::list<std::string> printIRAfter(
    "print-ir-after", cl::value_desc("PASS"), cl::CommaSeparated,
    cl::desc("Print the IR after the named passes of the pipeline"),
    cl::cat(category));
cl::opt<bool> printIRBeforeAll(
    "print-ir-before-all",
    cl::desc("Print the IR before each pass of the pipeline, to stderr"),
    cl::cat(category));
cl::list<std::string> printIRBefore(
    "print-ir-before", cl::value_desc("PASS"), cl::CommaSeparated,
    cl::desc("Print the IR before the named passes of the pipeline"),
    cl::cat(category));
cl::opt<int64_t> l1CacheBytes(
    "l1-cache-bytes",
    cl::desc("L1 data cache the Highway backend tiles GEMMs for (default: "
             "this CPU's with --target=native, 48 KiB with generic)"),
    cl::value_desc("BYTES"), cl::init(0), cl::cat(category));
cl::opt<int64_t> l2CacheBytes(
    "l2-cache-bytes",
    cl::desc("L2 cache the Highway backend blocks GEMMs for (default: this "
             "CPU's with --target=native, 1 MiB with generic)"),
    cl::value_desc("BYTES"), cl::init(0), cl::cat(category));
cl::opt<bool> remarks(
    "remarks",
    cl::desc("Print a remark for each fusion the pipeline (and the Highway "
             "backend) does and each one it does not do, with the reason"),
    cl::cat(category));

constexpr int kUserError = 1;
constexpr int64_t kMaxSeqLen = int64_t(1) << 24;
constexpr int64_t kMaxBatch = int64_t(1) << 16;
constexpr int kInternalError = 2;

/// Times one stage for `-v`.
class Stage {
public:
  explicit Stage(StringRef name)
      : name(name), start(std::chrono::steady_clock::now()) {}
  ~Stage() {
    if (!verbose)
      return;
    std::chrono::duration<double, std::milli> ms =
        std::chrono::steady_clock::now() - start;
    errs() << format("tfm-compile: %-28s %9.2f ms\n", name.str().c_str(),
                     ms.count());
  }

private:
  StringRef name;
  std::chrono::steady_clock::time_point start;
};

int userError(const Twine &message) {
  WithColor::error(errs(), "tfm-compile") << message << "\n";
  return kUserError;
}

int internalError(const Twine &message) {
  WithColor::error(errs(), "tfm-compile")
      << "internal error: " << message << "\n";
  return kInternalError;
}

/// The -o path, or `fallback` when none was given.
std::string defaultOutput(StringRef fallback) {
  return outputPath.empty() ? fallback.str() : outputPath.getValue();
}

/// Writes through `print` to `path` ('-' is stdout); exit status.
int writeOutput(StringRef path, function_ref<void(raw_ostream &)> print) {
  std::error_code ec;
  ToolOutputFile out(path, ec, sys::fs::OF_Text);
  if (ec)
    return userError("cannot write '" + path + "': " + ec.message());
  Stage stage("write output");
  print(out.os());
  out.keep();
  return 0;
}

/// `FILE:LINE:COL` of the first file location in `loc`, and the names
/// (mlir::NameLoc) around it: where a remark points in the model description.
void describeLocation(mlir::Location loc, std::string &file,
                      SmallVectorImpl<std::string> &names) {
  if (auto name = dyn_cast<mlir::NameLoc>(loc)) {
    names.push_back(name.getName().str());
    describeLocation(name.getChildLoc(), file, names);
  } else if (auto fused = dyn_cast<mlir::FusedLoc>(loc)) {
    for (mlir::Location part : fused.getLocations())
      describeLocation(part, file, names);
  } else if (auto fileLoc = dyn_cast<mlir::FileLineColLoc>(loc)) {
    if (file.empty())
      file = formatv("{0}:{1}:{2}", fileLoc.getFilename(), fileLoc.getLine(),
                     fileLoc.getColumn())
                 .str();
  }
}

/// Prints the pipeline's remarks as `FILE:LINE:COL: remark: NAMES: WHAT`;
/// other diagnostics go on to the default handling.
LogicalResult printRemark(mlir::Diagnostic &diag) {
  if (diag.getSeverity() != mlir::DiagnosticSeverity::Remark)
    return failure();
  std::string file;
  SmallVector<std::string> names;
  describeLocation(diag.getLocation(), file, names);
  errs() << (file.empty() ? "tfm-compile" : file) << ": ";
  WithColor(errs(), HighlightColor::Remark) << "remark: ";
  if (!names.empty())
    errs() << join(names, "+") << ": ";
  errs() << diag << "\n";
  return success();
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  // --help lists tfm's options first, then MLIR's debugging switches in a
  // category of their own (contract section 1); the hundreds of LLVM
  // backend options libLLVM registers stay usable but are listed only by
  // --help-hidden.
  for (auto &[name, option] : cl::getRegisteredOptions()) {
    StringRef key = name;
    if (key.starts_with("mlir-") || key.starts_with("pass-"))
      option->addCategory(mlirCategory);
  }
  cl::HideUnrelatedOptions(
      {&category, &mlirCategory, &cl::getGeneralCategory()});
  for (auto &[name, option] : cl::getRegisteredOptions()) {
    StringRef key = name;
    bool kept = llvm::is_contained(option->Categories, &category) ||
                llvm::is_contained(option->Categories, &mlirCategory) ||
                key == "help" || key == "version";
    if (!kept && option->getOptionHiddenFlag() == cl::NotHidden)
      option->setHiddenFlag(cl::Hidden);
  }
  cl::ParseCommandLineOptions(
      argc, argv, "tfm-compile: compiles a transformer model description\n");

  if (maxBatch <= 0)
    return userError("--max-batch must be positive, got " + Twine(maxBatch));
  if (maxSeqLen.getNumOccurrences() && maxSeqLen <= 0)
    return userError("--max-seq-len must be positive, got " + Twine(maxSeqLen));
  for (cl::opt<int64_t> *cache : {&l1CacheBytes, &l2CacheBytes})
    if (cache->getNumOccurrences() &&
        (*cache < 1024 || *cache > (int64_t(1) << 30)))
      return userError("--" + cache->ArgStr +
                       " must be between 1024 and 1073741824 bytes, got " +
                       Twine(int64_t(*cache)));
  if (maxSeqLen > kMaxSeqLen || maxBatch > kMaxBatch)
    return userError("--max-seq-len is at most " + Twine(kMaxSeqLen) +
                     " and --max-batch at most " + Twine(kMaxBatch));

  std::vector<tfm::ConfigDiagnostic> diags;
  auto printDiagnostics = [&](StringRef path) {
    for (const tfm::ConfigDiagnostic &d : diags) {
      errs() << path << ":" << d.line << ":" << d.column << ": ";
      if (d.kind == tfm::ConfigDiagnostic::Kind::Error)
        WithColor(errs(), HighlightColor::Error) << "error: ";
      else
        WithColor(errs(), HighlightColor::Warning) << "warning: ";
      errs() << d.message << "\n";
    }
    diags.clear();
  };

  // A Hugging Face folder: its config.json maps to a model description,
  // and its tensors' names and layouts go on the IR's parameters.
  std::optional<tfm::HuggingFaceCheckpoint> checkpoint;
  std::string descriptionPath = inputPath;
  std::unique_ptr<MemoryBuffer> buffer;
  if (sys::fs::is_directory(inputPath)) {
    Stage stage("read Hugging Face config");
    std::string configPath;
    checkpoint = tfm::readHuggingFaceFolder(inputPath, configPath, diags);
    printDiagnostics(configPath);
    if (!checkpoint)
      return kUserError;
    if (verbose)
      for (const std::string &key : checkpoint->ignoredKeys)
        errs() << configPath << ": note: '" << key
               << "' ignored (it does not change the computation)\n";
    descriptionPath = configPath;
    buffer = MemoryBuffer::getMemBufferCopy(checkpoint->description,
                                            descriptionPath);
  } else {
    Stage stage("read model description");
    ErrorOr<std::unique_ptr<MemoryBuffer>> file =
        MemoryBuffer::getFileOrSTDIN(inputPath, /*IsText=*/true);
    if (!file)
      return userError("cannot read '" + inputPath +
                       "': " + file.getError().message());
    buffer = std::move(*file);
  }
  if (emit == Emit::ModelJson)
    return writeOutput(defaultOutput("-"),
                       [&](raw_ostream &os) { os << buffer->getBuffer(); });

  tfm::ConfigPositions positions;
  std::optional<tfm::ModelConfig> config;
  {
    Stage stage("parse and validate");
    config = tfm::parseModelConfig(descriptionPath, buffer->getBuffer(), diags,
                                   &positions);
  }
  // A mapped config's problems are the mapping's: say so.
  printDiagnostics(checkpoint ? descriptionPath + " (mapped to a model "
                                                  "description)"
                              : descriptionPath);
  if (!config)
    return kUserError;
  if (checkpoint && !sys::fs::exists(checkpoint->weightsFile)) {
    if (emit != Emit::Mlir && emit != Emit::MlirOpt)
      WithColor::warning(errs(), "tfm-compile")
          << "'" << checkpoint->weightsFile
          << "' does not exist: the compiled model will need --weights\n";
  }

  tfm::CompileLimits limits;
  limits.maxBatch = maxBatch;
  limits.maxSeqLen = maxSeqLen ? int64_t(maxSeqLen) : config->maxSeqLen;
  if (checkpoint && checkpoint->slidingWindow &&
      limits.maxSeqLen > checkpoint->slidingWindow)
    return userError("--max-seq-len " + Twine(limits.maxSeqLen) +
                     " exceeds the checkpoint's sliding_window " +
                     Twine(checkpoint->slidingWindow) +
                     ": beyond it the attention is a sliding window, which "
                     "tfm does not compile yet");
  // Weights sized by the description's max_seq_len have nothing for the
  // positions past it.
  const char *noRowsPast = nullptr;
  if (config->positional == tfm::Positional::Learned)
    noRowsPast = "learned positions have no rows beyond it";
  else if (config->anyLayer(
               [](const tfm::LayerKinds &k) { return bool(k.linformerK); }))
    noRowsPast = "linformer's proj_e and proj_f have no columns beyond it";
  else if (config->anyLayer([](const tfm::LayerKinds &k) {
             return k.block && k.randomBlocks;
           }))
    noRowsPast = "block_sparse's block_pattern has no rows for the query "
                 "blocks beyond it";
  if (noRowsPast && limits.maxSeqLen > config->maxSeqLen) {
    auto [line, column] = positions.of("max_seq_len");
    errs() << descriptionPath << ":" << line << ":" << column << ": ";
    WithColor(errs(), HighlightColor::Error) << "error: ";
    errs() << "--max-seq-len " << limits.maxSeqLen << " exceeds max_seq_len "
           << config->maxSeqLen << ": " << noRowsPast << "\n";
    return kUserError;
  }
  // A model bigger than the machine fails here, saying how big, rather
  // than when its executable allocates.
  std::string budgetError;
  std::optional<tfm::MemoryBudget> budget = tfm::memoryBudget(budgetError);
  if (!budget)
    return userError(budgetError);
  if (std::optional<tfm::ConfigDiagnostic> d =
          tfm::checkModelMemory(*config, limits, positions, *budget)) {
    errs() << descriptionPath << ":" << d->line << ":" << d->column << ": ";
    WithColor(errs(), HighlightColor::Error) << "error: ";
    errs() << d->message << "\n";
    return kUserError;
  }

  // --emit=llvm is the LLVM backend's output, --emit=cpp the Highway
  // backend's: either one picks its backend unless --backend says otherwise.
  bool useLLVM = backend.getNumOccurrences() ? backend == Backend::Llvm
                                             : emit == Emit::Llvm;
  if (emit == Emit::Llvm && !useLLVM)
    return userError("--emit=llvm is the LLVM backend's output; use "
                     "--backend=llvm (or leave --backend out)");
  if (emit == Emit::Cpp && useLLVM)
    return userError("--emit=cpp is the Highway backend's output; with "
                     "--backend=llvm use --emit=llvm");

  mlir::DialectRegistry registry;
  if (useLLVM)
    mlir::tfm::registerLLVMBackendDependencies(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    Stage stage("build tfm IR");
    module = tfm::buildModel(context, *config, limits, descriptionPath);
    std::string layoutError;
    if (checkpoint &&
        failed(tfm::applyCheckpointLayout(*module, *checkpoint, layoutError)))
      return internalError(layoutError);
  }
  {
    Stage stage("verify tfm IR");
    if (failed(mlir::verify(*module)))
      return internalError("the IR built for this model does not verify");
  }
  if (weightDtype != WeightDtype::F32) {
    // On the frontend's IR, so that --emit=mlir (and the LLVM backend's
    // declarations) show which weights are converted.
    Stage stage("select weight format");
    mlir::PassManager pm(&context);
    mlir::tfm::TfmSelectWeightFormatOptions formats;
    formats.format = weightDtype == WeightDtype::BF16  ? "bf16"
                     : weightDtype == WeightDtype::F16 ? "f16"
                                                       : "int8";
    formats.remarks = remarks || verbose;
    std::optional<mlir::ScopedDiagnosticHandler> remarkHandler;
    if (formats.remarks)
      remarkHandler.emplace(&context, printRemark);
    pm.addPass(mlir::tfm::createTfmSelectWeightFormat(formats));
    if (failed(pm.run(*module)))
      return internalError("selecting the weights' format failed");
  }
  if (emit == Emit::Mlir)
    return writeOutput(defaultOutput("-"), [&](raw_ostream &os) {
      module->print(os);
      os << "\n";
    });

  // The LLVM backend's glue needs the declarations its entry passes
  // replace with arguments.
  mlir::OwningOpRef<mlir::ModuleOp> declarations;
  if (useLLVM)
    declarations = module->clone();

  // The pass pipelines (tfm-optimize; then the LLVM backend's lowering),
  // where --print-ir-after-all, --mlir-timing and friends apply.
  bool showRemarks = remarks || verbose;
  std::optional<mlir::ScopedDiagnosticHandler> remarkHandler;
  if (showRemarks)
    remarkHandler.emplace(&context, printRemark);
  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope timingScope = timing.getRootScope();
  mlir::PassManager optimize(&context), lower(&context);
  mlir::tfm::OptimizePipelineOptions options;
  options.remarks = showRemarks;
  mlir::tfm::buildOptimizePipeline(optimize, options);
  if (compute == Compute::BF16 || weightDtype != WeightDtype::F32) {
    // On the GEMMs the pipeline leaves, before the backends tile them.
    mlir::tfm::TfmSelectGemmPrecisionOptions precision;
    precision.compute = compute == Compute::BF16 ? "bf16" : "f32";
    precision.remarks = showRemarks;
    optimize.addPass(mlir::tfm::createTfmSelectGemmPrecision(precision));
  }
  // The Highway backend's GEMMs are tiled for this CPU's caches (or the
  // ones named), its attention for the register file, and its buffers
  // placed in frames: choices recorded in the IR.
  mlir::tfm::CacheSizes cache = target == Target::Native
                                    ? mlir::tfm::hostCacheSizes()
                                    : mlir::tfm::CacheSizes();
  if (l1CacheBytes)
    cache.l1Bytes = l1CacheBytes;
  if (l2CacheBytes)
    cache.l2Bytes = l2CacheBytes;
  if (!useLLVM) {
    mlir::tfm::TfmSelectGemmTilingOptions tiling;
    tiling.l1Bytes = cache.l1Bytes;
    tiling.l2Bytes = cache.l2Bytes;
    tiling.remarks = showRemarks;
    optimize.addPass(mlir::tfm::createTfmSelectGemmTiling(tiling));
    mlir::tfm::TfmSelectAttentionTilingOptions attentionTiling;
    attentionTiling.remarks = showRemarks;
    optimize.addPass(
        mlir::tfm::createTfmSelectAttentionTiling(attentionTiling));
    // Last: the plan covers every buffer the backend's code will take.
    mlir::tfm::TfmPlanMemoryOptions plan;
    plan.remarks = showRemarks;
    optimize.addPass(mlir::tfm::createTfmPlanMemory(plan));
  }
  if (useLLVM) {
    mlir::tfm::buildLLVMEntryPasses(optimize);
    mlir::tfm::buildLLVMLoweringPasses(lower);
  }
  // --print-ir-after=PASS must name a pass of a pipeline.
  SmallVector<StringRef> passNames;
  for (mlir::PassManager *pm : {&optimize, &lower})
    for (mlir::Pass &pass : pm->getPasses())
      passNames.push_back(pass.getArgument());
  // (cl::list's operator& gives its storage: std::addressof.)
  for (cl::list<std::string> *option :
       {std::addressof(printIRAfter), std::addressof(printIRBefore)})
    for (const std::string &name : *option)
      if (!llvm::is_contained(passNames, name))
        return userError("--" + option->ArgStr + "=" + name +
                         ": the pipeline has no pass '" + name +
                         "' (its passes: " + join(passNames, ", ") + ")");
  auto run = [&](mlir::PassManager &pm) -> LogicalResult {
    if (printIRAfterAll || printIRBeforeAll || !printIRAfter.empty() ||
        !printIRBefore.empty()) {
      context.disableMultithreading();
      pm.enableIRPrinting(
          [](mlir::Pass *pass, mlir::Operation *) {
            return printIRBeforeAll ||
                   llvm::is_contained(printIRBefore, pass->getArgument());
          },
          [](mlir::Pass *pass, mlir::Operation *) {
            return printIRAfterAll ||
                   llvm::is_contained(printIRAfter, pass->getArgument());
          });
    }
    // --mlir-timing reports each pass's time.
    pm.enableTiming(timingScope);
    if (failed(mlir::applyPassManagerCLOptions(pm)))
      return failure();
    return pm.run(*module);
  };
  {
    Stage stage("run pass pipeline");
    if (failed(run(optimize)))
      return internalError("the pass pipeline failed");
  }
  std::string cName = tfm::cIdentifier(config->name);
  std::string llvmGlue;
  if (useLLVM) {
    Expected<std::string> glue =
        tfm::emitLLVMGlue(*declarations, *module, cName);
    if (!glue)
      return internalError(toString(glue.takeError()));
    llvmGlue = std::move(*glue);
    Stage stage("lower to the LLVM dialect");
    if (failed(run(lower)))
      return internalError("lowering to the LLVM dialect failed");
    Expected<std::string> parallelGlue =
        tfm::emitLLVMParallelGlue(*module, cName);
    if (!parallelGlue)
      return internalError(toString(parallelGlue.takeError()));
    llvmGlue += *parallelGlue;
  }
  if (emit == Emit::MlirOpt)
    return writeOutput(defaultOutput("-"), [&](raw_ostream &os) {
      module->print(os);
      os << "\n";
    });

  std::string cpp;
  std::string llvmObject;
  if (useLLVM) {
    Stage stage(emit == Emit::Llvm ? "emit LLVM IR" : "emit object (LLVM)");
    raw_string_ostream os(emit == Emit::Llvm ? cpp : llvmObject);
    if (Error e = tfm::emitLLVMCode(*module, cName, target == Target::Native,
                                    emit == Emit::Llvm, os))
      return internalError(toString(std::move(e)));
    if (emit == Emit::Llvm)
      return writeOutput(defaultOutput("-"),
                         [&](raw_ostream &out) { out << cpp; });
    cpp = std::move(llvmGlue);
  } else {
    Stage stage("emit Highway C++");
    raw_string_ostream os(cpp);
    tfm::HighwayEmitStats stats;
    // Saved as <cName>.cpp for native builds; with --emit=cpp, under the
    // name -o gives it.
    std::string fileName =
        emit == Emit::Cpp && !outputPath.empty() && outputPath != "-"
            ? sys::path::filename(outputPath).str()
            : cName + ".cpp";
    if (failed(tfm::emitHighwayCpp(*module, cName, fileName, os, &stats,
                                   showRemarks)))
      return internalError("the Highway backend failed");
    if (verbose)
      errs() << "tfm-compile: " << stats.functions << " functions, "
             << "activation arena " << stats.arenaBytes << " bytes at batch "
             << limits.maxBatch << ", seq " << limits.maxSeqLen << "\n";
  }
  if (emit == Emit::Cpp)
    return writeOutput(defaultOutput("-"), [&](raw_ostream &os) { os << cpp; });

  // Native artifacts: the C++ goes to a scratch folder, then the compiler.
  tfm::ArtifactKind kind = emit == Emit::Exe ? tfm::ArtifactKind::Executable
                           : emit == Emit::Lib
                               ? tfm::ArtifactKind::SharedLibrary
                               : tfm::ArtifactKind::Object;
  std::string out = defaultOutput(kind == tfm::ArtifactKind::Executable ? cName
                                  : kind == tfm::ArtifactKind::SharedLibrary
                                      ? "lib" + cName + ".so"
                                      : cName + ".o");
  // A missing folder is the user's to fix, before minutes of compiling.
  StringRef outDir = sys::path::parent_path(out);
  if (!outDir.empty() && !sys::fs::is_directory(outDir))
    return userError("cannot write '" + out + "': folder '" + outDir +
                     "' does not exist");
  if (sys::fs::is_directory(out))
    return userError("cannot write '" + out + "': it is a folder");
  SmallString<128> scratchDir;
  if (std::error_code ec =
          sys::fs::createUniqueDirectory("tfm-compile", scratchDir))
    return internalError("cannot create a scratch folder: " + ec.message());
  SmallString<128> cppPath(scratchDir);
  sys::path::append(cppPath, cName + ".cpp");
  {
    std::error_code ec;
    raw_fd_ostream os(cppPath, ec);
    if (ec)
      return internalError("cannot write " + cppPath + ": " + ec.message());
    os << cpp;
  }
  tfm::NativeBuildOptions buildOptions;
  if (useLLVM) {
    SmallString<128> objPath(scratchDir);
    sys::path::append(objPath, cName + "-llvm.o");
    std::error_code ec;
    raw_fd_ostream os(objPath, ec, sys::fs::OF_None);
    if (ec)
      return internalError("cannot write " + objPath + ": " + ec.message());
    os << llvmObject;
    buildOptions.extraObjects.push_back(objPath.str().str());
  }
  buildOptions.native = target == Target::Native;
  buildOptions.verbose = verbose;
  buildOptions.cName = cName;
  Error built = tfm::buildNative(cppPath, kind, out, buildOptions);
  sys::fs::remove_directories(scratchDir);
  if (built)
    return internalError(toString(std::move(built)));
  if (kind != tfm::ArtifactKind::Executable) {
    SmallString<128> header(sys::path::parent_path(out));
    sys::path::append(header, cName + ".h");
    std::error_code ec;
    raw_fd_ostream os(header, ec);
    if (ec)
      return userError("cannot write '" + header + "': " + ec.message());
    os << tfm::modelHeader(config->name, cName);
  }
  return 0;
}
