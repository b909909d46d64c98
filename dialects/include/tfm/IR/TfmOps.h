//===- TfmOps.h - tfm operations --------------------------------*- C++ -*-===//

#ifndef TFM_IR_TFMOPS_H
#define TFM_IR_TFMOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include <array>

#include "tfm/IR/KeySpan.h"
#include "tfm/IR/TfmDialect.h"
#include "tfm/IR/TfmSizes.h"

#include "tfm/IR/TfmInterfaces.h.inc"
#include "tfm/IR/TfmTypeInterfaces.h.inc"

#include "tfm/IR/TfmEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tfm/IR/TfmAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "tfm/IR/TfmTypes.h.inc"

#define GET_OP_CLASSES
#include "tfm/IR/TfmOps.h.inc"

namespace mlir::tfm {

/// The base of rotary angles: `rope_base` when set, else RoFormer's 10000.
inline float ropeBaseOrDefault(std::optional<llvm::APFloat> base) {
  return base ? base->convertToFloat() : 10000.0f;
}

} // namespace mlir::tfm

#endif // TFM_IR_TFMOPS_H
