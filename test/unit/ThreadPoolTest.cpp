//===- ThreadPoolTest.cpp - fork-join loops -------------------------------===//

#include "tfm/runtime/ThreadPool.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
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

/// Spins until `done()` or 20 s pass; false on the timeout (a test that
/// would otherwise hang fails instead).
template <typename Done> bool waitFor(const Done &done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done())
    if (std::chrono::steady_clock::now() > deadline)
      return false;
  return true;
}

TEST(ThreadPool, EachThreadStartsOnItsOwnChunk) {
  ThreadPool pool(4);
  std::vector<std::thread::id> owner(8);
  std::atomic<int> arrived{0};
  std::atomic<bool> timedOut{false};
  pool.parallelFor(8, [&](int64_t i) {
    owner[size_t(i)] = std::this_thread::get_id();
    // The chunks' first indices meet: until all four threads are in one,
    // no thread finishes its first index or takes another's.
    if (i % 2 == 0) {
      arrived++;
      if (!waitFor([&] { return arrived.load() == 4; }))
        timedOut = true;
    }
  });
  ASSERT_FALSE(timedOut);
  // The chunks are [0, 2), [2, 4), ...; the caller takes the first.
  EXPECT_EQ(owner[0], std::this_thread::get_id());
  for (int a = 0; a < 8; a += 2)
    for (int b = a + 2; b < 8; b += 2)
      EXPECT_NE(owner[size_t(a)], owner[size_t(b)]) << a << " " << b;
}

TEST(ThreadPool, AHeldBackThreadDelaysTheLoopByOneBatch) {
  // Index 0, the caller's first, waits for every other index: the other
  // thread must take the rest of the caller's chunk as well as its own.
  // (Chunks of fewer than 32 indices are taken one index at a time.)
  ThreadPool pool(2);
  for (int64_t n : {2, 3, 20, 61}) {
    std::atomic<int64_t> done{0};
    std::atomic<bool> timedOut{false};
    pool.parallelFor(n, [&](int64_t i) {
      if (i == 0 && !waitFor([&] { return done.load() == n - 1; }))
        timedOut = true;
      done++;
    });
    EXPECT_FALSE(timedOut) << "n " << n;
    EXPECT_EQ(done.load(), n);
  }
  // Longer chunks go a sixteenth of what is left at a time: 1000 indices in
  // two chunks of 500, the caller's first claim 31 indices; the other thread
  // runs all but those.
  std::atomic<int64_t> done{0};
  std::atomic<bool> timedOut{false};
  pool.parallelFor(1000, [&](int64_t i) {
    if (i == 0 && !waitFor([&] { return done.load() == 1000 - 31; }))
      timedOut = true;
    done++;
  });
  EXPECT_FALSE(timedOut) << "the caller's first claim was not 31 indices "
                            "(a sixteenth of its chunk of 500)";
  EXPECT_EQ(done.load(), 1000);
}

TEST(ThreadPool, TheLastIndicesOfAChunkAreClaimedOneByOne) {
  // Whichever thread runs index 490 (ten before the end of the caller's
  // chunk of 500) waits there for all the others: claims of a sixteenth of
  // what is left hold no index but 490 when they reach it, so the other
  // thread can run 491..499 as well. (Fixed sixteenths of the chunk, batches
  // of 31, would hold 465..495 together and time out.)
  ThreadPool pool(2);
  for (int64_t waitAt : {490, 499, 999}) {
    std::atomic<int64_t> done{0};
    std::atomic<bool> timedOut{false};
    pool.parallelFor(1000, [&](int64_t i) {
      if (i == waitAt && !waitFor([&] { return done.load() == 1000 - 1; }))
        timedOut = true;
      done++;
    });
    EXPECT_FALSE(timedOut) << "index " << waitAt
                           << " was claimed together with later ones";
    EXPECT_EQ(done.load(), 1000);
  }
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
  // Each inner index runs on the thread of its outer one: inline, not
  // handed to the pool again.
  std::vector<std::thread::id> outerThread(4), innerThread(16);
  pool.parallelFor(4, [&](int64_t outer) {
    outerThread[size_t(outer)] = std::this_thread::get_id();
    pool.parallelFor(4, [&](int64_t inner) {
      innerThread[size_t(outer * 4 + inner)] = std::this_thread::get_id();
      hits[size_t(outer * 4 + inner)]++;
    });
  });
  for (auto &hit : hits)
    EXPECT_EQ(hit.load(), 1);
  for (int64_t i = 0; i < 16; ++i)
    EXPECT_EQ(innerThread[size_t(i)], outerThread[size_t(i / 4)])
        << "inner index " << i % 4 << " of outer index " << i / 4;
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
