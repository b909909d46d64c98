//===- Arena.h - activation memory of a forward pass ------------*- C++ -*-===//

#ifndef TFM_RUNTIME_ARENA_H
#define TFM_RUNTIME_ARENA_H

#include <cstddef>
#include <cstdint>

namespace tfm::rt {

/// One block of memory, allocated once, handed out as a stack: generated
/// code takes buffers with `take` and gives back everything after a mark
/// with `release`. Running out is a compiler bug (the compiler sized it).
class Arena {
public:
  explicit Arena(size_t bytes);
  ~Arena();
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  /// `count` floats, 64-byte aligned.
  float *take(size_t count);
  size_t mark() const { return top; }
  void release(size_t m) { top = m; }
  size_t capacity() const { return size; }
  /// The most bytes in use at any time so far.
  size_t highWater() const { return peak; }

private:
  unsigned char *base;
  size_t size;
  size_t top = 0;
  size_t peak = 0;
};

} // namespace tfm::rt

#endif // TFM_RUNTIME_ARENA_H
