//===- KeySpanTest.cpp - the keys a block of query rows sees --------------===//
//
// KeySpan::maxKeysOfBlock (what tfm-select-attention-tiling sizes key
// blocks by) against the union of each row's span, counted key by key for
// every block start and offset.
//
//===----------------------------------------------------------------------===//

#include "tfm/IR/KeySpan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

using namespace mlir::tfm;

namespace {

int64_t at(const KeyBound &bound, int64_t row, int64_t offset) {
  return bound.constant + bound.perRow * row + bound.perOffset * offset;
}

/// The most keys of `keys` any block of `rows` rows sees, by counting.
int64_t countedMaxKeys(const KeySpan &span, int64_t rows, int64_t keys) {
  int64_t most = 0;
  for (int64_t offset = 0; offset <= keys; ++offset)
    for (int64_t first = 0; first + rows <= keys + rows; ++first) {
      int64_t seen = 0;
      for (int64_t key = 0; key < keys; ++key) {
        bool any = false;
        for (int64_t row = first; row < first + rows && !any; ++row) {
          int64_t begin = std::max<int64_t>(0, at(span.begin, row, offset));
          int64_t end =
              span.end ? std::min(keys, at(*span.end, row, offset)) : keys;
          any = begin <= key && key < end;
        }
        seen += any;
      }
      most = std::max(most, seen);
    }
  return most;
}

TEST(KeySpanTest, FullAndCausalSpansSeeEveryKey) {
  KeySpan full;
  KeySpan causal;
  causal.end = KeyBound{1, 1, 1};
  for (int64_t rows : {1, 2, 8})
    for (int64_t keys : {1, 5, 40}) {
      EXPECT_EQ(full.maxKeysOfBlock(rows, keys), keys);
      EXPECT_EQ(causal.maxKeysOfBlock(rows, keys), keys);
      EXPECT_EQ(countedMaxKeys(full, rows, keys), keys);
      EXPECT_EQ(countedMaxKeys(causal, rows, keys), keys);
    }
}

TEST(KeySpanTest, AWindowSeesItsWidthAndTheBlockRows) {
  // Keys offset + i - 3 ..= offset + i: a window of 4 keys ending at the
  // query's position.
  KeySpan window;
  window.begin = KeyBound{-3, 1, 1};
  window.end = KeyBound{1, 1, 1};
  for (int64_t rows : {1, 2, 8})
    for (int64_t keys : {1, 3, 6, 40}) {
      SCOPED_TRACE(testing::Message() << rows << " rows, " << keys << " keys");
      EXPECT_EQ(window.maxKeysOfBlock(rows, keys),
                countedMaxKeys(window, rows, keys));
    }
  EXPECT_EQ(window.maxKeysOfBlock(8, 40), 11);
}

TEST(KeySpanTest, ASpanGrowingWithTheRowSeesEveryKey) {
  // Keys 0 ..= 2i: wider for every row.
  KeySpan growing;
  growing.end = KeyBound{1, 2, 0};
  for (int64_t rows : {1, 4})
    for (int64_t keys : {3, 17}) {
      EXPECT_EQ(growing.maxKeysOfBlock(rows, keys), keys);
      EXPECT_EQ(countedMaxKeys(growing, rows, keys), keys);
    }
}

/// Longformer's rule, key by key (contract section 7): |i - j| <= W, or a
/// global position (either side), and with causal j <= i, all in
/// positions among the keys.
bool attends(int64_t window, int64_t global, bool causal, int64_t position,
             int64_t key) {
  if (causal && key > position)
    return false;
  return std::abs(position - key) <= window || position < global ||
         key < global;
}

TEST(KeySpanTest, RowKeysOfWindowsAndGlobalTokensAreTheRule) {
  for (int64_t window : {0, 1, 3, 9})
    for (int64_t global : {0, 1, 4})
      for (bool causal : {false, true}) {
        // As MaskAttr::getKeySpan gives them.
        KeySpan span;
        span.begin = KeyBound{-window, 1, 1};
        span.end = KeyBound{causal ? 1 : window + 1, 1, 1};
        span.globalKeys = global;
        if (causal && global)
          span.globalEnd = KeyBound{1, 1, 1};
        for (int64_t keys : {1, 5, 23})
          for (int64_t offset = 0; offset < keys; ++offset)
            for (int64_t row = 0; offset + row < keys; ++row) {
              SCOPED_TRACE(testing::Message()
                           << "window " << window << " global " << global
                           << (causal ? " causal" : "") << ", " << keys
                           << " keys, row " << row << " at offset " << offset);
              KeySpan::RowKeys r = span.rowKeys(row, offset, keys);
              EXPECT_LE(r.prefix, r.first);
              int64_t count = 0;
              for (int64_t key = 0; key < keys; ++key) {
                bool seen = key < r.prefix || (r.first <= key && key < r.end);
                EXPECT_EQ(seen,
                          attends(window, global, causal, offset + row, key))
                    << "key " << key;
                count += seen;
              }
              EXPECT_EQ(r.count(), count);
            }
      }
}

} // namespace
