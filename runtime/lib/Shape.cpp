//===- Shape.cpp - shapes and element counts, checked ---------------------===//

#include "tfm/runtime/Shape.h"

#include <cinttypes>
#include <cstdio>

namespace tfm::rt {

ShapeText::ShapeText(const int64_t *shape, size_t rank) {
  size_t used = 0;
  auto append = [&](const char *format, int64_t value) {
    if (used >= sizeof(text))
      return;
    int n = std::snprintf(text + used, sizeof(text) - used, format, value);
    if (n > 0)
      used += size_t(n);
  };
  append("[", 0);
  for (size_t i = 0; i < rank; ++i)
    append(i == 0 ? "%" PRId64 : ", %" PRId64, shape[i]);
  append("]", 0);
  // A shape too long for the buffer ends in "..." rather than mid-number
  // without a hint.
  if (used >= sizeof(text))
    std::snprintf(text + sizeof(text) - 5, 5, "...]");
}

bool checkedElementCount(const int64_t *shape, size_t rank, size_t elementSize,
                         uint64_t limit, uint64_t &count) {
  uint64_t elements = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return false;
    if (__builtin_mul_overflow(elements, uint64_t(shape[i]), &elements))
      return false;
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(elements, uint64_t(elementSize), &bytes) ||
      bytes > limit)
    return false;
  count = elements;
  return true;
}

} // namespace tfm::rt
