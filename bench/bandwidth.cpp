// Measures this machine's sustained memory read bandwidth: T threads sum
// disjoint slices of one --mib MiB float buffer (default 1 GiB, far larger
// than any cache), --reps times; the best rep counts.  Each thread reads its
// slice as 8 streams at once (8 equal parts, advanced together), the way a
// matrix-vector product reads several weight rows: one sequential stream per
// core gets only about half the bandwidth here (about 13 against 22-25 GB/s
// on this machine's AMD EPYC VM; 2, 4 and 8 streams all reach the latter).
// The buffer is allocated like a model's weights (aligned_alloc, no
// huge-page request) and each thread first touches its own slice.
//
//   bandwidth --threads T [--mib 1024] [--reps 5]
// Last stdout line:
//   bandwidth: threads=T gbytes_s=X bytes=B reps=R sum=S
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
// 64-byte vectors (one AVX-512 register where there is one; the compiler
// splits them elsewhere), one accumulator per stream: 8 independent adds.
typedef float Vec __attribute__((vector_size(64)));
constexpr size_t kLanes = sizeof(Vec) / sizeof(float);
constexpr int kStreams = 8;

/// Sums n floats (a multiple of kLanes * kStreams) as kStreams streams.
__attribute__((noinline)) float sum(const float *data, size_t n) {
  Vec acc[kStreams] = {};
  const Vec *v = reinterpret_cast<const Vec *>(data);
  size_t length = n / (kLanes * kStreams); // vectors per stream
  for (size_t i = 0; i < length; ++i)
#pragma clang loop unroll(full)
    for (int s = 0; s < kStreams; ++s)
      acc[s] += v[s * length + i];
  float total = 0;
  for (int s = 0; s < kStreams; ++s)
    for (size_t l = 0; l < kLanes; ++l)
      total += acc[s][l];
  return total;
}

} // namespace

int main(int argc, char **argv) {
  int threads = 1, reps = 5;
  size_t mib = 1024;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--mib") && i + 1 < argc)
      mib = size_t(std::atol(argv[++i]));
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: bandwidth --threads T [--mib 1024] [--reps 5]\n");
      return 1;
    }
  }
  if (threads < 1 || reps < 1 || mib < 1) {
    std::fprintf(stderr, "bandwidth: bad arguments\n");
    return 1;
  }
  // Whole blocks per thread.
  const size_t block = kLanes * kStreams;
  size_t perThread = (mib << 20) / sizeof(float) / threads / block * block;
  size_t n = perThread * threads;
  float *data = static_cast<float *>(
      std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
  if (!data) {
    std::fprintf(stderr, "bandwidth: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  std::vector<float> sinks(static_cast<size_t>(threads));
  auto parallel = [&](auto body) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
      pool.emplace_back(body, t);
    body(0);
    for (auto &th : pool)
      th.join();
  };
  parallel([&](int t) {
    std::fill(data + t * perThread, data + (t + 1) * perThread, 1.0f);
  });
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto start = Clock::now();
    parallel([&](int t) {
      sinks[size_t(t)] = sum(data + t * perThread, perThread);
    });
    best = std::min(
        best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  double total = 0; // printed, so that the sums are not optimised away
  for (float s : sinks)
    total += s;
  double bytes = double(n) * sizeof(float);
  std::printf(
      "bandwidth: threads=%d gbytes_s=%.2f bytes=%.0f reps=%d sum=%.0f\n",
      threads, bytes / best * 1e-9, bytes, reps, total);
  std::free(data);
  return 0;
}
