//===- CodegenDialect.cpp - the tfm_codegen dialect -----------------------===//

#include "tfm/Codegen/Codegen.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

#include "tfm/Codegen/CodegenDialect.cpp.inc"

#include "tfm/Codegen/CodegenEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tfm/Codegen/CodegenAttrs.cpp.inc"

#include "tfm/Codegen/CodegenInterfaces.cpp.inc"

void TfmCodegenDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tfm/Codegen/CodegenAttrs.cpp.inc"
      >();
  attachScratchBufferModels();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult
GemmTilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t rows512, int64_t cols512, int64_t rows256,
                       int64_t cols256, int64_t rows128, int64_t cols128,
                       int64_t l2Columns, GemmPrefetch prefetch512,
                       GemmPrefetch prefetch256, GemmPrefetch prefetch128) {
  struct Tile {
    StringRef bits;
    int64_t rows, cols, lanes;
  };
  for (Tile tile :
       {Tile{"512", rows512, cols512, 16}, Tile{"256", rows256, cols256, 8},
        Tile{"128", rows128, cols128, 4}}) {
    // 16 bounds the code: the backend instantiates a tile for each row
    // count up to this one.
    if (tile.rows < 1 || tile.rows > 16)
      return emitError() << "gemm_tiling rows" << tile.bits
                         << " must be in [1, 16], got " << tile.rows;
    // A tile's columns are whole vectors of its target, one to four.
    if (tile.cols < tile.lanes || tile.cols > 4 * tile.lanes ||
        tile.cols % tile.lanes != 0)
      return emitError() << "gemm_tiling cols" << tile.bits
                         << " must be 1 to 4 vectors of " << tile.lanes
                         << " floats, got " << tile.cols;
  }
  if (l2Columns < 0)
    return emitError() << "gemm_tiling l2Columns must be 0 (panel by "
                          "panel) or positive, got "
                       << l2Columns;
  for (int64_t cols : {cols512, cols256, cols128})
    if (l2Columns % cols != 0)
      return emitError() << "gemm_tiling l2Columns (" << l2Columns
                         << ") must be a whole number of every target's "
                            "panels, not of "
                         << cols << " columns";
  // In blocks, the next panel of a task is the one at its place in the
  // next block: a block of tasks later, not next.
  for (auto [bits, prefetch] :
       {std::pair{"512", prefetch512}, std::pair{"256", prefetch256},
        std::pair{"128", prefetch128}})
    if (l2Columns > 0 && prefetch != GemmPrefetch::None)
      return emitError() << "gemm_tiling prefetches only panel by panel "
                            "(l2Columns = 0), got l2Columns = "
                         << l2Columns << " with prefetch" << bits << " = "
                         << stringifyGemmPrefetch(prefetch);
  return success();
}

LogicalResult
AttentionTilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            int64_t queryRows512, int64_t queryRows256,
                            int64_t queryRows128, int64_t keyBlock) {
  // 16 bounds the code: the backend instantiates the value pass for each
  // row count up to this one.
  for (auto [name, rows] :
       {std::pair<StringRef, int64_t>{"queryRows512", queryRows512},
        {"queryRows256", queryRows256},
        {"queryRows128", queryRows128}})
    if (rows < 1 || rows > 16)
      return emitError() << "attention_tiling " << name
                         << " must be in [1, 16], got " << rows;
  // Scores are stored by the vector: a block is a whole number of vectors
  // on every target (16 lanes at most); its scores live on the stack.
  if (keyBlock < 16 || keyBlock > 1024 || keyBlock % 16 != 0)
    return emitError() << "attention_tiling keyBlock must be a multiple of "
                          "16 in [16, 1024], got "
                       << keyBlock;
  return success();
}

std::string FrameSlotAttr::describe() const {
  std::string text = stringifyFrameBuffer(getBuffer()).str();
  if (getBuffer() == FrameBuffer::Result)
    text += " " + std::to_string(getIndex());
  return text;
}

LogicalResult
FrameSlotAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      FrameBuffer buffer, int64_t index, int64_t offset,
                      int64_t floats) {
  std::string name = stringifyFrameBuffer(buffer).str();
  if (buffer != FrameBuffer::Result && index != 0)
    return emitError() << "frame slot '" << name
                       << "' is a scratch buffer: it has no result index, got "
                       << index;
  if (index < 0)
    return emitError() << "frame slot result index must be non-negative, got "
                       << index;
  if (buffer == FrameBuffer::Result)
    name += " " + std::to_string(index);
  if (offset < 0 || offset % 16 != 0)
    return emitError() << "frame slot '" << name
                       << "' offset must be a non-negative multiple of 16 "
                          "floats (a 64-byte line), got "
                       << offset;
  if (floats < 1)
    return emitError() << "frame slot '" << name
                       << "' must hold at least one float, got " << floats;
  return success();
}

//===----------------------------------------------------------------------===//
// Discardable attributes on ops
//===----------------------------------------------------------------------===//

