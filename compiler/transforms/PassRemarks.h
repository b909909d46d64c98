//===- PassRemarks.h - how tfm passes word their remarks --------*- C++ -*-===//

#ifndef TFM_TRANSFORMS_PASSREMARKS_H
#define TFM_TRANSFORMS_PASSREMARKS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::tfm {

/// A remark at `op`, naming the function it is in.
inline InFlightDiagnostic remarkAt(Operation *op) {
  InFlightDiagnostic remark = emitRemark(op->getLoc());
  if (auto func = op->getParentOfType<FunctionOpInterface>())
    remark << "in @" << func.getName() << ": ";
  return remark;
}

} // namespace mlir::tfm

#endif // TFM_TRANSFORMS_PASSREMARKS_H
