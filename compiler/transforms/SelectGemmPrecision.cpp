//===- SelectGemmPrecision.cpp - which GEMMs --compute=bf16 rounds --------===//
//
// Contract section 10's --compute=bf16 rounds the inputs of the GEMMs whose
// weights --weight-dtype converts: every linear but the MoE router. The
// choice is an attribute of each GEMM op; the backends round the weight as
// they pack it and the input as they read it.
//
//===----------------------------------------------------------------------===//

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "tfm/Transforms/Passes.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMSELECTGEMMPRECISION
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct SelectGemmPrecision
    : public tfm::impl::TfmSelectGemmPrecisionBase<SelectGemmPrecision> {
  using TfmSelectGemmPrecisionBase::TfmSelectGemmPrecisionBase;

  void runOnOperation() override {
    if (compute == "f32")
      return;
    if (compute != "bf16") {
      getOperation()->emitError()
          << "tfm-select-gemm-precision: unknown compute '" << compute
          << "' (f32 or bf16)";
      return signalPassFailure();
    }
    llvm::DenseMap<Operation *, int64_t> markedIn;
    getOperation()->walk([&](Operation *op) {
      auto linear = dyn_cast<LinearOp>(op);
      if (linear && !isRouterGemm(linear))
        linear.setBf16Inputs(true);
      else if (auto grouped = dyn_cast<GroupedLinearOp>(op))
        grouped.setBf16Inputs(true);
      else
        return;
      if (Operation *func = op->getParentOfType<FunctionOpInterface>())
        ++markedIn[func];
    });
    if (!remarks)
      return;
    getOperation()->walk([&](FunctionOpInterface func) {
      if (int64_t n = markedIn.lookup(func))
        emitRemark(func.getLoc())
            << n << " GEMM" << (n == 1 ? "" : "s")
            << " with bf16 inputs (products summed in f32)";
    });
  }
};

} // namespace