namespace {

LogicalResult verifyFrame(Operation *op, Attribute value) {
  auto slots = dyn_cast<ArrayAttr>(value);
  if (!slots || !llvm::all_of(slots, llvm::IsaPred<FrameSlotAttr>))
    return op->emitError() << "'" << FrameName::getNameStr()
                           << "' must be an array of #tfm_codegen.slot, got "
                           << value;
  auto func = op->getParentOfType<FunctionOpInterface>();
  std::optional<int64_t> frame =
      func ? getFrameFloats(func) : std::optional<int64_t>();
  if (!frame)
    return op->emitError() << "'" << FrameName::getNameStr()
                           << "' needs the enclosing function's '"
                           << FrameFloatsName::getNameStr() << "'";
  auto list = llvm::to_vector(slots.getAsRange<FrameSlotAttr>());
  for (auto [i, slot] : llvm::enumerate(list)) {
    if (slot.getBuffer() == FrameBuffer::Result &&
        slot.getIndex() >= int64_t(op->getNumResults()))
      return op->emitError()
             << "frame slot '" << slot.describe() << "' names a result the op ("
             << op->getNumResults() << " results) does not have";
    if (slot.getOffset() > *frame - slot.getFloats())
      return op->emitError() << "frame slot '" << slot.describe()
                             << "' (floats " << slot.getOffset() << " to "
                             << slot.getOffset() + slot.getFloats()
                             << ") lies outside the function's frame of "
                             << *frame << " floats";
    // An op's buffers are all live while it runs.
    for (FrameSlotAttr other : ArrayRef(list).take_front(i)) {
      if (other == slot ||
          (slot.getOffset() < other.getOffset() + other.getFloats() &&
           other.getOffset() < slot.getOffset() + slot.getFloats()))
        return op->emitError()
               << "frame slots '" << other.describe() << "' and '"
               << slot.describe() << "' of one op overlap";
    }
  }
  return success();
}

} // namespace

LogicalResult TfmCodegenDialect::verifyOperationAttribute(Operation *op,
                                                          NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == GemmTilingName::getNameStr()) {
    if (!isa<GemmTilingAttr>(value))
      return op->emitError()
             << "'" << name << "' must be a #tfm_codegen.gemm_tiling, got "
             << value;
    if (!isa<LinearOp, GroupedLinearOp>(op))
      return op->emitError()
             << "'" << name
             << "' belongs on a tfm.linear or tfm.grouped_linear";
    return success();
  }
  if (name == AttentionTilingName::getNameStr()) {
    if (!isa<AttentionTilingAttr>(value))
      return op->emitError()
             << "'" << name << "' must be a #tfm_codegen.attention_tiling, got "
             << value;
    auto attention = dyn_cast<AttentionOp>(op);
    if (!attention)
      return op->emitError() << "'" << name << "' belongs on a tfm.attention";
    if (attention.getScore() == ScoreKind::Additive)
      return op->emitError() << "additive scores are taken one key at a time: "
                                "no '"
                             << name << "' applies";
    return success();
  }
  if (name == FrameName::getNameStr())
    return verifyFrame(op, value);
  if (name == FrameFloatsName::getNameStr()) {
    if (!isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << name << "' belongs on a function";
    auto floats = dyn_cast<IntegerAttr>(value);
    if (!floats || !floats.getType().isSignlessInteger(64) ||
        floats.getInt() < 0)
      return op->emitError()
             << "'" << name << "' must be a non-negative i64, got " << value;
    return success();
  }
  if (name == InPlaceName::getNameStr()) {
    if (!isa<UnitAttr>(value) || !isa<RotaryOp>(op))
      return op->emitError()
             << "'" << name << "' is a unit attribute of a tfm.rotary";
    return success();
  }
  return op->emitError() << "'" << name
                         << "' is not a tfm_codegen attribute (gemm_tiling, "
                            "attention_tiling, frame, frame_floats, in_place)";
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

uint64_t FrameBounds::dim(Type type, unsigned i) const {
  auto tensor = cast<RankedTensorType>(type);
  int64_t size = tensor.getDimSize(i);
  if (!ShapedType::isDynamic(size))
    return uint64_t(size);
  return uint64_t(i == 0 ? maxBatch : maxSeqLen);
}

uint64_t FrameBounds::elements(Type type) const {
  uint64_t n = 1;
  for (unsigned i = 0, e = cast<RankedTensorType>(type).getRank(); i < e; ++i)
    n = llvm::SaturatingMultiply(n, dim(type, i));
  return n;
}

std::optional<FrameBounds>
mlir::tfm::codegen::moduleFrameBounds(ModuleOp module) {
  auto bound = [&](StringRef name) -> std::optional<int64_t> {
    auto attr = module->getAttrOfType<IntegerAttr>(name);
    if (!attr || !attr.getType().isSignlessInteger(64) || attr.getInt() <= 0)
      return std::nullopt;
    return attr.getInt();
  };
  std::optional<int64_t> maxBatch = bound("tfm.max_batch");
  std::optional<int64_t> maxSeq = bound("tfm.max_seq_len");
  if (!maxBatch || !maxSeq)
    return std::nullopt;
  return FrameBounds{*maxBatch, *maxSeq};
}

SmallVector<FrameSlotAttr> mlir::tfm::codegen::getFrameSlots(Operation *op) {
  SmallVector<FrameSlotAttr> slots;
  if (auto list = op->getAttrOfType<ArrayAttr>(FrameName::getNameStr()))
    for (Attribute slot : list)
      if (auto frameSlot = dyn_cast<FrameSlotAttr>(slot))
        slots.push_back(frameSlot);
  return slots;
}

std::optional<int64_t> mlir::tfm::codegen::getFrameFloats(Operation *func) {
  if (auto floats =
          func->getAttrOfType<IntegerAttr>(FrameFloatsName::getNameStr()))
    return floats.getInt();
  return std::nullopt;
}
