//===- model-config.cpp - fuzzing the model-description frontend ----------===//
//
// JSON text -> ModelConfig (or located errors) -> the memory check -> tfm IR
// -> the dialect's verifiers, as tfm-compile runs them. Beyond not
// crashing: a description is rejected if and only if an error says why,
// every message has a position, and a description the frontend accepts
// (and that fits in memory) always builds IR that verifies.
//
// The same text as a Hugging Face config.json (`tfm-compile DIR`): mapped or
// rejected with a located error; a mapped config gives a description that
// is itself accepted or rejected with errors, and whose IR's every
// parameter has a source in the checkpoint.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "tfm/Frontend/HuggingFace.h"
#include "tfm/Frontend/ModelBuilder.h"
#include "tfm/Frontend/ModelConfig.h"
#include "tfm/Frontend/ModelMemory.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>

using namespace tfm;

namespace {

bool anyError(const std::vector<ConfigDiagnostic> &diags) {
  return llvm::any_of(diags, [](const ConfigDiagnostic &d) {
    return d.kind == ConfigDiagnostic::Kind::Error;
  });
}

/// The layers a fuzzed model is built with: past a few dozen they add time
/// (4096 of them take seconds), not code paths.
ModelConfig fewLayers(ModelConfig config) {
  config.numEncoderLayers = std::min<int64_t>(config.numEncoderLayers, 64);
  config.numDecoderLayers = std::min<int64_t>(config.numDecoderLayers, 64);
  return config;
}

void checkHuggingFaceConfig(llvm::StringRef text) {
  std::vector<ConfigDiagnostic> diags;
  std::optional<HuggingFaceCheckpoint> ckpt =
      mapHuggingFaceConfig(text, "/fuzz", diags);
  FUZZ_CHECK(ckpt.has_value() != anyError(diags),
             "a config.json fails if and only if an error says why");
  for (const ConfigDiagnostic &d : diags)
    FUZZ_CHECK(d.line >= 1 && d.column >= 1 && !d.message.empty(),
               "every config.json message has a position and a text");
  if (!ckpt)
    return;
  diags.clear();
  ConfigPositions positions;
  std::optional<ModelConfig> config =
      parseModelConfig("config.json", ckpt->description, diags, &positions);
  FUZZ_CHECK(config.has_value() != anyError(diags),
             "a mapped description fails if and only if an error says why");
  if (!config)
    return;
  MemoryBudget budget{uint64_t(24) << 30, "the fuzzer's 24 GB"};
  CompileLimits limits{config->maxSeqLen, 1};
  if (checkModelMemory(*config, limits, positions, budget) ||
      config->numEncoderLayers > 64 || config->numDecoderLayers > 64)
    return; // the mapping names every layer: keep the map small
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler handler(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModel(context, *config, limits, "config.json");
  std::string error;
  FUZZ_CHECK(mlir::succeeded(applyCheckpointLayout(*module, *ckpt, error)),
             "every parameter of a mapped model has a source");
  FUZZ_CHECK(mlir::succeeded(mlir::verify(*module)),
             "the IR of a mapped model verifies with its sources");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  checkHuggingFaceConfig(text);
  std::vector<ConfigDiagnostic> diags;
  ConfigPositions positions;
  std::optional<ModelConfig> config =
      parseModelConfig("fuzz.json", text, diags, &positions);

  FUZZ_CHECK(config.has_value() != anyError(diags),
             "a description fails if and only if an error says why");
  for (const ConfigDiagnostic &d : diags)
    FUZZ_CHECK(d.line >= 1 && d.column >= 1 && !d.message.empty(),
               "every message has a position and a text");
  if (!config)
    return 0;
  FUZZ_CHECK(config->dModel > 0 && config->numHeads > 0 &&
                 config->dModel % config->numHeads == 0 &&
                 config->numEncoderLayers + config->numDecoderLayers > 0,
             "an accepted description has consistent sizes");

  // tfm-compile's largest limits go through the memory check too (only the
  // estimate's arithmetic matters there).
  MemoryBudget budget{uint64_t(24) << 30, "the fuzzer's 24 GB"};
  CompileLimits largest{int64_t(1) << 24, int64_t(1) << 16};
  if (std::optional<ConfigDiagnostic> d =
          checkModelMemory(*config, largest, positions, budget))
    FUZZ_CHECK(d->line >= 1 && d->column >= 1, "the memory error has a place");

  // The defaults of tfm-compile: the model's max_seq_len, batch 1.
  CompileLimits limits{config->maxSeqLen, 1};
  if (checkModelMemory(*config, limits, positions, budget))
    return 0;

  // At most 64 layers per stack (still two-digit layer indices).
  ModelConfig built = fewLayers(*config);

  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  std::string messages;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream(messages) << d << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModel(context, built, limits, "fuzz.json");
  FUZZ_CHECK(module, "buildModel returns a module");
  if (mlir::failed(mlir::verify(*module))) {
    llvm::errs() << messages;
    FUZZ_CHECK(false, "the IR built for an accepted description verifies");
  }
  return 0;
}
