//===- WeightParams.cpp - the tfm.params a weight operand reads -----------===//

#include "tfm/Transforms/WeightParams.h"

using namespace mlir;
using namespace mlir::tfm;

WeightParams::WeightParams(ModuleOp module) : symbols(module) {
  module.walk([&](func::CallOp call) {
    if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
      callers[callee].push_back(call);
  });
}

void WeightParams::collect(ArrayRef<Value> values,
                           llvm::SetVector<ParamOp> &params) const {
  llvm::SetVector<Value> reached(values.begin(), values.end());
  // `reached` grows as arguments lead to their callers' operands.
  for (size_t i = 0; i < reached.size(); ++i) {
    Value v = reached[i];
    if (auto weight = v.getDefiningOp<WeightOp>()) {
      if (auto param = symbols.lookup<ParamOp>(weight.getParam()))
        params.insert(param);
    } else if (auto slice = v.getDefiningOp<SliceRowsOp>()) {
      reached.insert(slice.getInput());
    } else if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (func && arg.getOwner()->isEntryBlock())
        for (func::CallOp call : callers.lookup(func))
          reached.insert(call.getOperand(arg.getArgNumber()));
    }
  }
}
