//===- SelectWeightFormat.cpp - which weights --weight-dtype converts -----===//
//
// Contract section 10 names the converted weights by how they are used:
// every rank-2 weight a matrix product reads as its second operand. The
// products are ops of the tfm dialect, the weights tfm.param declarations
// that reach them through layer-function arguments, so the choice is made
// here, once, on the IR, and the runtime converts what the IR marks.
//
//===----------------------------------------------------------------------===//

#include "PassRemarks.h"
#include "tfm/Transforms/Passes.h"
#include "tfm/Transforms/WeightParams.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMSELECTWEIGHTFORMAT
#include "tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The values `op` reads as a GEMM's weight matrix.
SmallVector<Value> gemmWeights(Operation *op) {
  SmallVector<Value> weights;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](MultiHeadAttentionOp a) {
        weights = {a.getInProjWeight(), a.getOutProjWeight()};
      })
      .Case([&](FeedForwardOp f) {
        weights = {f.getW1(), f.getW2()};
      })
      .Case([&](MixtureOfExpertsOp m) {
        // The gate is the router's: its logits pick the experts, and the
        // contract keeps it f32.
        llvm::append_range(weights, m.getW1());
        llvm::append_range(weights, m.getW2());
      })
      .Case([&](MambaMixerOp m) {
        // Its conv weight, A_log and D are not matrix products' operands.
        weights = {m.getInProj(), m.getXProj(), m.getDtProj(),
                   m.getOutProj()};
      })
      .Case([&](GroupedLinearOp g) {
        llvm::append_range(weights, g.getWeights());
      })
      .Case([&](LinearOp l) {
        if (!isRouterGemm(l))
          weights.push_back(l.getWeight());
      });
  return weights;
}

struct SelectWeightFormat
    : public tfm::impl::TfmSelectWeightFormatBase<SelectWeightFormat> {
  using TfmSelectWeightFormatBase::TfmSelectWeightFormatBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (format == "f32")
      return;
    std::optional<WeightFormat> chosen = symbolizeWeightFormat(format);
    if (!chosen) {
      module.emitError() << "tfm-select-weight-format: unknown format '"
                         << format << "' (f32, bf16, f16 or int8)";
      return signalPassFailure();
    }

    SmallVector<Value> weights;
    module.walk(
        [&](Operation *op) { llvm::append_range(weights, gemmWeights(op)); });
    llvm::SetVector<ParamOp> marked;
    WeightParams(module).collect(weights, marked);

    auto attr = WeightFormatAttr::get(module.getContext(), *chosen);
    int64_t converted = 0, floats = 0;
    for (ParamOp param : marked) {
      // Only matrices have rows of blocks to convert; a product of another
      // rank reads no weight file layout this format describes.
      if (param.getTensorType().getRank() != 2 || param.getBlockIds())
        continue;
      param.setFormatAttr(attr);
      ++converted;
      floats += param.getTensorType().getNumElements();
    }
    if (remarks)
      emitRemark(module.getLoc())
          << "weights kept as " << format << ": " << converted
          << " GEMM weights (" << floats << " values)";
  }
};

} // namespace
