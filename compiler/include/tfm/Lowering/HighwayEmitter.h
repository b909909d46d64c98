//===- HighwayEmitter.h - tfm IR -> Highway C++ -----------------*- C++ -*-===//

#ifndef TFM_LOWERING_HIGHWAYEMITTER_H
#define TFM_LOWERING_HIGHWAYEMITTER_H

#include "tfm/Lowering/ModelGlue.h"
#include "tfm/Transforms/GemmTiling.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tfm {

/// Facts about the generated code that the driver reports with `-v`.
struct HighwayEmitStats {
  size_t arenaBytes = 0;
  size_t functions = 0;
};

/// Prints `module` (tfm IR as the frontend builds it) as one C++ file that
/// uses Highway with dynamic dispatch and defines `tfm::rt::kModel` and the C
/// API functions `<cName>_create/_forward/_destroy`. Highway compiles the
/// file once per SIMD target by including itself as "<fileName>", so it must
/// be saved under that name and compiled with its folder on the include
/// path. Errors are MLIR diagnostics on the offending op. With `remarks`,
/// each op whose code fuses work (projections into one GEMM, attention in
/// the flash form, activations and biases into GEMM stores) gets an MLIR
/// remark that says what was fused and what was not, and why.
mlir::LogicalResult emitHighwayCpp(mlir::ModuleOp module, llvm::StringRef cName,
                                   llvm::StringRef fileName,
                                   llvm::raw_ostream &os,
                                   HighwayEmitStats *stats = nullptr,
                                   bool remarks = false);

} // namespace tfm

#endif // TFM_LOWERING_HIGHWAYEMITTER_H
