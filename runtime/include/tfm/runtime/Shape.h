//===- Shape.h - shapes and element counts, checked -------------*- C++ -*-===//

#ifndef TFM_RUNTIME_SHAPE_H
#define TFM_RUNTIME_SHAPE_H

#include <cstddef>
#include <cstdint>

namespace tfm::rt {

/// A shape printed as "[2, 3]" into a fixed buffer, so error paths that must
/// not allocate (a forward pass rejecting its input) can still name shapes.
class ShapeText {
public:
  ShapeText(const int64_t *shape, size_t rank);
  const char *c_str() const { return text; }

private:
  char text[192];
};

/// The product of `shape`, or false when a dimension is negative or the
/// product of the dimensions times `elementSize` does not fit in `limit`
/// bytes (so callers never compute an overflowed size).
bool checkedElementCount(const int64_t *shape, size_t rank, size_t elementSize,
                         uint64_t limit, uint64_t &count);

} // namespace tfm::rt

#endif // TFM_RUNTIME_SHAPE_H
