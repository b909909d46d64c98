// Measures this machine's fp32 FMA throughput: T threads, each running
// independent chains of FMAs with the widest vectors the CPU has (512-bit
// with AVX-512F, else 256-bit with AVX2 and FMA; --isa avx2 forces 256-bit,
// the peak of code that runs Highway's AVX2 target) for about --seconds;
// best of --trials.  16 chains (of 16 zmm or 12 of 16 ymm registers) cover
// 2 FMA pipes x 4-cycle latency with room to spare, so the loop is
// throughput-bound.  Each ISA's loop is compiled for it alone (a target
// attribute), so the binary runs on any x86-64 CPU with AVX2.
//
//   fma_peak --threads T [--seconds 0.2] [--trials 3] [--isa avx512|avx2]
// Last stdout line:
//   peak: threads=T gflops=X per_core=Y seconds=S isa=avx512|avx2
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
constexpr long kInner = 4096; // iterations between clock reads

// Runs FMAs until `seconds` have passed; returns FLOPs done and the time.
__attribute__((noinline, target("avx512f"))) void
burn512(double seconds, double *flops, double *elapsed, float *sink) {
  constexpr int kChains = 16;
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

// The same with 256-bit FMAs: 12 chains, of the 16 ymm registers.
__attribute__((noinline, target("avx2,fma"))) void
burn256(double seconds, double *flops, double *elapsed, float *sink) {
  constexpr int kChains = 12;
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm256_set1_ps(1.0f + c * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  long iterations = 0;
  auto start = Clock::now();
  double t = 0;
  do {
    for (long i = 0; i < kInner; ++i) {
#pragma clang loop unroll(full)
      for (int c = 0; c < kChains; ++c)
        acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
    iterations += kInner;
    t = std::chrono::duration<double>(Clock::now() - start).count();
  } while (t < seconds);
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c)
    s = _mm256_add_ps(s, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  float total = 0;
  for (float v : lanes)
    total += v;
  *sink = total;
  *flops = double(iterations) * kChains * 8 * 2;
  *elapsed = t;
}

} // namespace

int main(int argc, char **argv) {
  int threads = 1, trials = 3;
  double seconds = 0.2;
  const char *isa = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--trials") && i + 1 < argc)
      trials = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--isa") && i + 1 < argc)
      isa = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s --threads T [--seconds S] [--trials N] "
                   "[--isa avx512|avx2]\n",
                   argv[0]);
      return 1;
    }
  }
  if (threads < 1 || trials < 1 || !(seconds > 0)) {
    std::fprintf(stderr, "%s: bad arguments\n", argv[0]);
    return 1;
  }
  __builtin_cpu_init();
  const bool has512 = __builtin_cpu_supports("avx512f");
  const bool has256 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!isa)
    isa = has512 ? "avx512" : "avx2";
  if (std::strcmp(isa, "avx512") && std::strcmp(isa, "avx2")) {
    std::fprintf(stderr, "%s: --isa must be avx512 or avx2, got '%s'\n",
                 argv[0], isa);
    return 1;
  }
  const bool wide = !std::strcmp(isa, "avx512");
  if (wide ? !has512 : !has256) {
    std::fprintf(stderr, "%s: this CPU has no %s\n", argv[0],
                 wide ? "AVX-512F" : "AVX2 with FMA");
    return 1;
  }
  auto burn = wide ? burn512 : burn256;
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
  std::printf(
      "peak: threads=%d gflops=%.1f per_core=%.1f seconds=%.2f isa=%s\n",
      threads, best, best / threads, seconds, isa);
  return 0;
}
