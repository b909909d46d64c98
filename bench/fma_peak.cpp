// Measures this machine's fp32 FMA throughput: T threads, each running 16
// independent chains of 512-bit FMAs (AVX-512F, 16 lanes, 2 FLOPs per lane)
// for about --seconds; best of --trials.  16 chains cover 2 FMA pipes x 4-cycle
// latency with room to spare, so the loop is throughput-bound.
//
//   fma_peak --threads T [--seconds 0.2] [--trials 3]
// Last stdout line:
//   peak: threads=T gflops=X per_core=Y seconds=S
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kChains = 16;
constexpr long kInner = 4096; // iterations between clock reads

// Runs FMAs until `seconds` have passed; returns FLOPs done and the time.
__attribute__((noinline)) void burn(double seconds, double *flops,
                                    double *elapsed, float *sink) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm512_set1_ps(1.0f + c * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  long iterations = 0;
  auto start = Clock::now();
  double t = 0;
  do {
    for (long i = 0; i < kInner; ++i) {
#pragma clang loop unroll(full)
      for (int c = 0; c < kChains; ++c)
        acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
    iterations += kInner;
    t = std::chrono::duration<double>(Clock::now() - start).count();
  } while (t < seconds);
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c)
    s = _mm512_add_ps(s, acc[c]);
  *sink = _mm512_reduce_add_ps(s);
  *flops = double(iterations) * kChains * 16 * 2;
  *elapsed = t;
}

} // namespace

int main(int argc, char **argv) {
  int threads = 1, trials = 3;
  double seconds = 0.2;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--trials") && i + 1 < argc)
      trials = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s --threads T [--seconds S] [--trials N]\n",
                   argv[0]);
      return 1;
    }
  }
  if (threads < 1 || trials < 1 || !(seconds > 0)) {
    std::fprintf(stderr, "%s: bad arguments\n", argv[0]);
    return 1;
  }
  double best = 0;
  float sink = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<double> flops(threads), elapsed(threads);
    std::vector<float> sinks(threads);
    std::atomic<int> ready{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < threads) {
        }
        burn(seconds, &flops[t], &elapsed[t], &sinks[t]);
      });
    for (auto &th : pool)
      th.join();
    double total = 0;
    for (int t = 0; t < threads; ++t) {
      total += flops[t] / elapsed[t];
      sink += sinks[t];
    }
    best = std::max(best, total * 1e-9);
    std::printf("trial %d: %.1f GFLOP/s\n", trial, total * 1e-9);
  }
  if (sink == 12345.0f)
    std::printf(" "); // keeps the sums alive
  std::printf("peak: threads=%d gflops=%.1f per_core=%.1f seconds=%.2f\n",
              threads, best, best / threads, seconds);
  return 0;
}
