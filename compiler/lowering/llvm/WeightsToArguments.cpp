//===- WeightsToArguments.cpp - tfm.weight reads -> entry arguments -------===//
//
// The Highway backend reads weights through the runtime's pointer table by
// index; upstream bufferization knows nothing of tfm.weight, but everything
// about function arguments. So each entry point gets its weights passed in,
// and the generated C++ glue passes the runtime's pointers.
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/LLVMBackend.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMWEIGHTSTOARGUMENTS
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct WeightsToArgumentsPass
    : mlir::tfm::impl::TfmWeightsToArgumentsBase<WeightsToArgumentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (func::FuncOp f : module.getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      // The glue calls entry points through their C interface
      // (_mlir_ciface_NAME: one pointer per memref descriptor).
      if (f.isPublic())
        f->setAttr("llvm.emit_c_interface", UnitAttr::get(&getContext()));
      // One argument per parameter or cache, in order of first read.
      llvm::MapVector<std::pair<StringAttr, StringAttr>,
                      SmallVector<Operation *>>
          reads;
      StringAttr param = StringAttr::get(&getContext(), "tfm.param");
      StringAttr cache = StringAttr::get(&getContext(), "tfm.cache");
      f.walk([&](Operation *op) {
        if (auto w = dyn_cast<WeightOp>(op))
          reads[{param, w.getParamAttr().getAttr()}].push_back(op);
        else if (auto c = dyn_cast<CacheOp>(op))
          reads[{cache, c.getNameAttr().getAttr()}].push_back(op);
      });
      if (reads.empty())
        continue;
      if (!f.isPublic()) {
        reads.front().second.front()->emitError(
            "a weight or cache read in a private function: only entry "
            "points read them; others take them as arguments");
        return signalPassFailure();
      }
      Block &body = f.getBody().front();
      for (auto &[key, ops] : reads) {
        unsigned index = f.getNumArguments();
        Value first = ops.front()->getResult(0);
        if (failed(f.insertArgument(index, first.getType(),
                                    DictionaryAttr::get(&getContext()),
                                    ops.front()->getLoc())))
          return signalPassFailure();
        f.setArgAttr(index, key.first, key.second);
        for (Operation *op : ops) {
          op->getResult(0).replaceAllUsesWith(body.getArgument(index));
          op->erase();
        }
      }
    }
    for (Operation &op : llvm::make_early_inc_range(module.getOps()))
      if (isa<ParamOp, KVCacheDeclOp>(op))
        op.erase();
  }
};

} // namespace
