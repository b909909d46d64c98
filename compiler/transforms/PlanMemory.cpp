//===- PlanMemory.cpp - one statically planned frame per function ---------===//
//
// A forward pass allocates nothing: each function's buffers have offsets
// fixed at compile time in one frame of the model's arena. Recorded on the
// ops, the plan shows in the IR dumps and the backend only follows it.
//
//===----------------------------------------------------------------------===//

#include "PassRemarks.h"
#include "tfm/Transforms/MemoryPlan.h"
#include "tfm/Transforms/Passes.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMPLANMEMORY
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace {

/// Whether a tensor of `func` (an argument or a result of one of its ops)
/// has a dynamic dimension.
bool hasDynamicShapes(FunctionOpInterface func) {
  auto dynamic = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && !tensor.hasStaticShape();
  };
  if (llvm::any_of(func.getArgumentTypes(), dynamic))
    return true;
  WalkResult walk = func.walk([&](Operation *op) {
    return llvm::any_of(op->getResultTypes(), dynamic) ? WalkResult::interrupt()
                                                       : WalkResult::advance();
  });
  return walk.wasInterrupted();
}

struct PlanMemoryPass : public tfm::impl::TfmPlanMemoryBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<FrameBounds> bounds = moduleFrameBounds(module);
    for (auto func : module.getOps<FunctionOpInterface>()) {
      if (func.isExternal())
        continue;
      if (getFrameFloats(func)) {
        if (remarks)
          remarkAt(func) << "frame kept: it was already planned";
        continue;
      }
      if (!bounds && hasDynamicShapes(func)) {
        if (remarks)
          remarkAt(func) << "no frame planned: the module has no positive "
                            "tfm.max_batch and tfm.max_seq_len to size "
                            "dynamic dimensions by";
        continue;
      }
      // Static shapes need no bounds.
      if (failed(planFrame(func, bounds.value_or(FrameBounds()))))
        return signalPassFailure();
      if (remarks)
        remarkFrame(func);
    }
  }

  /// The frame's size, and what it would be without reuse.
  static void remarkFrame(FunctionOpInterface func) {
    int64_t buffers = 0, unshared = 0;
    func.walk([&](Operation *op) {
      for (FrameSlotAttr slot : getFrameSlots(op)) {
        ++buffers;
        unshared += (slot.getFloats() + 15) / 16 * 16;
      }
    });
    int64_t floats = *getFrameFloats(func);
    remarkAt(func) << "frame of " << floats * 4 << " bytes for " << buffers
                   << " buffers (" << unshared * 4
                   << " bytes if none shared space)";
  }
};

} // namespace
