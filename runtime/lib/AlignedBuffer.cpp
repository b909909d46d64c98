//===- AlignedBuffer.cpp - owned 64-byte aligned memory -------------------===//

#include "tfm/runtime/AlignedBuffer.h"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace tfm::rt {

AlignedBuffer::~AlignedBuffer() { std::free(ptr); }

AlignedBuffer::AlignedBuffer(AlignedBuffer &&other) noexcept
    : ptr(std::exchange(other.ptr, nullptr)),
      bytes(std::exchange(other.bytes, 0)) {}

AlignedBuffer &AlignedBuffer::operator=(AlignedBuffer &&other) noexcept {
  if (this != &other) {
    std::free(ptr);
    ptr = std::exchange(other.ptr, nullptr);
    bytes = std::exchange(other.bytes, 0);
  }
  return *this;
}

bool AlignedBuffer::allocate(size_t count) {
  std::free(ptr);
  ptr = nullptr;
  bytes = 0;
  if (count == 0)
    return true;
  // aligned_alloc wants a multiple of the alignment.
  size_t rounded = (count + 63) & ~size_t(63);
  if (rounded < count)
    return false;
  ptr = std::aligned_alloc(64, rounded);
  if (!ptr)
    return false;
  std::memset(ptr, 0, rounded);
  bytes = count;
  return true;
}

} // namespace tfm::rt
