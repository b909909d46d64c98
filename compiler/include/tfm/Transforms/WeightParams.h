//===- WeightParams.h - the tfm.params a weight operand reads ---*- C++ -*-===//
//
// A layer function takes its weights as arguments; which tfm.param an
// operand is shows at the call sites. Passes that choose by weight (which
// to convert, which format a GEMM's panels hold) follow an operand back
// through tfm.slice_rows and function arguments to its declarations.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TRANSFORMS_WEIGHTPARAMS_H
#define TFM_TRANSFORMS_WEIGHTPARAMS_H

#include "tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tfm {

class WeightParams {
public:
  explicit WeightParams(ModuleOp module);

  /// Adds to `params` every tfm.param that `values` can be: a tfm.weight's,
  /// through tfm.slice_rows, and through the arguments of functions to
  /// what each of their callers passes. A computed value reads none.
  void collect(ArrayRef<Value> values, llvm::SetVector<ParamOp> &params) const;

private:
  SymbolTable symbols;
  /// Each function's call sites.
  llvm::DenseMap<Operation *, SmallVector<func::CallOp>> callers;
};

} // namespace mlir::tfm

#endif // TFM_TRANSFORMS_WEIGHTPARAMS_H
