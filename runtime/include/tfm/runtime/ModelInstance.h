//===- ModelInstance.h - a model ready to run -------------------*- C++ -*-===//

#ifndef TFM_RUNTIME_MODELINSTANCE_H
#define TFM_RUNTIME_MODELINSTANCE_H

#include "tfm/runtime/AlignedBuffer.h"
#include "tfm/runtime/Arena.h"
#include "tfm/runtime/Model.h"
#include "tfm/runtime/ThreadPool.h"
#include "tfm/runtime/Weights.h"

#include <memory>
#include <string>
#include <vector>

namespace tfm::rt {

/// Everything a forward pass needs, allocated once up front (weights,
/// activation arena, thread pool, an output buffer of the largest shape), so
/// that forward passes touch no heap.
class ModelInstance {
public:
  /// `weightsPath` null: deterministic random weights.
  bool init(const ModelInfo &model, const char *weightsPath, int threads,
            std::string &error);

  /// `inputs` are already checked (prepareInputs); `output` null means the
  /// instance's own buffer.
  void forward(const InputView *inputs, float *output);

  /// Incremental decoding (when the model has it, see canGenerate): prefill
  /// takes the model's inputs (the prompt; for encoder_decoder src and the
  /// target's start), runs them from position 0 and writes the last
  /// position's logits [batch, 1, vocab]; decode runs new target `tokens`
  /// at `position`.. and writes their logits. Both extend the key/value
  /// caches; positions must stay below maxSeqLen, and a decode must start
  /// where the prefill or the decode before it ended (a sliding window's
  /// cache keeps only its last positions, in a ring).
  /// A model that regenerates (ModelInfo::regenerates) keeps the inputs
  /// and tokens so far instead, and runs forward over all of them.
  bool canGenerate() const { return tfm::rt::canGenerate(*model); }
  void prefill(const InputView *inputs, float *logits);
  void decode(const InputView &tokens, int64_t position, float *logits);

  const ModelInfo &info() const { return *model; }
  float *outputBuffer() const { return static_cast<float *>(output.data()); }
  int threads() const { return pool->size(); }
  const Arena &arena() const { return *activations; }

private:
  /// Fills the packed tensors from the loaded params.
  bool packWeights(std::string &error);
  bool allocateCaches(std::string &error);
  /// A regenerating model's step: forward over the inputs kept, the
  /// sequence `length` tokens long, then the logits of its last `rows`
  /// positions into `logits` ([batch, rows, vocab]).
  void regenerate(int64_t length, int64_t rows, float *logits);

  const ModelInfo *model = nullptr;
  Weights weights;
  /// One block for every packed tensor, and the pointers forward() reads:
  /// the params', then the packed tensors'.
  AlignedBuffer packed;
  std::vector<const float *> weightPointers;
  /// The key/value caches of generation, allocated once.
  AlignedBuffer cacheBlock;
  std::vector<float *> caches;
  /// The source length of the last prefill (encoder_decoder).
  int64_t memoryLength = 0;
  /// A regenerating model's inputs: copies of those that stay (an
  /// encoder_decoder's source), the token ids of the sequence that grows
  /// ([maxBatch, maxSeqLen]: row b's tokens at b * maxSeqLen), the same
  /// compacted to [batch, length] for forward, all-ones padding masks, and
  /// the views forward reads.
  std::vector<std::vector<unsigned char>> kept;
  std::vector<int32_t> sequence, compacted;
  std::vector<float> ones;
  std::vector<InputView> views;
  std::unique_ptr<Arena> activations;
  std::unique_ptr<ThreadPool> pool;
  AlignedBuffer output;
};

} // namespace tfm::rt

#endif // TFM_RUNTIME_MODELINSTANCE_H
