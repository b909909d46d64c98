//===- TransformScript.h - run an embedded transform-dialect script -*- C++
//-*-===//
//
// The LLVM backend's tiling and vector lowering are upstream transform ops
// (the same a user can run with mlir-opt --transform-interpreter); a pass
// parses its script once and applies it to the IR it runs on.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LOWERING_LLVM_TRANSFORMSCRIPT_H
#define TFM_LOWERING_LLVM_TRANSFORMSCRIPT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::tfm {

/// Parses `script` (a module with `@__transform_main`); null after
/// reporting the error.
OwningOpRef<ModuleOp> parseTransformScript(MLIRContext *context,
                                           StringRef script);

/// Applies `@__transform_main` of `script` to `payload`.
LogicalResult applyTransformScript(Operation *payload, ModuleOp script);

} // namespace mlir::tfm

#endif // TFM_LOWERING_LLVM_TRANSFORMSCRIPT_H
