//===- ThreadPoolTest.cpp - fork-join loops -------------------------------===//

#include "tfm/runtime/ThreadPool.h"

#include "gtest/gtest.h"

#include <atomic>
#include <thread>
#include <vector>

using namespace tfm::rt;

namespace {

TEST(ThreadPool, EveryIndexExactlyOnce) {
  for (int threads = 1; threads <= 4; ++threads) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(size_t(n) + 1);
      pool.parallelFor(n, [&](int64_t i) { hits[size_t(i)]++; });
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(hits[size_t(i)].load(), 1)
            << "threads " << threads << " n " << n << " i " << i;
      EXPECT_EQ(hits[size_t(n)].load(), 0);
    }
  }
}

TEST(ThreadPool, ChunksAreContiguousAndSpread) {
  ThreadPool pool(4);
  std::vector<std::thread::id> owner(8);
  pool.parallelFor(
      8, [&](int64_t i) { owner[size_t(i)] = std::this_thread::get_id(); });
  // Pairs of neighbours share a thread; the caller takes the first chunk.
  for (int i = 0; i < 8; i += 2)
    EXPECT_EQ(owner[size_t(i)], owner[size_t(i) + 1]);
  EXPECT_EQ(owner[0], std::this_thread::get_id());
  EXPECT_NE(owner[0], owner[2]);
  EXPECT_NE(owner[2], owner[4]);
}

TEST(ThreadPool, OneThreadRunsInlineInOrder) {
  ThreadPool pool(1);
  std::vector<int64_t> order;
  pool.parallelFor(5, [&](int64_t i) { order.push_back(i); });
  EXPECT_EQ(order, std::vector<int64_t>({0, 1, 2, 3, 4}));
}

TEST(ThreadPool, ManyShortLoopsInARow) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 5000; ++round)
    pool.parallelFor(7, [&](int64_t i) { sum += i; });
  EXPECT_EQ(sum.load(), 5000 * 21);
}

TEST(ThreadPool, NestedLoopRunsInline) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(16);
  pool.parallelFor(4, [&](int64_t outer) {
    pool.parallelFor(4,
                     [&](int64_t inner) { hits[size_t(outer * 4 + inner)]++; });
  });
  for (auto &hit : hits)
    EXPECT_EQ(hit.load(), 1);
}

TEST(ThreadPool, SurvivesSleepingWorkers) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  pool.parallelFor(2, [&](int64_t) { count++; });
  // Long enough for the workers to stop spinning and sleep.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pool.parallelFor(2, [&](int64_t) { count++; });
  EXPECT_EQ(count.load(), 4);
}

TEST(ThreadPool, NonPositiveThreadCountMeansOne) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1);
}

} // namespace
