// The "best achievable GEMM" reference for bench/: times, with oneDNN's
// matmul primitive (oneDNN 2.6, fp32), the GEMMs of a transformer stack of the
// given shape -- nothing else (no LayerNorm, softmax, activation, residual):
//
//   per layer, M = seq (batch 1):
//     QKV       [S, d]   x [d, 3d]  + bias
//     out proj  [S, d]   x [d, d]   + bias
//     FFN1      [S, d]   x [d, dff] + bias
//     FFN2      [S, dff] x [dff, d] + bias
//   and unless --no-attention, per layer, batched over the H heads (dk = d/H):
//     QK^T      [H, S, dk] x [H, dk, S]
//     PV        [H, S, S]  x [H, S, dk]
//   With --causal the attention GEMMs are split into row blocks of --block
//   query rows; block b multiplies only against keys 0 .. end of block b, so
//   the work done is the lower block triangle (a little more than the S(S+1)/2
//   query-key pairs counted as FLOPs, much less than S^2).
//
// Weights are reordered once, before timing, into the layout oneDNN picks
// (format_tag::any); every layer has its own weights and buffers.
//
//   onednn_bench --layers L --seq S --d D --heads H --dff F [--causal]
//                [--no-attention] [--block B] --threads T --runs N --warmup W
// Last stdout line:
//   onednn: median_ms=.. min_ms=.. linear_ms=.. attention_ms=.. runs=N
//   threads=T
// (linear_ms and attention_ms: the medians of each part's time per pass.)
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" void omp_set_num_threads(int); // libgomp: oneDNN's threading runtime

namespace {

using dnnl::memory;
using Clock = std::chrono::steady_clock;
using dt = memory::data_type;
using tag = memory::format_tag;

struct Options {
  long layers = 1, seq = 128, d = 768, heads = 12, dff = 3072, block = 64;
  bool causal = false, attention = true;
  int threads = 1;
  long runs = 10, warmup = 2;
};

std::vector<float> randomBuffer(size_t n, std::mt19937 &gen) {
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> v(n);
  for (auto &x : v)
    x = u(gen);
  return v;
}

// One primitive with its arguments, bound to buffers that outlive it.
struct Step {
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  bool attention = false;
};

struct Bench {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::vector<std::vector<float>> storage; // every buffer, kept alive
  std::vector<Step> steps;
  std::mt19937 gen{1234};
  std::string linearImpl, attentionImpl;

  float *buffer(size_t n) {
    storage.push_back(randomBuffer(n, gen));
    return storage.back().data();
  }

  // x [M,K] (row-major) times W^T, W as PyTorch stores it ([N,K] row-major),
  // plus bias [N].
  void addLinear(float *x, float *y, long m, long n, long k) {
    memory::desc src({m, k}, dt::f32, tag::ab);
    memory::desc weiUser({k, n}, dt::f32, tag::ba); // [N,K] row-major
    memory::desc weiAny({k, n}, dt::f32, tag::any);
    memory::desc bias({1, n}, dt::f32, tag::ab);
    memory::desc dst({m, n}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weiAny, bias, dst),
                                    eng);
    if (linearImpl.empty())
      linearImpl = pd.impl_info_str();
    memory userW(weiUser, eng, buffer(size_t(n) * k));
    memory w = userW;
    if (pd.weights_desc() != weiUser) { // reorder once, outside the timing
      w = memory(pd.weights_desc(), eng);
      dnnl::reorder(userW, w).execute(strm, userW, w);
      strm.wait();
    }
    Step s{dnnl::matmul(pd), {}, false};
    s.args[DNNL_ARG_SRC] = memory(src, eng, x);
    s.args[DNNL_ARG_WEIGHTS] = w;
    s.args[DNNL_ARG_BIAS] = memory(bias, eng, buffer(size_t(n)));
    s.args[DNNL_ARG_DST] = memory(dst, eng, y);
    steps.push_back(std::move(s));
  }

