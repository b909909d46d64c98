//===- FramePlanner.cpp - static offsets for a function's buffers ---------===//

#include "tfm/Transforms/MemoryPlan.h"

#include <cassert>
#include <iterator>

namespace mlir::tfm {

int64_t FramePlanner::allocate(int64_t floats) {
  floats = (floats + 15) / 16 * 16; // whole 64-byte lines
  for (auto it = free.begin(); it != free.end(); ++it) {
    if (it->second < floats)
      continue;
    int64_t offset = it->first, left = it->second - floats;
    free.erase(it);
    if (left)
      free[offset + floats] = left;
    return offset;
  }
  // Grow the frame, starting inside a free range that ends at the top.
  int64_t offset = top;
  if (!free.empty()) {
    auto last = std::prev(free.end());
    if (last->first + last->second == top) {
      offset = last->first;
      free.erase(last);
    }
  }
  top = offset + floats;
  return offset;
}

void FramePlanner::release(int64_t offset, int64_t floats) {
  floats = (floats + 15) / 16 * 16;
  auto [it, inserted] = free.emplace(offset, floats);
  assert(inserted && "a frame range released twice");
  (void)inserted;
  // Merge with the free neighbours.
  if (auto next = std::next(it);
      next != free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free.erase(next);
  }
  if (it != free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free.erase(it);
    }
  }
}

} // namespace mlir::tfm
