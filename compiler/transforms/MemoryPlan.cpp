//===- MemoryPlan.cpp - the frame plan of a function ----------------------===//
//
// Which buffers each op's Highway code takes (frameNeeds): its results and
// the scratch the op declares (codegen::ScratchBuffersOpInterface). The
// emitter (lowering/hwy) takes the planned slots in order, by the same
// FrameBuffer kinds, and reports an error when its code asks for one the
// plan does not have. Views (tfm.split_heads,
// tfm.merge_heads, tfm.slice_rows, a rotary applied in place, a
// tfm.cache_read) take no buffer: the buffer they view lives as long as
// they do.
//
//===----------------------------------------------------------------------===//

#include "tfm/Transforms/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace {

/// Sizes past this many floats (4 TiB) are refused: no arena holds them,
/// and the offsets stay far from overflow.
constexpr uint64_t kMaxFrameFloats = uint64_t(1) << 40;

/// Collects an op's needs; the first one past kMaxFrameFloats fails the
/// lot.
class NeedList {
public:
  NeedList(Operation *op, const FrameBounds &bounds) : op(op), bounds(bounds) {}

  void add(FrameBuffer kind, unsigned index, uint64_t floats) {
    if (floats > kMaxFrameFloats && !failed) {
      failed = true;
      op->emitError()
          << "frame buffer '"
          << FrameSlotAttr::get(op->getContext(), kind, index, 0, 1).describe()
          << "' needs " << floats
          << " floats, more than a frame can hold (2^40)";
    }
    needs.push_back({kind, index, int64_t(std::min(floats, kMaxFrameFloats))});
  }
  /// Result `i`, unless the function returns it (its caller provides it)
  /// or the code does not write it.
  void addResult(unsigned i) {
    Value result = op->getResult(i);
    if (!isa<RankedTensorType>(result.getType()) ||
        llvm::any_of(result.getUsers(),
                     [](Operation *user) { return isa<func::ReturnOp>(user); }))
      return;
    add(FrameBuffer::Result, i, bounds.elements(result.getType()));
  }
  void addResults() {
    for (unsigned i = 0, e = op->getNumResults(); i < e; ++i)
      addResult(i);
  }

  Operation *op;
  const FrameBounds &bounds;
  SmallVector<FrameNeed> needs;
  bool failed = false;
};

} // namespace

Value mlir::tfm::viewedBy(Operation *op) {
  if (isa<SplitHeadsOp, MergeHeadsOp, SliceRowsOp>(op))
    return op->getOperand(0);
  if (isa<RotaryOp>(op) && isRotatedInPlace(op))
    return op->getOperand(0);
  return Value();
}

bool mlir::tfm::canRotateInPlace(RotaryOp op) {
  // Its input must be a view of rows this function computed (not an
  // argument's or a weight's) that nothing but views of other features
  // reads, and the rotary its view's only reader: nothing else sees the
  // rotated features unrotated.
  Value input = op.getInput();
  auto heads = input.getDefiningOp<SplitHeadsOp>();
  if (!heads || !input.hasOneUse())
    return false;
  Value rows = heads.getInput();
  Operation *def = rows.getDefiningOp();
  if (!def || isa<WeightOp>(def) || viewedBy(def))
    return false;
  // The features each view reads, of the rows' last dimension.
  auto features = [](SplitHeadsOp view) {
    int64_t width =
        view.getInput().getType().getShape().back() / view.getPartCount();
    return std::pair<int64_t, int64_t>{view.getPartIndex() * width,
                                       (view.getPartIndex() + 1) * width};
  };
  std::pair<int64_t, int64_t> mine = features(heads);
  return llvm::all_of(rows.getUsers(), [&](Operation *user) {
    auto other = dyn_cast<SplitHeadsOp>(user);
    if (!other)
      return false;
    std::pair<int64_t, int64_t> theirs = features(other);
    return other == heads || theirs.second <= mine.first ||
           mine.second <= theirs.first;
  });
}

