//===- KeySpan.h - the keys a query row attends to --------------*- C++ -*-===//
//
// What #tfm.mask answers for its consumers (both backends, the FLOP count,
// the attention-tiling pass): the keys of query row `i`, as bounds affine
// in `i` and the queries' offset among the keys.
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

  /// The most keys a block of `rows` consecutive query rows sees (the
  /// union of their spans), of at most `maxKeys` keys, wherever the block
  /// starts and whatever the offset: fewer than maxKeys only where the
  /// span's width does not grow with the row or the offset (a window).
  int64_t maxKeysOfBlock(int64_t rows, int64_t maxKeys) const {
    if (!end || end->perRow != begin.perRow ||
        end->perOffset != begin.perOffset || rows < 1 || maxKeys < 0)
      return maxKeys;
    // end(i + rows - 1) - begin(i), the same for every i and offset.
    int64_t width = end->constant - begin.constant + end->perRow * (rows - 1);
    return width < 0 ? 0 : width < maxKeys ? width : maxKeys;
  }

  /// Whether every row sees every key.
  bool isFull() const {
    return !end && begin.constant == 0 && begin.perRow == 0 &&
           begin.perOffset == 0;
  }
};

} // namespace mlir::tfm

#endif // TFM_IR_KEYSPAN_H
