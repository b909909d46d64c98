//===- KeySpan.h - the keys a query row attends to --------------*- C++ -*-===//
//
// What #tfm.mask answers for its consumers (both backends, the FLOP
// count): the keys of query row `i`, as bounds
// affine in `i` and the queries' offset among the keys.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_KEYSPAN_H
#define TFM_IR_KEYSPAN_H

#include <cstdint>
#include <optional>

namespace mlir::tfm {

/// constant + perRow * i + perOffset * offset, for query row i.
struct KeyBound {
  int64_t constant = 0;
  int64_t perRow = 0;
  int64_t perOffset = 0;
};

/// Keys [begin, end) of query row i, clamped to [0, keys); no end: up to
/// the last key.
struct KeySpan {
  KeyBound begin;
  std::optional<KeyBound> end;

  /// Whether every row sees every key.
  bool isFull() const {
    return !end && begin.constant == 0 && begin.perRow == 0 &&
           begin.perOffset == 0;
  }
};

} // namespace mlir::tfm

#endif // TFM_IR_KEYSPAN_H
