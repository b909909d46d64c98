//===- AlignedBuffer.h - owned 64-byte aligned memory -----------*- C++ -*-===//

#ifndef TFM_RUNTIME_ALIGNEDBUFFER_H
#define TFM_RUNTIME_ALIGNEDBUFFER_H

#include <cstddef>

namespace tfm::rt {

/// Memory for weights, inputs and outputs, aligned to a cache line (and to
/// any SIMD vector) so kernels may use aligned loads on whole tensors.
/// Allocation failure is reported, not thrown: a model too big for memory
/// is a user error.
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer &&other) noexcept;
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept;
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;

  /// Replaces the contents with `bytes` zeroed bytes; false if out of memory.
  bool allocate(size_t bytes);
  void *data() const { return ptr; }
  size_t size() const { return bytes; }

private:
  void release();

  void *ptr = nullptr;
  size_t bytes = 0;
  /// Bytes mapped with mmap (large buffers), 0 for heap memory.
  size_t mapped = 0;
};

} // namespace tfm::rt

#endif // TFM_RUNTIME_ALIGNEDBUFFER_H
