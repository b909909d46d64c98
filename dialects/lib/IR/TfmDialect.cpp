//===- TfmDialect.cpp - the tfm dialect -----------------------------------===//

#include "tfm/IR/TfmDialect.h"
#include "tfm/IR/TfmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tfm;

#include "tfm/IR/TfmOpsDialect.cpp.inc"

#include "tfm/IR/TfmEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tfm/IR/TfmAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "tfm/IR/TfmTypes.cpp.inc"

void TfmDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tfm/IR/TfmAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "tfm/IR/TfmTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tfm/IR/TfmOps.cpp.inc"
      >();
}
