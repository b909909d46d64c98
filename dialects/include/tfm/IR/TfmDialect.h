//===- TfmDialect.h - the tfm dialect ---------------------------*- C++ -*-===//

#ifndef TFM_IR_TFMDIALECT_H
#define TFM_IR_TFMDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tfm/IR/TfmOpsDialect.h.inc"

#endif // TFM_IR_TFMDIALECT_H
