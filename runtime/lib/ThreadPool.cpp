//===- ThreadPool.cpp - fork-join parallel loops --------------------------===//
//
// A forward pass runs hundreds of parallel loops of a few microseconds each,
// so waking the workers must be cheap: workers spin on a generation counter
// for a while before sleeping on a condition variable, and the caller spins
// for the stragglers. Each thread owns one contiguous chunk of the indices,
// which keeps a thread on the rows it touched in the last loop; a thread done
// with its own chunk takes the indices still left in the others', so a
// thread the OS holds back (a shared machine, a slow wake-up) delays the
// loop by one claim of indices, not by its whole chunk, and claims shrink as
// a chunk runs out, so the threads of a loop finish within about one index
// of each other. Which thread runs an index never changes what the index
// computes.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tfm::rt {

namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Waiting spins on `pause` first (the next loop of a forward pass usually
// starts within microseconds), then yields the core (so that with more
// threads than cores the thread being waited for gets to run), and workers
// finally sleep (so an idle pool costs nothing between forward passes).
constexpr int kPauseSpins = 2000;
constexpr int kYieldSpins = 2000;

// A thread claims a sixteenth of the indices left in a chunk at a time
// (at least one): the atomic increment that claims them waits for the
// thread's pending stores, and per index that cost ~3% on BERT-base layers
// at 2 threads, so the first claims are large; the last ones are single
// indices, so a thread that runs out of work waits for at most one index
// of another's (with fixed sixteenths of the chunk, up to ~90 us per GEMM
// of a BERT-base layer at seq 128: ~3% of a pass at 2 threads).
constexpr int64_t kClaimShare = 16;

/// Waits until `done()` is true, or returns false once the spinning budget
/// is spent when `mayGiveUp`.
template <typename Done> bool spinUntil(const Done &done, bool mayGiveUp) {
  for (int64_t spin = 0;; ++spin) {
    if (done())
      return true;
    if (spin < kPauseSpins)
      cpuRelax();
    else if (!mayGiveUp || spin < kPauseSpins + kYieldSpins)
      sched_yield();
    else
      return false;
  }
}

// A loop body that itself calls run() executes its loop inline: the
// workers are busy with the outer loop, and waiting for them would
// deadlock.
thread_local bool insideLoop = false;

} // namespace

struct ThreadPool::State {
  int threads = 1;
  std::vector<pthread_t> workers;

  // The current loop; written by the caller before it bumps `generation`.
  void (*body)(void *, int64_t) = nullptr;
  void *ctx = nullptr;

  /// Thread i's chunk of the current loop: indices [next, end) not yet
  /// taken. Any thread claims the next ones by incrementing `next`; each
  /// chunk on its own cache line, so the owner's increments do not contend
  /// with others'.
  struct alignas(64) Chunk {
    std::atomic<int64_t> next{0};
    int64_t end = 0;

    /// Claims [first, first + count) of the indices left, a kClaimShare-th
    /// of them as last seen (another thread may claim in between: the
    /// increment still hands each index to exactly one claim); false once
    /// none is left.
    bool claim(int64_t &first, int64_t &count) {
      int64_t seen = next.load(std::memory_order_relaxed);
      if (seen >= end)
        return false;
      count = std::max<int64_t>(1, (end - seen) / kClaimShare);
      first = next.fetch_add(count, std::memory_order_relaxed);
      if (first >= end)
        return false;
      count = std::min(count, end - first);
      return true;
    }
  };
  std::vector<Chunk> chunks;

  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  bool stopping = false; // guarded by `mutex`
  std::mutex mutex;
  std::condition_variable wake;

  struct WorkerArgs {
    State *state;
    int index;
  };
  std::vector<WorkerArgs> args;

  /// Splits [0, count) into one chunk per thread; the first count % threads
  /// chunks get one index more.
  void divide(int64_t count) {
    int64_t share = count / threads, extra = count % threads, begin = 0;
    for (int i = 0; i < threads; ++i) {
      int64_t end = begin + share + (i < extra ? 1 : 0);
      chunks[size_t(i)].next.store(begin, std::memory_order_relaxed);
      chunks[size_t(i)].end = end;
      begin = end;
    }
  }

  /// Runs thread `index`'s own chunk, then what is left of the others'.
  void runChunks(int index) {
    insideLoop = true;
    for (int k = 0; k < threads; ++k) {
      Chunk &chunk = chunks[size_t((index + k) % threads)];
      for (int64_t first, count; chunk.claim(first, count);)
        for (int64_t i = first; i < first + count; ++i)
          body(ctx, i);
    }
    insideLoop = false;
  }

  void workerLoop(int index) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t current = seen;
      bool started = spinUntil(
          [&] {
            current = generation.load(std::memory_order_acquire);
            return current != seen;
          },
          /*mayGiveUp=*/true);
      if (!started) {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] {
          return stopping || generation.load(std::memory_order_acquire) != seen;
        });
        if (stopping)
          return;
        current = generation.load(std::memory_order_acquire);
      }
      seen = current;
      runChunks(index);
      pending.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  static void *workerMain(void *raw) {
    auto *a = static_cast<WorkerArgs *>(raw);
    a->state->workerLoop(a->index);
    return nullptr;
  }
};

ThreadPool::ThreadPool(int threads) : state(new State) {
  if (threads < 1)
    threads = 1;
  state->args.reserve(size_t(threads));
  state->workers.reserve(size_t(threads));
  for (int i = 1; i < threads; ++i) {
    state->args.push_back({state, i});
    pthread_t thread;
    // A system that refuses more threads gets a smaller pool: results do
    // not depend on the number of threads, only the speed does.
    if (pthread_create(&thread, nullptr, &State::workerMain,
                       &state->args.back()) != 0)
      break;
    state->workers.push_back(thread);
  }
  state->threads = int(state->workers.size()) + 1;
  state->chunks = std::vector<State::Chunk>(size_t(state->threads));
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->stopping = true;
  }
  state->wake.notify_all();
  for (pthread_t thread : state->workers)
    pthread_join(thread, nullptr);
  delete state;
}

int ThreadPool::size() const { return state->threads; }

void ThreadPool::run(int64_t n, void (*body)(void *ctx, int64_t i), void *ctx) {
  if (n <= 0)
    return;
  if (state->threads == 1 || n == 1 || insideLoop) {
    for (int64_t i = 0; i < n; ++i)
      body(ctx, i);
    return;
  }
  state->divide(n);
  state->body = body;
  state->ctx = ctx;
  state->pending.store(state->threads - 1, std::memory_order_relaxed);
  {
    // Bumping under the mutex closes the gap between a worker checking the
    // generation and going to sleep.
    std::lock_guard<std::mutex> lock(state->mutex);
    state->generation.fetch_add(1, std::memory_order_release);
  }
  state->wake.notify_all();
  state->runChunks(0);
  spinUntil([&] { return state->pending.load(std::memory_order_acquire) == 0; },
            /*mayGiveUp=*/false);
}

} // namespace tfm::rt
