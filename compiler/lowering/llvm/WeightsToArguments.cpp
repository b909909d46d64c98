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
      // One argument per parameter, in order of first read.
      llvm::MapVector<StringAttr, SmallVector<WeightOp>> reads;
      f.walk(
          [&](WeightOp w) { reads[w.getParamAttr().getAttr()].push_back(w); });
      if (reads.empty())
        continue;
      if (!f.isPublic()) {
        reads.front().second.front().emitError(
            "tfm.weight in a private function: only entry points read "
            "weights; others take them as arguments");
        return signalPassFailure();
      }
      Block &body = f.getBody().front();
      for (auto &[name, ops] : reads) {
        unsigned index = f.getNumArguments();
        if (failed(f.insertArgument(index, ops.front().getType(),
                                    DictionaryAttr::get(&getContext()),
                                    ops.front().getLoc())))
          return signalPassFailure();
        f.setArgAttr(index, "tfm.param", name);
        for (WeightOp w : ops) {
          w.replaceAllUsesWith(body.getArgument(index));
          w.erase();
        }
      }
    }
    for (Operation &op : llvm::make_early_inc_range(module.getOps()))
      if (isa<ParamOp, KVCacheDeclOp>(op))
        op.erase();
  }
};

} // namespace
