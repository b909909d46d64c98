//===- tfm-opt.cpp - the mlir-opt of tfm ----------------------------------===//
//
// Parses, verifies, transforms and prints IR with the tfm dialect, the
// upstream dialects the lowerings use, and every tfm pass registered.
//
//===----------------------------------------------------------------------===//

#include "tfm/Codegen/Codegen.h"
#include "tfm/IR/TfmDialect.h"
#include "tfm/Lowering/LLVMBackend.h"
#include "tfm/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllPasses();
  mlir::tfm::registerTfmPassesAndPipelines();
  mlir::tfm::registerLLVMBackendPassesAndPipelines();
  registry
      .insert<mlir::tfm::TfmDialect, mlir::tfm::codegen::TfmCodegenDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tfm optimizer driver\n", registry));
}
