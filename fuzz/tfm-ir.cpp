//===- tfm-ir.cpp - fuzzing tfm IR parsing and verification ---------------===//
//
// What tfm-opt does with a file, on the tfm and func dialects: parse, then
// verify (every tfm op's verifier and type inference). Beyond not
// crashing: IR that verifies prints, in the custom and in the generic
// form, to text that parses and verifies again; and the tfm-optimize
// pipeline (with its remarks) turns it into IR that verifies.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "tfm/Codegen/Codegen.h"
#include "tfm/IR/TfmDialect.h"
#include "tfm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

using namespace mlir;

namespace {

const DialectRegistry &registry() {
  static DialectRegistry *r = [] {
    auto *r = new DialectRegistry;
    r->insert<tfm::TfmDialect, tfm::codegen::TfmCodegenDialect,
              func::FuncDialect>();
    return r;
  }();
  return *r;
}

/// Parses and verifies `text` as tfm-opt does; null if either fails.
OwningOpRef<Operation *> parseAndVerify(MLIRContext &context,
                                        const std::string &text) {
  // Verification apart from parsing, as the brief of the target says
  // (tfm-opt verifies on parse; the result is the same).
  ParserConfig config(&context, /*verifyAfterParse=*/false);
  OwningOpRef<Operation *> op =
      parseSourceString<ModuleOp>(text, config, "fuzz.mlir");
  if (!op || failed(verify(*op)))
    return nullptr;
  return op;
}

/// MLIR 22 accepts an empty symbol name on any op (func.func @"") and
/// prints it as @<<INVALID EMPTY SYMBOL>>, which does not parse: upstream
/// behaviour, left to upstream. tfm's own symbols reject it (their
/// verifiers), so they are still checked.
bool hasUpstreamEmptySymbol(Operation *root) {
  bool found = false;
  root->walk([&](Operation *op) {
    auto name = op->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    if (name && name.getValue().empty() &&
        !isa_and_nonnull<tfm::TfmDialect>(op->getDialect()))
      found = true;
  });
  return found;
}

std::string print(Operation *op, bool generic) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  op->print(os, flags);
  return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  std::string messages;
  bool sawError = false;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    sawError |= d.getSeverity() == DiagnosticSeverity::Error;
    llvm::raw_string_ostream(messages) << d << "\n";
    return success();
  });
  // tfm-opt reads files into null-terminated buffers; so does this.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<Operation *> op = parseAndVerify(context, text);
  if (!op || hasUpstreamEmptySymbol(*op))
    return 0;

  // Printed (custom or generic form) and parsed back, the IR is the same
  // IR: it verifies, and its generic form (every attribute and property as
  // it is, no custom printer involved) is the original's, so a custom
  // printer that drops or changes an attribute fails here.
  std::string generic = print(*op, /*generic=*/true);
  for (bool genericForm : {false, true}) {
    std::string printed = print(*op, genericForm);
    messages.clear();
    OwningOpRef<Operation *> reparsed = parseAndVerify(context, printed);
    if (!reparsed) {
      llvm::errs() << "--- printed" << (genericForm ? " (generic)" : "")
                   << ":\n"
                   << printed << "\n--- diagnostics:\n"
                   << messages;
      FUZZ_CHECK(false, "IR that verifies prints to IR that verifies");
    }
    std::string again = print(*reparsed, /*generic=*/true);
    if (again != generic) {
      llvm::errs() << "--- printed" << (genericForm ? " (generic)" : "")
                   << ":\n"
                   << printed << "\n--- parsed back, generic form:\n"
                   << again << "\n--- the original, generic form:\n"
                   << generic;
      FUZZ_CHECK(false, "IR printed and parsed back is the same IR");
    }
  }

  PassManager pm(&context);
  pm.enableVerifier(false); // checked below, with the IR shown
  tfm::OptimizePipelineOptions options;
  options.remarks = true;
  tfm::buildOptimizePipeline(pm, options);
  tfm::TfmSelectGemmTilingOptions tiling;
  tiling.remarks = true;
  pm.addPass(tfm::createTfmSelectGemmTiling(tiling));
  tfm::TfmSelectAttentionTilingOptions attentionTiling;
  attentionTiling.remarks = true;
  pm.addPass(tfm::createTfmSelectAttentionTiling(attentionTiling));
  messages.clear();
  if (failed(pm.run(*op)) || failed(verify(*op))) {
    llvm::errs() << "--- after tfm-optimize:\n"
                 << print(*op, /*generic=*/true) << "\n--- diagnostics:\n"
                 << messages;
    FUZZ_CHECK(false, "tfm-optimize and the tiling passes turn IR that "
                      "verifies into IR that verifies");
  }

  // The memory plan may refuse IR (a dynamic feature dimension, a buffer
  // past any frame), with an error; what it plans verifies.
  PassManager plan(&context);
  plan.enableVerifier(false);
  tfm::TfmPlanMemoryOptions planOptions;
  planOptions.remarks = true;
  plan.addPass(tfm::createTfmPlanMemory(planOptions));
  messages.clear();
  sawError = false;
  bool planned = succeeded(plan.run(*op));
  if (!planned && !sawError) {
    llvm::errs() << "--- diagnostics:\n" << messages;
    FUZZ_CHECK(false, "tfm-plan-memory fails only with an error");
  }
  if (planned && failed(verify(*op))) {
    llvm::errs() << "--- after tfm-plan-memory:\n"
                 << print(*op, /*generic=*/true) << "\n--- diagnostics:\n"
                 << messages;
    FUZZ_CHECK(false, "tfm-plan-memory turns IR that verifies into IR that "
                      "verifies");
  }
  return 0;
}
