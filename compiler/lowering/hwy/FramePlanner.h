//===- FramePlanner.h - static offsets for a function's buffers -*- C++ -*-===//

#ifndef TFM_LOWERING_HWY_FRAMEPLANNER_H
#define TFM_LOWERING_HWY_FRAMEPLANNER_H

#include <cstdint>
#include <map>

namespace tfm::hwy {

/// Memory planning of one function's activations: each buffer gets a
/// static offset (in floats, at the compiled maxima) into the function's
/// frame, and its space is reused once the buffer is dead. First fit over
/// the free ranges; every range starts on a 64-byte line.
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

} // namespace tfm::hwy

#endif // TFM_LOWERING_HWY_FRAMEPLANNER_H