FailureOr<SmallVector<FrameNeed>>
mlir::tfm::frameNeeds(Operation *op, const FrameBounds &bounds) {
  NeedList list(op, bounds);
  if (isa<WeightOp, CacheOp, CacheReadOp, func::ReturnOp>(op))
    return list.needs; // outside the frame
  if (auto addNorm = dyn_cast<AddLayerNormOp>(op)) {
    // The normalised rows, then the sum: an unread sum is not stored.
    list.addResult(cast<OpResult>(addNorm.getResult()).getResultNumber());
    if (!addNorm.getSum().use_empty())
      list.addResult(cast<OpResult>(addNorm.getSum()).getResultNumber());
  } else if (!viewedBy(op)) {
    // A view's results live in the buffer it views.
    list.addResults();
  }
  if (auto scratch = dyn_cast<ScratchBuffersOpInterface>(op))
    for (const ScratchBuffer &buffer : scratch.getScratchBuffers(bounds))
      list.add(buffer.kind, 0, buffer.floats);
  if (list.failed)
    return failure();
  return list.needs;
}

LogicalResult mlir::tfm::planFrame(FunctionOpInterface func,
                                   const FrameBounds &bounds) {
  Region &region = func.getFunctionBody();
  if (!region.hasOneBlock())
    return func.emitError("a frame is planned for single-block functions");
  Block &body = region.front();
  // Rotaries in place first: whether a rotary takes a buffer follows.
  for (Operation &op : body)
    if (auto rotary = dyn_cast<RotaryOp>(op)) {
      if (canRotateInPlace(rotary))
        rotary->setAttr(InPlaceName::getNameStr(),
                        UnitAttr::get(func.getContext()));
      else
        rotary->removeAttr(InPlaceName::getNameStr());
    }
  // A view's readers read the buffer it views.
  llvm::DenseMap<Value, Value> storage;
  auto storageOf = [&](Value v) {
    auto it = storage.find(v);
    return it == storage.end() ? v : it->second;
  };
  llvm::DenseMap<Value, Operation *> lastUse;
  for (Operation &op : body) {
    for (Value v : op.getOperands())
      lastUse[storageOf(v)] = &op;
    if (Value viewed = viewedBy(&op))
      for (Value result : op.getResults())
        storage[result] = storageOf(viewed);
  }

  MLIRContext *context = func.getContext();
  FramePlanner frame;
  llvm::DenseMap<Value, std::pair<int64_t, int64_t>> live;
  for (Operation &op : body) {
    FailureOr<SmallVector<FrameNeed>> needs = frameNeeds(&op, bounds);
    if (failed(needs))
      return failure();
    SmallVector<Attribute> slots;
    SmallVector<std::pair<int64_t, int64_t>> scratch;
    for (const FrameNeed &need : *needs) {
      int64_t offset = frame.allocate(need.floats);
      slots.push_back(FrameSlotAttr::get(context, need.kind, need.index, offset,
                                         need.floats));
      if (need.kind == FrameBuffer::Result)
        live[op.getResult(need.index)] = {offset, need.floats};
      else
        scratch.push_back({offset, need.floats});
    }
    if (slots.empty())
      op.removeAttr(FrameName::getNameStr());
    else
      op.setAttr(FrameName::getNameStr(), ArrayAttr::get(context, slots));

    // Scratch is free after its op; a value after its last reader (an
    // unread one at once).
    for (auto [offset, floats] : scratch)
      frame.release(offset, floats);
    auto releaseIf = [&](Value v, bool dead) {
      auto it = live.find(v);
      if (it == live.end() || !dead)
        return;
      frame.release(it->second.first, it->second.second);
      live.erase(it);
    };
    for (Value v : op.getOperands())
      releaseIf(storageOf(v), lastUse.lookup(storageOf(v)) == &op);
    for (Value v : op.getResults())
      releaseIf(v, !lastUse.count(v));
  }
  func->setAttr(FrameFloatsName::getNameStr(),
                IntegerAttr::get(IntegerType::get(context, 64), frame.size()));
  return success();
}
