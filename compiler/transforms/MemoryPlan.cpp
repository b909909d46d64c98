//===- MemoryPlan.cpp - the frame plan of a function ----------------------===//
//
// Which buffers each op's Highway code takes (frameNeeds) mirrors the
// emitter (lowering/hwy): the emitter takes the planned slots in order and
// reports an error when its code asks for one the plan does not have, so
// the two cannot drift apart unnoticed.
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

  /// The largest value of dimension `i` of `type`.
  uint64_t dim(Type type, unsigned i) {
    auto tensor = cast<RankedTensorType>(type);
    int64_t size = tensor.getDimSize(i);
    if (!ShapedType::isDynamic(size))
      return uint64_t(size);
    if (i > 1 && !failed) {
      failed = true;
      op->emitError() << "dimension " << i << " of " << type
                      << " is dynamic: a frame can only bound batch (0) and "
                         "sequence (1) dimensions";
    }
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

  /// Rotary positions rotate Q and K, each with its own cos/sin tables.
  void addRotary(uint64_t maxSeq, int64_t dk) {
    for (int i = 0; i < 2; ++i) {
      add("ropeCos", mul({maxSeq, uint64_t(dk / 2)}));
      add("ropeSin", mul({maxSeq, uint64_t(dk / 2)}));
    }
  }

  /// The attention core's scratch: the folded or projected queries and
  /// keys of bilinear and additive scores; the keys transposed for
  /// dot-product scores, unless a cache holds them so.
  void addAttentionCore(ScoreKind score, ValueRange scoreParams,
                        uint64_t maxBatch, uint64_t maxSq, uint64_t maxSk,
                        int64_t heads, int64_t dk, bool cachedKeys) {
    uint64_t h = heads, d = dk;
    if (score == ScoreKind::Bilinear)
      add("qW", mul({maxBatch, h, maxSq, d}));
    if (score == ScoreKind::Additive && !scoreParams.empty()) {
      uint64_t a = dim(scoreParams[0].getType(), 1);
      add("keyProj", mul({maxBatch, h, maxSk, a}));
      add("queryProj", mul({maxBatch, h, maxSq, a}));
    }
    if (score != ScoreKind::Additive && !cachedKeys)
      add("keysT", mul({maxBatch, h, d, maxSk}));
  }

  Operation *op;
  const FrameBounds &bounds;
  SmallVector<FrameNeed> needs;
  bool failed = false;
};

void multiHeadAttentionNeeds(MultiHeadAttentionOp op, NeedList &list) {
  Type query = op.getQuery().getType();
  if (cast<RankedTensorType>(query).getRank() != 3)
    return list.addResults(); // the backend refuses it with its own error
  int64_t d = cast<RankedTensorType>(query).getDimSize(2);
  int64_t heads = op.getNumHeads(), dk = d / heads;
  uint64_t maxBatch = list.dim(query, 0), maxSeq = list.dim(query, 1);
  uint64_t maxRows = NeedList::mul({maxBatch, maxSeq});
  uint64_t maxKeys = maxSeq;
  if (op.isSelfAttention()) {
    list.add("qkv", NeedList::mul({maxRows, uint64_t(3 * d)}));
    if (op.getRope())
      list.addRotary(maxSeq, dk);
  } else {
    list.add("q", NeedList::mul({maxRows, uint64_t(d)}));
    if (Value memory = op.getMemory()) {
      maxKeys = list.dim(memory.getType(), 1);
      list.add("kv", NeedList::mul({list.dim(memory.getType(), 0), maxKeys,
                                    uint64_t(2 * d)}));
    }
  }
  if (Value cache = op.getCache())
    maxKeys = cast<KVCacheType>(cache.getType()).getMaxSeq();
  list.add("heads", NeedList::mul({maxRows, uint64_t(d)}));
  list.addAttentionCore(op.getScore(), op.getScoreParams(), maxBatch, maxSeq,
                        maxKeys, heads, dk, bool(op.getCache()));
  list.addResults();
}

void flashAttentionNeeds(FlashAttentionOp op, NeedList &list) {
  Value qkv = op.getQkv();
  if (cast<RankedTensorType>(qkv.getType()).getRank() != 3)
    return list.addResults();
  int64_t d = cast<RankedTensorType>(qkv.getType()).getDimSize(2) / 3;
  int64_t heads = op.getNumHeads(), dk = d / heads;
  uint64_t maxBatch = list.dim(qkv.getType(), 0),
           maxSeq = list.dim(qkv.getType(), 1);
  if (op.getRope()) {
    // Rotated in place only in a frame buffer no other op reads.
    Operation *def = qkv.getDefiningOp();
    if (!(qkv.hasOneUse() && def && !isa<WeightOp>(def)))
      list.add("qkv", list.elements(qkv.getType()));
    list.addRotary(maxSeq, dk);
  }
  list.addResults();
  list.addAttentionCore(op.getScore(), op.getScoreParams(), maxBatch, maxSeq,
                        maxSeq, heads, dk, /*cachedKeys=*/false);
}

void feedForwardNeeds(FeedForwardOp op, NeedList &list) {
  auto input = cast<RankedTensorType>(op.getInput().getType());
  uint64_t maxRows = 1;
  for (unsigned i = 0; i + 1 < input.getRank(); ++i)
    maxRows = NeedList::mul({maxRows, list.dim(input, i)});
  list.add("hidden",
           NeedList::mul({maxRows, list.dim(op.getW1().getType(), 0)}));
  list.addResults();
}

} // namespace

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
  if (isa<WeightOp, CacheOp, func::ReturnOp>(op))
    return list.needs; // weights and caches live outside the frame
  if (auto mha = dyn_cast<MultiHeadAttentionOp>(op))
    multiHeadAttentionNeeds(mha, list);
  else if (auto flash = dyn_cast<FlashAttentionOp>(op))
    flashAttentionNeeds(flash, list);
  else if (auto ffn = dyn_cast<FeedForwardOp>(op))
    feedForwardNeeds(ffn, list);
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
  llvm::DenseMap<Value, Operation *> lastUse;
  for (Operation &op : body)
    for (Value v : op.getOperands())
      lastUse[v] = &op;

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
      releaseIf(v, lastUse.lookup(v) == &op);
    for (Value v : op.getResults())
      releaseIf(v, v.use_empty());
  }
  func->setAttr("tfm.frame_floats",
                IntegerAttr::get(IntegerType::get(context, 64), frame.size()));
  return success();
}
