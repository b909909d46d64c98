//===- PassRemarks.h - how tfm passes word their remarks --------*- C++ -*-===//

#ifndef TFM_TRANSFORMS_PASSREMARKS_H
#define TFM_TRANSFORMS_PASSREMARKS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::tfm {

/// A remark at `op`, naming the function it is (or is in).
inline InFlightDiagnostic remarkAt(Operation *op) {
  InFlightDiagnostic remark = emitRemark(op->getLoc());
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    func = op->getParentOfType<FunctionOpInterface>();
  if (func)
    remark << "in @" << func.getName() << ": ";
  return remark;
}

} // namespace mlir::tfm

#endif // TFM_TRANSFORMS_PASSREMARKS_H
