//===- MemoryPlan.h - static offsets for a function's buffers --*- C++ -*-===//
//
// The plan tfm-plan-memory records on a function and its ops
// (tfm_codegen.frame, tfm_codegen.frame_floats, see #tfm_codegen.slot) and
// the Highway backend follows. Each
// call of a function takes one frame from the model's arena; every buffer
// its code needs (results, scratch) has a static offset in it, sized for
// the compiled maxima, and a dead buffer's space is reused.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TRANSFORMS_MEMORYPLAN_H
#define TFM_TRANSFORMS_MEMORYPLAN_H

#include "tfm/Codegen/Codegen.h"
#include "tfm/IR/TfmOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mlir::tfm {

/// First fit over the free ranges of a frame; every range starts on a
/// 64-byte line (16 floats).
class FramePlanner {
public:
  int64_t allocate(int64_t floats);
  void release(int64_t offset, int64_t floats);
  /// The frame's size: the most floats in use at once.
  int64_t size() const { return top; }

private:
  /// Free ranges inside [0, top): offset -> floats.
  std::map<int64_t, int64_t> free;
  int64_t top = 0;
};

/// One buffer an op's code takes in the frame: a result (kind `Result`,
/// `index` its number) or a scratch buffer the op declares.
struct FrameNeed {
  codegen::FrameBuffer kind;
  unsigned index;
  int64_t floats;
};

/// The buffers the Highway backend's code for `op` takes in the frame, in
/// the order it takes them: its results (except the function's results,
/// which the caller provides, and views of other buffers), then the scratch
/// it declares (codegen::ScratchBuffersOpInterface).
/// Dynamic dimensions are bounded by `bounds`: the first by maxBatch, the
/// others by maxSeqLen. Fails with an error at `op` for a size past 2^40
/// floats.
FailureOr<SmallVector<FrameNeed>>
frameNeeds(Operation *op, const codegen::FrameBounds &bounds);

/// Whether `op` may rotate its input in place: the input is the only
/// reader of a tfm.split_heads view of rows the function computed, and
/// nothing but views of other features reads those rows.
bool canRotateInPlace(RotaryOp op);

/// The value whose buffer `op`'s results view (no buffer of their own), or
/// null: tfm.split_heads, tfm.merge_heads, tfm.slice_rows, and a tfm.rotary
/// marked in place.
Value viewedBy(Operation *op);

/// Plans `func`: `tfm_codegen.frame` on every op that needs frame buffers,
/// `tfm_codegen.frame_floats` on the function, and `tfm_codegen.in_place`
/// on each
/// tfm.rotary that canRotateInPlace. A buffer lives from the op that takes
/// it to its last reader, through the views of it (scratch: to the end of
/// its op).
LogicalResult planFrame(FunctionOpInterface func,
                        const codegen::FrameBounds &bounds);

} // namespace mlir::tfm

#endif // TFM_TRANSFORMS_MEMORYPLAN_H
