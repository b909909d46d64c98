//===- AlignedBufferTest.cpp - owned aligned memory -----------------------===//
//
// Small buffers come from the heap, large ones (2 MiB and up) from an
// anonymous mapping; either way they start zeroed and 64-byte aligned, and
// moves hand over ownership exactly once.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/AlignedBuffer.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <utility>

using tfm::rt::AlignedBuffer;

namespace {

bool allZero(const AlignedBuffer &b) {
  const auto *p = static_cast<const unsigned char *>(b.data());
  for (size_t i = 0; i < b.size(); i += 4093) // a byte per page and more
    if (p[i] != 0)
      return false;
  return b.size() == 0 || p[b.size() - 1] == 0;
}

TEST(AlignedBuffer, SmallAndLargeStartZeroedAndAligned) {
  for (size_t bytes :
       {size_t(1), size_t(100), size_t(4096), (size_t(2) << 20) - 1,
        size_t(2) << 20, (size_t(8) << 20) + 12}) {
    AlignedBuffer b;
    ASSERT_TRUE(b.allocate(bytes)) << bytes;
    EXPECT_EQ(b.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u) << bytes;
    EXPECT_TRUE(allZero(b)) << bytes;
    // Writable to the last byte.
    static_cast<unsigned char *>(b.data())[bytes - 1] = 7;
  }
}

TEST(AlignedBuffer, ReallocateZeroesAgain) {
  AlignedBuffer b;
  ASSERT_TRUE(b.allocate(size_t(4) << 20));
  static_cast<unsigned char *>(b.data())[123] = 1;
  ASSERT_TRUE(b.allocate(size_t(4) << 20));
  EXPECT_TRUE(allZero(b));
  ASSERT_TRUE(b.allocate(0));
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0u);
}

TEST(AlignedBuffer, MovesHandOverOwnership) {
  for (size_t bytes : {size_t(256), size_t(3) << 20}) {
    AlignedBuffer a;
    ASSERT_TRUE(a.allocate(bytes));
    void *p = a.data();
    AlignedBuffer b(std::move(a));
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(a.data(), nullptr);
    AlignedBuffer c;
    ASSERT_TRUE(c.allocate(64));
    c = std::move(b); // frees c's old memory
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(c.size(), bytes);
    EXPECT_EQ(b.data(), nullptr);
  }
}

} // namespace
