//===- PackGemmWeights.cpp - GEMM weights in the micro-kernel's panels ----===//
//
// A weight [N, K] as nn.Linear stores it is read with stride K along N; the
// vectorised GEMM wants, for each k, 32 consecutive output columns. The
// runtime packs each GEMM weight once after loading (kModel.pack, as for the
// Highway backend, in its own width) into panels [ceil(N/32), K, 32]
// (kLLVMPanelColumns); this pass gives every
// function that multiplies by a weight argument a second argument with that
// packed form, through the call graph up to the entry points, where the
// glue passes the runtime's packed tensor.
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/LLVMBackend.h"
#include "tfm/Transforms/GemmTiling.h"

#include "mlir/IR/SymbolTable.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMPACKGEMMWEIGHTS
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

RankedTensorType mlir::tfm::packedPanelsType(RankedTensorType weight,
                                             int64_t segments) {
  int64_t rows = weight.getDimSize(0) / segments;
  constexpr int64_t cols = kLLVMPanelColumns;
  int64_t panels = segments * ((rows + cols - 1) / cols);
  return RankedTensorType::get({panels, weight.getDimSize(1), cols},
                               weight.getElementType());
}

std::optional<unsigned> mlir::tfm::packedArgumentOf(func::FuncOp f,
                                                    unsigned arg) {
  for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
    if (auto of = f.getArgAttrOfType<IntegerAttr>(i, "tfm.packs"))
      if (of.getInt() == arg)
        return i;
  return std::nullopt;
}

namespace {

struct PackGemmWeightsPass
    : mlir::tfm::impl::TfmPackGemmWeightsBase<PackGemmWeightsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    SymbolUserMap users(symbols, module);

    // The GEMM weights each function multiplies by, with their segments
    // (a stacked weight's rows as tfm.slice_rows picks them: one packed
    // copy for all its slices).
    // A GEMM with bf16 inputs reads its weight rounded as it is packed.
    SmallVector<std::tuple<Value, int64_t, bool>> weights;
    module.walk([&](LinearOp linear) {
      GemmWeight w = gemmWeight(linear);
      weights.push_back({w.packed, w.segments, linear.getBf16Inputs()});
    });
    // Each expert's weight of a grouped GEMM is a GEMM weight of its own.
    module.walk([&](GroupedLinearOp grouped) {
      for (Value w : grouped.getWeights())
        weights.push_back({w, 1, grouped.getBf16Inputs()});
    });
    for (auto [weight, segments, bf16] : weights)
      if (failed(ensurePacked(weight, segments, bf16, users)))
        return signalPassFailure();
  }

  /// The packed argument beside the argument `weight`, added (with one in
  /// each caller, recursively) if missing; `tfm.bf16` on it when its
  /// values are rounded to bf16.
  FailureOr<unsigned> ensurePacked(Value weight, int64_t segments, bool bf16,
                                   SymbolUserMap &users) {
    auto arg = dyn_cast<BlockArgument>(weight);
    auto f = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                 : func::FuncOp();
    if (!f)
      return emitError(weight.getLoc(), "a GEMM weight that is not an "
                                        "argument of its function cannot be "
                                        "packed");
    unsigned index = arg.getArgNumber();
    if (std::optional<unsigned> packed = packedArgumentOf(f, index)) {
      auto have = f.getArgAttrOfType<IntegerAttr>(*packed, "tfm.segments");
      if (have.getInt() != segments ||
          bool(f.getArgAttr(*packed, "tfm.bf16")) != bf16)
        return f.emitError("argument ")
               << index << " is used as two differently packed GEMM weights";
      return *packed;
    }
    auto type = cast<RankedTensorType>(weight.getType());
    if (type.getDimSize(0) % segments != 0)
      return f.emitError("argument ")
             << index << " has " << type.getDimSize(0) << " rows, not "
             << segments << " segments";
    unsigned packed = f.getNumArguments();
    if (failed(f.insertArgument(packed, packedPanelsType(type, segments),
                                DictionaryAttr::get(&getContext()),
                                weight.getLoc())))
      return failure();
    Builder b(&getContext());
    f.setArgAttr(packed, "tfm.packs", b.getI64IntegerAttr(index));
    f.setArgAttr(packed, "tfm.segments", b.getI64IntegerAttr(segments));
    if (bf16)
      f.setArgAttr(packed, "tfm.bf16", b.getUnitAttr());
    if (f.isPublic())
      return packed; // the glue passes the runtime's packed tensor
    // Every caller passes its own packed form of what it passes here.
    for (Operation *user : users.getUsers(f)) {
      auto call = dyn_cast<func::CallOp>(user);
      if (!call)
        return user->emitError("uses @")
               << f.getSymName() << " other than by a call";
      FailureOr<unsigned> callerPacked =
          ensurePacked(call.getOperand(index), segments, bf16, users);
      if (failed(callerPacked))
        return failure();
      auto caller = call->getParentOfType<func::FuncOp>();
      SmallVector<Value> operands(call.getOperands());
      operands.push_back(caller.getArgument(*callerPacked));
      call->setOperands(operands);
    }
    return packed;
  }
};

} // namespace
