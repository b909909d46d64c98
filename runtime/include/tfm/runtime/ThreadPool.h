//===- ThreadPool.h - fork-join parallel loops ------------------*- C++ -*-===//

#ifndef TFM_RUNTIME_THREADPOOL_H
#define TFM_RUNTIME_THREADPOOL_H

#include <cstdint>

namespace tfm::rt {

/// A fixed set of worker threads running parallel loops. Each index is
/// handled by exactly one call of the body, so results never depend on the
/// number of threads as long as the body's work for an index is independent
/// of other indices. Calls do not allocate.
class ThreadPool {
public:
  /// `threads` >= 1 including the caller.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const;

  /// Calls body(ctx, i) for every i in [0, n), spread over the threads in
  /// contiguous chunks, one each; a thread done with its own chunk takes
  /// the indices left in the others'. Returns when all are done.
  void run(int64_t n, void (*body)(void *ctx, int64_t i), void *ctx);

  template <typename F> void parallelFor(int64_t n, const F &f) {
    run(
        n, [](void *ctx, int64_t i) { (*static_cast<const F *>(ctx))(i); },
        const_cast<F *>(&f));
  }

private:
  struct State;
  State *state;
};

} // namespace tfm::rt

#endif // TFM_RUNTIME_THREADPOOL_H
