//===- ArenaTest.cpp - the activation arena -------------------------------===//

#include "tfm/runtime/Arena.h"

#include "gtest/gtest.h"

#include <cstdint>

using namespace tfm::rt;

namespace {

bool aligned(const void *p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(Arena, BuffersAreCacheLineAlignedAndDisjoint) {
  Arena arena(1024);
  EXPECT_GE(arena.capacity(), 1024u);
  float *a = arena.take(1);
  float *b = arena.take(17);
  float *c = arena.take(16);
  EXPECT_TRUE(aligned(a));
  EXPECT_TRUE(aligned(b));
  EXPECT_TRUE(aligned(c));
  EXPECT_EQ(b - a, 16);
  EXPECT_EQ(c - b, 32);
}

TEST(Arena, ReleaseReturnsToMarkAndHighWaterRemembers) {
  Arena arena(4096);
  arena.take(16);
  size_t mark = arena.mark();
  float *first = arena.take(100);
  arena.take(100);
  size_t peak = arena.highWater();
  arena.release(mark);
  EXPECT_EQ(arena.mark(), mark);
  EXPECT_EQ(arena.take(100), first);
  EXPECT_EQ(arena.highWater(), peak);
  EXPECT_EQ(peak, 64u + 448u + 448u);
}

TEST(Arena, ExactFitSucceeds) {
  Arena arena(256);
  EXPECT_NE(arena.take(64), nullptr);
}

TEST(ArenaDeathTest, OverflowIsAnInternalError) {
  Arena arena(256);
  arena.take(32);
  EXPECT_DEATH(arena.take(64), "internal error: the activation arena "
                               "overflowed");
  EXPECT_DEATH(arena.take(SIZE_MAX / 2), "arena overflowed");
}

} // namespace
