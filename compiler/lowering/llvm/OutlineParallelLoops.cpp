//===- OutlineParallelLoops.cpp - scf.forall -> the runtime's thread pool -===//
//
// Generated code has no threads of its own: a parallel loop's body becomes a
// function of the iteration index and the values it captures, and the loop
// a call the glue answers by running that function for every index on the
// runtime's thread pool. Both cross the boundary through MLIR's C
// interface (memrefs as pointers to their descriptors), so the glue only
// passes the arguments through.
//
//===----------------------------------------------------------------------===//

#include "tfm/Lowering/LLVMBackend.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMOUTLINEPARALLELLOOPS
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Whether a captured value can cross the C interface: memrefs (as a
/// descriptor's address) and scalars.
bool passable(Type type) {
  return isa<MemRefType, IndexType, IntegerType, FloatType>(type);
}

/// Whether `op` is worth cloning into the body instead of capturing.
bool isConstant(Operation *op) {
  return op && op->hasTrait<OpTrait::ConstantLike>() &&
         op->getNumResults() == 1;
}

struct OutlineParallelLoopsPass
    : mlir::tfm::impl::TfmOutlineParallelLoopsBase<OutlineParallelLoopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ForallOp> loops;
    module.walk([&](scf::ForallOp loop) {
      if (!loop->getParentOfType<scf::ForallOp>())
        loops.push_back(loop);
    });
    int64_t next = 0;
    for (scf::ForallOp loop : loops)
      if (outline(module, loop, next))
        ++next;
  }

  /// Outlines `loop` as the `index`th parallel loop; false where it is left
  /// alone.
  bool outline(ModuleOp module, scf::ForallOp loop, int64_t index) {
    if (!loop.isNormalized() || loop.getNumResults() != 0)
      return false;
    // What the body reads from above, constants apart.
    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(loop.getRegion(), used);
    SmallVector<Value> captures, constants;
    for (Value value : used) {
      if (isConstant(value.getDefiningOp()))
        constants.push_back(value);
      else if (passable(value.getType()))
        captures.push_back(value);
      else
        return false;
    }
    // The iteration count; the inner trip counts delinearize the index in
    // the body (static ones as constants there, dynamic ones captured).
    Location loc = loop.getLoc();
    OpBuilder builder(loop);
    SmallVector<OpFoldResult> bounds = loop.getMixedUpperBound();
    int64_t staticCount = 1;
    Value count;
    for (OpFoldResult bound : bounds) {
      if (std::optional<int64_t> size = getConstantIntValue(bound)) {
        staticCount *= *size;
        continue;
      }
      Value size = cast<Value>(bound);
      count = count ? arith::MulIOp::create(builder, loc, count, size) : size;
    }
    if (!count || staticCount != 1) {
      Value constant =
          arith::ConstantIndexOp::create(builder, loc, staticCount);
      count = count ? arith::MulIOp::create(builder, loc, count, constant)
                    : constant;
    }
    SmallVector<int64_t> boundCapture(bounds.size(), -1);
    for (size_t d = 1; d < bounds.size(); ++d)
      if (!getConstantIntValue(bounds[d])) {
        boundCapture[d] = captures.size();
        captures.push_back(cast<Value>(bounds[d]));
      }

    MLIRContext *context = module.getContext();
    std::string name = (Twine(::tfm::kParallelLoopPrefix) + Twine(index)).str();
    SmallVector<Type> types = {builder.getIndexType()};
    for (Value capture : captures)
      types.push_back(capture.getType());
    auto signature = FunctionType::get(context, types, {});
    auto cInterface = UnitAttr::get(context);

    // The body: the loop's, over the delinearized index.
    OpBuilder atEnd = OpBuilder::atBlockEnd(module.getBody());
    auto body = func::FuncOp::create(atEnd, loc, name + "_body", signature);
    body->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), cInterface);
    Block *entry = body.addEntryBlock();
    OpBuilder inside = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    for (auto [i, capture] : llvm::enumerate(captures))
      map.map(capture, entry->getArgument(i + 1));
    for (Value constant : constants)
      map.map(constant, inside.clone(*constant.getDefiningOp())->getResult(0));
    Value rest = entry->getArgument(0);
    SmallVector<Value> ivs(bounds.size());
    for (int64_t d = int64_t(bounds.size()) - 1; d > 0; --d) {
      Value bound = boundCapture[d] >= 0
                        ? entry->getArgument(1 + boundCapture[d])
                        : Value(arith::ConstantIndexOp::create(
                              inside, loc, *getConstantIntValue(bounds[d])));
      ivs[d] = arith::RemUIOp::create(inside, loc, rest, bound);
      rest = arith::DivUIOp::create(inside, loc, rest, bound);
    }
    ivs[0] = rest;
    for (auto [iv, value] : llvm::zip(loop.getInductionVars(), ivs))
      map.map(iv, value);
    for (Operation &op : loop.getBody()->without_terminator())
      inside.clone(op, map);
    func::ReturnOp::create(inside, loc);

    // The dispatch, which the glue defines.
    auto dispatch = func::FuncOp::create(atEnd, loc, name, signature);
    dispatch.setPrivate();
    dispatch->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), cInterface);

    SmallVector<Value> args = {count};
    args.append(captures.begin(), captures.end());
    func::CallOp::create(builder, loc, dispatch, args);
    loop.erase();
    return true;
  }
};

} // namespace
