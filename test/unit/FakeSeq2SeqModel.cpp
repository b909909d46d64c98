//===- FakeSeq2SeqModel.cpp - a stand-in encoder-decoder ------------------===//
//
// Two inputs (src and tgt, one batch, own sequence lengths) and two
// embeddings that a weights file may give as one shared `embed.weight`:
// what the runtime must handle for an encoder_decoder model.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/Arena.h"
#include "tfm/runtime/Model.h"
#include "tfm/runtime/ThreadPool.h"

namespace tfm::rt {

namespace {

constexpr int64_t kVocab = 16, kWidth = 8, kMaxSeq = 16, kMaxBatch = 2;

// The arena of generated code is sized by the compiler; here, by hand.
constexpr size_t kArenaBytes = kMaxBatch * kWidth * sizeof(float);

const ParamInfo kParams[] = {
    {"src_embed.weight",
     "embed.weight",
     2,
     {kVocab, kWidth},
     ParamInit::Normal,
     1.0f},
    {"tgt_embed.weight",
     "embed.weight",
     2,
     {kVocab, kWidth},
     ParamInit::Normal,
     1.0f},
};

const InputInfo kInputs[] = {{"src", InputKind::TokenIds},
                             {"tgt", InputKind::TokenIds}};

double matmulFlops(const InputView *inputs) {
  return 2.0 * double(inputs[1].batch * inputs[1].seq) * kWidth;
}

// out[b, t] = tgt_embed[tgt[b, t]] + mean over s of src_embed[src[b, s]].
void forward(const float *const *weights, const InputView *inputs,
             float *output, Arena &arena, ThreadPool &pool) {
  const InputView &src = inputs[0], &tgt = inputs[1];
  const auto *srcIds = static_cast<const int32_t *>(src.data);
  const auto *tgtIds = static_cast<const int32_t *>(tgt.data);
  size_t mark = arena.mark();
  float *context = arena.take(size_t(src.batch * kWidth));
  pool.parallelFor(src.batch, [&](int64_t b) {
    for (int64_t j = 0; j < kWidth; ++j) {
      float sum = 0;
      for (int64_t s = 0; s < src.seq; ++s)
        sum += weights[0][srcIds[b * src.seq + s] * kWidth + j];
      context[b * kWidth + j] = sum / float(src.seq);
    }
  });
  pool.parallelFor(tgt.batch * tgt.seq, [&](int64_t r) {
    int64_t b = r / tgt.seq;
    for (int64_t j = 0; j < kWidth; ++j)
      output[r * kWidth + j] =
          weights[1][tgtIds[r] * kWidth + j] + context[b * kWidth + j];
  });
  arena.release(mark);
}

} // namespace

extern const ModelInfo kModel = {
    /*name=*/"fake_seq2seq",
    /*params=*/kParams,
    /*numParams=*/2,
    /*inputs=*/kInputs,
    /*numInputs=*/2,
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
    /*limitSimd=*/nullptr,
    /*masks=*/nullptr,
    /*numMasks=*/0,
    /*attentionMaps=*/nullptr,
    /*numAttentionMaps=*/0,
    /*attentionMapsUnsupported=*/nullptr,
    /*masksRefused=*/"its attention mixes every position",
};

} // namespace tfm::rt
