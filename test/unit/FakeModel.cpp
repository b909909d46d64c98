//===- FakeModel.cpp - a hand-written stand-in for generated code ---------===//
//
// What tfm-compile generates, in miniature: a `kModel` whose forward pass
// takes token ids, looks up embeddings and mixes them once, using the arena
// and the thread pool the way generated code does. Linked with the runtime's
// main() into tfm-fake-model, it lets the tests drive the real executable
// without the compiler.
//
//===----------------------------------------------------------------------===//

#include "FakeModel.h"

#include "tfm/runtime/Arena.h"
#include "tfm/runtime/Model.h"
#include "tfm/runtime/ThreadPool.h"

#include <cmath>

std::atomic<int64_t> tfm::test::fakeForwardThreads{0};
std::string tfm::test::fakeSimdLimit;

namespace tfm::rt {

namespace {

constexpr int64_t kVocab = 16, kWidth = 8, kMaxSeq = 32, kMaxBatch = 2;

// The arena of generated code is sized by the compiler; here, by hand.
constexpr size_t kArenaBytes = kMaxBatch * kMaxSeq * kWidth * sizeof(float);

const ParamInfo kParams[] = {
    {"embed.weight", nullptr, 2, {kVocab, kWidth}, ParamInit::Uniform, 1.0f},
    {"bias", nullptr, 1, {kWidth}, ParamInit::Zeros, 0.0f},
};

const InputInfo kInputs[] = {{"input", InputKind::TokenIds}};

double matmulFlops(const InputView *inputs) {
  return 2.0 * double(inputs[0].batch * inputs[0].seq) * kWidth * kWidth;
}

// Generated Highway code disables the targets past `isa`; the fake has
// one target, AVX2, and says so.
const char *limitSimd(const char *isa) {
  tfm::test::fakeSimdLimit = isa;
  return std::string(isa) == "avx2" ? nullptr : "this CPU has no such target";
}

// out[r, j] = h[r, j] + 0.1 * sum_k h[r, k] * embed[k, j], where
// h[r] = embed[id[r]] + bias + 0.01 * position.
void forward(const float *const *weights, const InputView *inputs,
             float *output, Arena &arena, ThreadPool &pool) {
  tfm::test::fakeForwardThreads = pool.size();
  const float *embed = weights[0], *bias = weights[1];
  const auto *ids = static_cast<const int32_t *>(inputs[0].data);
  int64_t seq = inputs[0].seq, rows = inputs[0].batch * seq;
  size_t mark = arena.mark();
  float *hidden = arena.take(size_t(rows * kWidth));
  pool.parallelFor(rows, [&](int64_t r) {
    float *h = hidden + r * kWidth;
    for (int64_t k = 0; k < kWidth; ++k)
      h[k] = embed[ids[r] * kWidth + k] + bias[k] + 0.01f * float(r % seq);
    for (int64_t j = 0; j < kWidth; ++j) {
      float sum = 0;
      for (int64_t k = 0; k < kWidth; ++k)
        sum += h[k] * embed[k * kWidth + j];
      output[r * kWidth + j] = h[j] + 0.1f * std::tanh(sum);
    }
  });
  arena.release(mark);
}

} // namespace

extern const ModelInfo kModel = {
    /*name=*/"fake",
    /*params=*/kParams,
    /*numParams=*/2,
    /*inputs=*/kInputs,
    /*numInputs=*/1,
    /*dModel=*/kWidth,
    /*vocabSize=*/kVocab,
    /*outputWidth=*/kWidth,
    /*maxSeqLen=*/kMaxSeq,
    /*maxBatch=*/kMaxBatch,
    /*arenaBytes=*/kArenaBytes,
    /*matmulFlops=*/matmulFlops,
    /*forward=*/forward,
    /*numPacked=*/0,
    /*packedFloats=*/nullptr,
    /*pack=*/nullptr,
    /*numCaches=*/0,
    /*cacheFloats=*/nullptr,
    /*prefill=*/nullptr,
    /*decode=*/nullptr,
    /*defaultWeights=*/nullptr,
    /*limitSimd=*/limitSimd,
    /*masks=*/nullptr,
    /*numMasks=*/0,
    /*attentionMaps=*/nullptr,
    /*numAttentionMaps=*/0,
    /*attentionMapsUnsupported=*/nullptr,
    /*masksRefused=*/"its attention mixes every position",
};

} // namespace tfm::rt
