//===- MemoryPlan.cpp - the frame plan of a function ----------------------===//
//
// Which buffers each op's Highway code takes (frameNeeds) mirrors the
// emitter (lowering/hwy): the emitter takes the planned slots in order and
// reports an error when its code asks for one the plan does not have, so
// the two cannot drift apart unnoticed. Views (tfm.split_heads,
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

namespace {

/// Sizes past this many floats (4 TiB) are refused: no arena holds them,
/// and the offsets stay far from overflow.
constexpr uint64_t kMaxFrameFloats = uint64_t(1) << 40;

/// Collects an op's needs; sizes saturate, and the first dimension that
/// cannot be bounded fails the lot.
class NeedList {
public:
  NeedList(Operation *op, const FrameBounds &bounds) : op(op), bounds(bounds) {}

  /// The largest value of dimension `i` of `type`: a dynamic one is the
  /// batch (dimension 0) or a sequence ([batch, seq, d] and per-head
  /// [batch, heads, seq, dk] alike).
  uint64_t dim(Type type, unsigned i) {
    auto tensor = cast<RankedTensorType>(type);
    int64_t size = tensor.getDimSize(i);
    if (!ShapedType::isDynamic(size))
      return uint64_t(size);
    return i == 0 ? bounds.maxBatch : bounds.maxSeqLen;
  }
  /// The most elements of `type`.
  uint64_t elements(Type type) {
    uint64_t n = 1;
    for (unsigned i = 0, e = cast<RankedTensorType>(type).getRank(); i < e; ++i)
      n = llvm::SaturatingMultiply(n, dim(type, i));
    return n;
  }
  static uint64_t mul(std::initializer_list<uint64_t> factors) {
    uint64_t n = 1;
    for (uint64_t f : factors)
      n = llvm::SaturatingMultiply(n, f);
    return n;
  }

  void add(std::string name, uint64_t floats) {
    if (floats > kMaxFrameFloats && !failed) {
      failed = true;
      op->emitError() << "frame buffer '" << name << "' needs " << floats
                      << " floats, more than a frame can hold (2^40)";
    }
    needs.push_back(
        {std::move(name), int64_t(std::min(floats, kMaxFrameFloats))});
  }
  /// `result<i>`, unless the function returns it (its caller provides it)
  /// or the code does not write it.
  void addResult(unsigned i) {
    Value result = op->getResult(i);
    if (!isa<RankedTensorType>(result.getType()) ||
        llvm::any_of(result.getUsers(),
                     [](Operation *user) { return isa<func::ReturnOp>(user); }))
      return;
    add("result" + std::to_string(i), elements(result.getType()));
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

/// The rows (dimension -2) of `keys` at most: a cache's positions when
/// they are read from one.
uint64_t maxKeys(Value keys, NeedList &list) {
  if (auto read = keys.getDefiningOp<CacheReadOp>())
    return read.getCache().getType().getMaxSeq();
  auto type = cast<RankedTensorType>(keys.getType());
  return list.dim(type, type.getRank() - 2);
}

/// The result (stored with the heads merged, what tfm.merge_heads reads),
/// then the core's scratch: the folded or projected queries and keys of
/// bilinear and additive scores; the keys transposed for dot-product
/// scores, unless a cache holds them so.
void attentionNeeds(AttentionOp op, NeedList &list) {
  auto query = op.getQuery().getType();
  if (query.getRank() != 4)
    return list.addResults(); // the backend refuses it with its own error
  list.addResults();
  uint64_t maxBatch = list.dim(query, 0), heads = list.dim(query, 1),
           maxSq = list.dim(query, 2), dk = list.dim(query, 3);
  uint64_t maxSk = maxKeys(op.getKey(), list);
  ScoreKind score = op.getScore();
  if (score == ScoreKind::Bilinear)
    list.add("qW", NeedList::mul({maxBatch, heads, maxSq, dk}));
  if (score == ScoreKind::Additive && !op.getScoreParams().empty()) {
    uint64_t a = list.dim(op.getScoreParams()[0].getType(), 1);
    list.add("keyProj", NeedList::mul({maxBatch, heads, maxSk, a}));
    list.add("queryProj", NeedList::mul({maxBatch, heads, maxSq, a}));
  }
  if (score != ScoreKind::Additive && !op.getKey().getDefiningOp<CacheReadOp>())
    list.add("keysT", NeedList::mul({maxBatch, heads, dk, maxSk}));
}

/// Its cos/sin tables, and its result unless it rotates in place.
void rotaryNeeds(RotaryOp op, NeedList &list) {
  auto type = op.getInput().getType();
  uint64_t maxSeq = list.dim(type, type.getRank() - 2);
  uint64_t half = list.dim(type, type.getRank() - 1) / 2;
  if (!op->hasAttr(kRotateInPlace))
    list.addResults();
  list.add("ropeCos", NeedList::mul({maxSeq, half}));
  list.add("ropeSin", NeedList::mul({maxSeq, half}));
}

} // namespace

Value mlir::tfm::viewedBy(Operation *op) {
  if (isa<SplitHeadsOp, MergeHeadsOp, SliceRowsOp>(op))
    return op->getOperand(0);
  if (isa<RotaryOp>(op) && op->hasAttr(kRotateInPlace))
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

std::optional<FrameBounds> mlir::tfm::moduleFrameBounds(ModuleOp module) {
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

FailureOr<SmallVector<FrameNeed>>
mlir::tfm::frameNeeds(Operation *op, const FrameBounds &bounds) {
  NeedList list(op, bounds);
  if (auto rotary = dyn_cast<RotaryOp>(op))
    rotaryNeeds(rotary, list);
  else if (isa<WeightOp, CacheOp, CacheReadOp, func::ReturnOp>(op) ||
           viewedBy(op))
    return list.needs; // outside the frame, or a view of another buffer
  else if (auto attention = dyn_cast<AttentionOp>(op))
    attentionNeeds(attention, list);
  else if (auto addNorm = dyn_cast<AddLayerNormOp>(op)) {
    // The normalised rows, then the sum: an unread sum is not stored.
    list.addResult(cast<OpResult>(addNorm.getResult()).getResultNumber());
    if (!addNorm.getSum().use_empty())
      list.addResult(cast<OpResult>(addNorm.getSum()).getResultNumber());
  } else
    list.addResults();
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
        rotary->setAttr(kRotateInPlace, UnitAttr::get(func.getContext()));
      else
        rotary->removeAttr(kRotateInPlace);
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
      slots.push_back(
          FrameSlotAttr::get(context, need.name, offset, need.floats));
      StringRef name = need.name;
      unsigned index;
      if (name.consume_front("result") && !name.getAsInteger(10, index))
        live[op.getResult(index)] = {offset, need.floats};
      else
        scratch.push_back({offset, need.floats});
    }
    if (slots.empty())
      op.removeAttr("tfm.frame");
    else
      op.setAttr("tfm.frame", ArrayAttr::get(context, slots));

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
  func->setAttr("tfm.frame_floats",
                IntegerAttr::get(IntegerType::get(context, 64), frame.size()));
  return success();
}
