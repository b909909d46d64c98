//===- SelectGemmPrecision.cpp - what each GEMM's operands hold -----------===//
//
// The precision a GEMM reads its operands in, as attributes of the GEMM op
// the backends lower: `weight_format`, the format its weight's tfm.params
// keep their values in (tfm-compile --weight-dtype, through the layer
// functions' arguments), so that a backend can pack them narrower; and,
// with --compute=bf16 (contract section 10), `bf16_inputs` on every GEMM
// whose weight --weight-dtype converts: every linear but the MoE router.
//
//===----------------------------------------------------------------------===//

#include "tfm/Transforms/Passes.h"
#include "tfm/Transforms/WeightParams.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

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
    if (compute != "f32" && compute != "bf16") {
      getOperation()->emitError()
          << "tfm-select-gemm-precision: unknown compute '" << compute
          << "' (f32 or bf16)";
      return signalPassFailure();
    }
    bool bf16 = compute == "bf16";
    auto module = dyn_cast<ModuleOp>(getOperation());
    if (!module)
      module = getOperation()->getParentOfType<ModuleOp>();
    std::optional<WeightParams> params;
    if (module)
      params.emplace(module);

    llvm::DenseMap<Operation *, int64_t> markedIn;
    // Marks one GEMM op (tfm.linear or tfm.grouped_linear) reading
    // `weights`; `router`: the MoE router's, which stays f32.
    auto mark = [&](auto gemm, ArrayRef<Value> weights,
                    bool router) -> LogicalResult {
      if (bf16 && !router) {
        gemm.setBf16Inputs(true);
        if (Operation *func =
                gemm->template getParentOfType<FunctionOpInterface>())
          ++markedIn[func];
      }
      if (!params)
        return success();
      // The format of every param the weights can be: one kernel reads
      // them all, so they must agree.
      llvm::SetVector<ParamOp> read;
      params->collect(weights, read);
      std::optional<WeightFormat> format;
      for (size_t i = 0; i < read.size(); ++i) {
        ParamOp param = read[i];
        std::optional<WeightFormat> f = param.getFormat();
        if (i > 0 && f != format)
          return gemm.emitError("reads weights kept in different formats: @")
                 << ParamOp(read[0]).getSymName() << " and @"
                 << param.getSymName();
        format = f;
      }
      if (format)
        gemm.setWeightFormatAttr(
            WeightFormatAttr::get(gemm.getContext(), *format));
      return success();
    };
    WalkResult result = getOperation()->walk([&](Operation *op) {
      LogicalResult marked = success();
      if (auto linear = dyn_cast<LinearOp>(op))
        marked = mark(linear, {linear.getWeight()}, isRouterGemm(linear));
      else if (auto grouped = dyn_cast<GroupedLinearOp>(op))
        marked = mark(grouped, SmallVector<Value>(grouped.getWeights()),
                      /*router=*/false);
      return failed(marked) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    if (!remarks)
      return;
    getOperation()->walk([&](FunctionOpInterface func) {
      if (int64_t n = markedIn.lookup(func))
        emitRemark(func.getLoc()) << n << " GEMM" << (n == 1 ? "" : "s")
                                  << " with bf16 inputs (products summed in "
                                     "f32)";
    });
  }
};

} // namespace
