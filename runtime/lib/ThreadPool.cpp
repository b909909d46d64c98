//===- ThreadPool.cpp - fork-join parallel loops --------------------------===//
//
// A forward pass runs hundreds of parallel loops of a few microseconds each,
// so waking the workers must be cheap: workers spin on a generation counter
// for a while before sleeping on a condition variable, and the caller spins
// for the stragglers. Each thread owns one fixed contiguous chunk of the
// indices, which keeps a thread on the rows it touched in the last loop.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/ThreadPool.h"

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
  int64_t count = 0;
  void (*body)(void *, int64_t) = nullptr;
  void *ctx = nullptr;

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

  void runChunk(int index) {
    // The first count % threads chunks get one index more.
    int64_t share = count / threads, extra = count % threads;
    int64_t begin = index * share + (index < extra ? index : extra);
    int64_t end = begin + share + (index < extra ? 1 : 0);
    insideLoop = true;
    for (int64_t i = begin; i < end; ++i)
      body(ctx, i);
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
      runChunk(index);
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
  state->count = n;
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
  state->runChunk(0);
  spinUntil([&] { return state->pending.load(std::memory_order_acquire) == 0; },
            /*mayGiveUp=*/false);
}

} // namespace tfm::rt