  // Batched over heads: dst[h] (rows x cols) = a[h] (rows x inner) * b[h]
  // (inner x cols), each operand a strided view.
  void addBatched(long h, long rows, long inner, long cols, float *a,
                  memory::dims aStrides, float *b, memory::dims bStrides,
                  float *c, memory::dims cStrides) {
    memory::desc aMd({h, rows, inner}, dt::f32, aStrides);
    memory::desc bMd({h, inner, cols}, dt::f32, bStrides);
    memory::desc cMd({h, rows, cols}, dt::f32, cStrides);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(aMd, bMd, cMd), eng);
    if (attentionImpl.empty())
      attentionImpl = pd.impl_info_str();
    Step s{dnnl::matmul(pd), {}, true};
    s.args[DNNL_ARG_SRC] = memory(aMd, eng, a);
    s.args[DNNL_ARG_WEIGHTS] = memory(bMd, eng, b);
    s.args[DNNL_ARG_DST] = memory(cMd, eng, c);
    steps.push_back(std::move(s));
  }

  void build(const Options &o) {
    const long S = o.seq, d = o.d, H = o.heads, dk = d / H, F = o.dff;
    for (long l = 0; l < o.layers; ++l) {
      float *x = buffer(size_t(S) * d);
      float *qkv = buffer(size_t(S) * 3 * d);
      float *attnOut = buffer(size_t(S) * d);
      float *proj = buffer(size_t(S) * d);
      float *hidden = buffer(size_t(S) * F);
      float *y = buffer(size_t(S) * d);
      addLinear(x, qkv, S, 3 * d, d);
      if (o.attention) {
        // Q, K, V head-major [H, S, dk]; scores [H, S, S]; O [H, S, dk].
        float *q = buffer(size_t(H) * S * dk), *k = buffer(size_t(H) * S * dk),
              *v = buffer(size_t(H) * S * dk),
              *scores = buffer(size_t(H) * S * S);
        long block = o.causal ? std::max(1L, std::min(o.block, S)) : S;
        for (long r0 = 0; r0 < S; r0 += block) {
          long rows = std::min(block, S - r0);
          long keys = o.causal ? r0 + rows : S;
          // scores[h, r0.., :keys] = Q[h, r0.., :] * K[h, :keys, :]^T
          addBatched(H, rows, dk, keys, q + r0 * dk, {S * dk, dk, 1}, k,
                     {S * dk, 1, dk}, scores + r0 * S, {S * S, S, 1});
          // O[h, r0.., :] = scores[h, r0.., :keys] * V[h, :keys, :]
          addBatched(H, rows, keys, dk, scores + r0 * S, {S * S, S, 1}, v,
                     {S * dk, dk, 1}, attnOut + r0 * dk, {S * dk, dk, 1});
        }
      }
      addLinear(attnOut, proj, S, d, d);
      addLinear(proj, hidden, S, F, d);
      addLinear(hidden, y, S, d, F);
    }
  }

  // One forward pass's GEMMs; returns (linear seconds, attention seconds).
  std::pair<double, double> pass() {
    double lin = 0, att = 0;
    for (auto &s : steps) {
      auto t0 = Clock::now();
      s.prim.execute(strm, s.args);
      strm.wait();
      double t = std::chrono::duration<double>(Clock::now() - t0).count();
      (s.attention ? att : lin) += t;
    }
    return {lin, att};
  }
};

const char *isaName(dnnl::cpu_isa isa) {
  switch (isa) {
  case dnnl::cpu_isa::avx2:
    return "avx2";
  case dnnl::cpu_isa::avx2_vnni:
    return "avx2_vnni";
  case dnnl::cpu_isa::avx512_core:
    return "avx512_core";
  case dnnl::cpu_isa::avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl::cpu_isa::avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl::cpu_isa::avx512_core_amx:
    return "avx512_core_amx";
  default:
    return "other";
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto num = [&](long &out) {
      if (i + 1 >= argc)
        return false;
      out = std::atol(argv[++i]);
      return true;
    };
    long t = 0;
    if (a == "--layers") {
      if (!num(o.layers))
        return false;
    } else if (a == "--seq") {
      if (!num(o.seq))
        return false;
    } else if (a == "--d") {
      if (!num(o.d))
        return false;
    } else if (a == "--heads") {
      if (!num(o.heads))
        return false;
    } else if (a == "--dff") {
      if (!num(o.dff))
        return false;
    } else if (a == "--block") {
      if (!num(o.block))
        return false;
    } else if (a == "--runs") {
      if (!num(o.runs))
        return false;
    } else if (a == "--warmup") {
      if (!num(o.warmup))
        return false;
    } else if (a == "--threads") {
      if (!num(t))
        return false;
      o.threads = int(t);
    } else if (a == "--causal")
      o.causal = true;
    else if (a == "--no-attention")
      o.attention = false;
    else
      return false;
  }
  return o.layers > 0 && o.seq > 0 && o.d > 0 && o.heads > 0 &&
         o.d % o.heads == 0 && o.dff > 0 && o.threads > 0 && o.runs > 0 &&
         o.warmup >= 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(
        stderr,
        "usage: %s --layers L --seq S --d D --heads H --dff F [--causal] "
        "[--no-attention] [--block B] --threads T --runs N --warmup W\n",
        argv[0]);
    return 1;
  }
  omp_set_num_threads(o.threads);
  try {
    Bench b;
    b.build(o);
    for (long i = 0; i < o.warmup; ++i)
      b.pass();
    std::vector<double> total, lin, att;
    for (long i = 0; i < o.runs; ++i) {
      auto t0 = Clock::now();
      auto [l, a] = b.pass();
      total.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      lin.push_back(l);
      att.push_back(a);
    }
    std::printf("onednn-info: isa=%s linear_impl=%s attention_impl=%s "
                "gemms_per_pass=%zu\n",
                isaName(dnnl::get_effective_cpu_isa()), b.linearImpl.c_str(),
                b.attentionImpl.empty() ? "none" : b.attentionImpl.c_str(),
                b.steps.size());
    std::printf(
        "onednn: median_ms=%.3f min_ms=%.3f linear_ms=%.3f attention_ms=%.3f "
        "runs=%ld threads=%d\n",
        median(total) * 1e3,
        *std::min_element(total.begin(), total.end()) * 1e3, median(lin) * 1e3,
        median(att) * 1e3, o.runs, o.threads);
  } catch (const dnnl::error &e) {
    std::fprintf(stderr, "%s: oneDNN error: %s (status %d)\n", argv[0],
                 e.what(), int(e.status));
    return 2;
  }
  return 0;
}
