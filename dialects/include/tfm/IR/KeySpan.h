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

/// constant + perRow * i + perOffset * offset + perBlock * ((offset + i) /
/// block), for query row i (at position offset + i, never negative): the
/// last term moves a bound by whole blocks of `block` positions (BigBird).
struct KeyBound {
  int64_t constant = 0;
  int64_t perRow = 0;
  int64_t perOffset = 0;
  int64_t perBlock = 0;
  int64_t block = 1;

  int64_t at(int64_t row, int64_t offset) const {
    int64_t v = constant + perRow * row + perOffset * offset;
    return perBlock ? v + perBlock * ((offset + row) / block) : v;
  }
};

/// The keys of query row i (at position offset + i among the keys):
/// [begin, end), clamped to [0, keys) (no end: up to the last key); with
/// global tokens (globalKeys G > 0), also the keys [0, G), and a row at a
/// position below G sees the keys [0, globalEnd) instead (no globalEnd: every
/// key). A key reached both ways counts once.
struct KeySpan {
  KeyBound begin;
  std::optional<KeyBound> end;
  int64_t globalKeys = 0;
  std::optional<KeyBound> globalEnd;

  /// Keys [0, prefix) and [first, end) of one row, first >= prefix, for
  /// the row at position `offset + row` among `keys` keys.
  struct RowKeys {
    int64_t prefix = 0, first = 0, end = 0;
    int64_t count() const { return prefix + (end > first ? end - first : 0); }
  };
  RowKeys rowKeys(int64_t row, int64_t offset, int64_t keys) const {
    auto at = [&](const KeyBound &b) { return b.at(row, offset); };
    auto clamp = [&](int64_t x) { return x < 0 ? 0 : x > keys ? keys : x; };
    RowKeys r;
    if (offset + row < globalKeys) {
      r.end = globalEnd ? clamp(at(*globalEnd)) : keys;
      return r;
    }
    r.end = end ? clamp(at(*end)) : keys;
    r.prefix = globalKeys < r.end ? globalKeys : r.end;
    int64_t first = clamp(at(begin));
    r.first = first > r.prefix ? first : r.prefix;
    return r;
  }

  /// Whether the first key of a row can be above 0.
  bool hasBegin() const {
    return begin.constant || begin.perRow || begin.perOffset || begin.perBlock;
  }

  /// The most keys a block of `rows` consecutive query rows sees (the
  /// union of their spans [begin, end)), of at most `maxKeys` keys,
  /// wherever the block starts and whatever the offset: fewer than maxKeys
  /// only where the span's width does not grow with the row or the offset
  /// (a window). Global keys and rows are not counted: the backends visit
  /// them in blocks of their own.
  int64_t maxKeysOfBlock(int64_t rows, int64_t maxKeys) const {
    if (!end || end->perRow != begin.perRow ||
        end->perOffset != begin.perOffset || end->perBlock != begin.perBlock ||
        end->block != begin.block || end->perBlock < 0 || end->block < 1 ||
        rows < 1 || maxKeys < 0)
      return maxKeys;
    // end(i + rows - 1) - begin(i), the same for every i and offset (with
    // whole blocks: at most ceil((rows - 1) / block) more of them).
    int64_t width = end->constant - begin.constant + end->perRow * (rows - 1) +
                    end->perBlock * ((rows - 1 + end->block - 1) / end->block);
    return width < 0 ? 0 : width < maxKeys ? width : maxKeys;
  }

  /// Whether every row sees every key.
  bool isFull() const { return !end && !hasBegin(); }
};

} // namespace mlir::tfm

#endif // TFM_IR_KEYSPAN_H
