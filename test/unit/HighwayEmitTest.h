//===- HighwayEmitTest.h - a module through the Highway emitter -*- C++ -*-===//
//
// The fixture of the tests that parse tfm IR, set up what tfm-compile could
// not feed the backend, and read the C++ (or the diagnostics) it emits.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_UNIT_HIGHWAYEMITTEST_H
#define TFM_TEST_UNIT_HIGHWAYEMITTEST_H

#include "tfm/Codegen/Codegen.h"
#include "tfm/IR/TfmDialect.h"
#include "tfm/Lowering/HighwayEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <string>

namespace tfm::test {

/// `body` (a module's ops) in a module named `name` of at most one batch
/// row and `maxSeqLen` positions.
inline std::string boundedModule(const std::string &name, int maxSeqLen,
                                 const std::string &body) {
  return "module @" + name +
         " attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = " +
         std::to_string(maxSeqLen) + " : i64} {\n" + body + "}\n";
}

class HighwayEmitTest : public ::testing::Test {
protected:
  explicit HighwayEmitTest(const char *source) {
    context.loadDialect<mlir::tfm::TfmDialect,
                        mlir::tfm::codegen::TfmCodegenDialect,
                        mlir::func::FuncDialect, mlir::arith::ArithDialect>();
    parse(source);
  }

  /// Replaces the module by `source`'s.
  void parse(const std::string &source) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  }

  /// The module's first op of type OpT (null if none).
  template <typename OpT> OpT firstOp() {
    OpT found;
    module->walk([&](OpT op) {
      if (!found)
        found = op;
    });
    return found;
  }

  /// Emits the module; the C++ on success, else the diagnostics.
  bool emit(std::string &text) {
    std::string cpp, messages;
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
      messages += d.str() + "\n";
      return mlir::success();
    });
    llvm::raw_string_ostream os(cpp);
    bool ok = mlir::succeeded(
        ::tfm::emitHighwayCpp(*module, "model", "model.cpp", os));
    text = ok ? cpp : messages;
    return ok;
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

} // namespace tfm::test

#endif // TFM_TEST_UNIT_HIGHWAYEMITTEST_H
