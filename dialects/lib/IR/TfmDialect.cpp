//===- TfmDialect.cpp - the tfm dialect -----------------------------------===//

#include "tfm/IR/TfmDialect.h"
#include "tfm/IR/TfmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tfm;

#include "tfm/IR/TfmOpsDialect.cpp.inc"

#include "tfm/IR/TfmEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tfm/IR/TfmAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "tfm/IR/TfmTypes.cpp.inc"

void TfmDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tfm/IR/TfmAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "tfm/IR/TfmTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tfm/IR/TfmOps.cpp.inc"
      >();
}

LogicalResult TfmDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == "tfm.frame_floats") {
    if (!isa<FunctionOpInterface>(op))
      return op->emitError() << "'tfm.frame_floats' belongs on a function";
    auto floats = dyn_cast<IntegerAttr>(attr.getValue());
    if (!floats || !floats.getType().isSignlessInteger(64) ||
        floats.getInt() < 0)
      return op->emitError()
             << "'tfm.frame_floats' must be a non-negative i64, got "
             << attr.getValue();
    return success();
  }
  if (name != "tfm.frame")
    return success();
  auto slots = dyn_cast<ArrayAttr>(attr.getValue());
  if (!slots || !llvm::all_of(slots, llvm::IsaPred<FrameSlotAttr>))
    return op->emitError() << "'tfm.frame' must be an array of #tfm.slot, got "
                           << attr.getValue();
  auto func = op->getParentOfType<FunctionOpInterface>();
  auto frame = func ? func->getAttrOfType<IntegerAttr>("tfm.frame_floats")
                    : IntegerAttr();
  if (!frame)
    return op->emitError() << "'tfm.frame' needs the enclosing function's "
                              "'tfm.frame_floats'";
  auto list = llvm::to_vector(slots.getAsRange<FrameSlotAttr>());
  for (auto [i, slot] : llvm::enumerate(list)) {
    if (slot.getOffset() > frame.getInt() - slot.getFloats())
      return op->emitError() << "frame slot '" << slot.getName() << "' (floats "
                             << slot.getOffset() << " to "
                             << slot.getOffset() + slot.getFloats()
                             << ") lies outside the function's frame of "
                             << frame.getInt() << " floats";
    // An op's buffers are all live while it runs.
    for (FrameSlotAttr other : ArrayRef(list).take_front(i))
      if (slot.getOffset() < other.getOffset() + other.getFloats() &&
          other.getOffset() < slot.getOffset() + slot.getFloats())
        return op->emitError()
               << "frame slots '" << other.getName() << "' and '"
               << slot.getName() << "' of one op overlap";
  }
  return success();
}
