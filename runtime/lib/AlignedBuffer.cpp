//===- AlignedBuffer.cpp - owned 64-byte aligned memory -------------------===//

#include "tfm/runtime/AlignedBuffer.h"

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <utility>

namespace tfm::rt {

namespace {

/// From this size on, buffers are anonymous mappings: the kernel hands out
/// zero pages as they are first touched (no memset through gigabytes of
/// weights before they are written anyway), and huge pages where allowed.
constexpr size_t kMappedBytes = size_t(2) << 20;

} // namespace

void AlignedBuffer::release() {
  if (mapped)
    munmap(ptr, mapped);
  else
    std::free(ptr);
  ptr = nullptr;
  bytes = 0;
  mapped = 0;
}

AlignedBuffer::~AlignedBuffer() { release(); }

AlignedBuffer::AlignedBuffer(AlignedBuffer &&other) noexcept
    : ptr(std::exchange(other.ptr, nullptr)),
      bytes(std::exchange(other.bytes, 0)),
      mapped(std::exchange(other.mapped, 0)) {}

AlignedBuffer &AlignedBuffer::operator=(AlignedBuffer &&other) noexcept {
  if (this != &other) {
    release();
    ptr = std::exchange(other.ptr, nullptr);
    bytes = std::exchange(other.bytes, 0);
    mapped = std::exchange(other.mapped, 0);
  }
  return *this;
}

bool AlignedBuffer::allocate(size_t count) {
  release();
  if (count == 0)
    return true;
  // aligned_alloc wants a multiple of the alignment.
  size_t rounded = (count + 63) & ~size_t(63);
  if (rounded < count)
    return false;
  if (rounded >= kMappedBytes) {
    void *p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return false;
    madvise(p, rounded, MADV_HUGEPAGE); // a hint: fine if refused
    ptr = p;
    mapped = rounded;
    bytes = count;
    return true;
  }
  ptr = std::aligned_alloc(64, rounded);
  if (!ptr)
    return false;
  std::memset(ptr, 0, rounded);
  bytes = count;
  return true;
}

} // namespace tfm::rt
