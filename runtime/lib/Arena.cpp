//===- Arena.cpp - activation memory of a forward pass --------------------===//

#include "tfm/runtime/Arena.h"

#include <cstdio>
#include <cstdlib>

namespace tfm::rt {

Arena::Arena(size_t bytes) : base(nullptr), size(0) {
  size_t rounded = (bytes + 63) & ~size_t(63);
  if (rounded == 0 || rounded < bytes)
    return;
  base = static_cast<unsigned char *>(std::aligned_alloc(64, rounded));
  // capacity() stays 0 when out of memory; the owner checks it and reports
  // a user-facing error (see ModelInstance::init).
  if (base)
    size = rounded;
}

Arena::~Arena() { std::free(base); }

float *Arena::take(size_t count) {
  // Each buffer starts on a cache line so kernels may use aligned loads and
  // two buffers never share a line between threads.
  size_t bytes = count * sizeof(float);
  size_t rounded = (bytes + 63) & ~size_t(63);
  if (count > (SIZE_MAX >> 3) || rounded > size - top) {
    std::fprintf(stderr,
                 "tfm: internal error: the activation arena overflowed: %zu "
                 "bytes requested with %zu of %zu in use (the compiler "
                 "sized the arena too small)\n",
                 bytes, top, size);
    std::abort();
  }
  float *result = reinterpret_cast<float *>(base + top);
  top += rounded;
  if (top > peak)
    peak = top;
  return result;
}

} // namespace tfm::rt
