//===- ModelInstance.cpp - a model ready to run ---------------------------===//

#include "tfm/runtime/ModelInstance.h"
#include "tfm/runtime/Shape.h"

#include <algorithm>
#include <cstdlib>

namespace tfm::rt {

bool ModelInstance::packWeights(std::string &error) {
  const ModelInfo &info = *model;
  const float *const *params = weights.pointers();
  weightPointers.assign(params, params + info.numParams);
  if (info.numPacked == 0)
    return true;
  // One block, each tensor starting on a 64-byte boundary.
  std::vector<size_t> offsets;
  size_t floats = 0;
  for (size_t j = 0; j < info.numPacked; ++j) {
    offsets.push_back(floats);
    floats += floatsTo64Bytes(info.packedFloats[j]);
  }
  if (!packed.allocate(floats * sizeof(float))) {
    error = "out of memory allocating " + std::to_string(floats * 4) +
            " bytes for packed weights";
    return false;
  }
  std::vector<float *> targets;
  for (size_t offset : offsets)
    targets.push_back(static_cast<float *>(packed.data()) + offset);
  info.pack(params, targets.data());
  weightPointers.insert(weightPointers.end(), targets.begin(), targets.end());
  return true;
}

bool ModelInstance::allocateCaches(std::string &error) {
  const ModelInfo &info = *model;
  size_t floats = 0;
  for (size_t i = 0; i < info.numCaches; ++i)
    floats += floatsTo64Bytes(info.cacheFloats[i]);
  if (floats == 0)
    return true;
  if (!cacheBlock.allocate(floats * sizeof(float))) {
    error = "out of memory allocating " + std::to_string(floats * 4) +
            " bytes of key/value cache (tfm-compile --max-seq-len and "
            "--max-batch set how much)";
    return false;
  }
  float *next = static_cast<float *>(cacheBlock.data());
  std::fill(next, next + floats, 0.0f);
  for (size_t i = 0; i < info.numCaches; ++i) {
    caches.push_back(next);
    next += floatsTo64Bytes(info.cacheFloats[i]);
  }
  return true;
}

namespace {
/// Bytes of one position of `input`: an int32 id or dModel floats.
size_t positionBytes(const ModelInfo &model, const InputInfo &input) {
  return input.kind == InputKind::Embeddings ? size_t(model.dModel) * 4 : 4;
}
} // namespace

void ModelInstance::regenerate(int64_t length, int64_t rows, float *logits) {
  InputView &growing = views[model->numInputs - 1];
  for (int64_t b = 0; b < growing.batch; ++b)
    std::copy_n(sequence.data() + b * model->maxSeqLen, length,
                compacted.data() + b * length);
  growing = {compacted.data(), growing.batch, length};
  for (size_t m = 0; m < model->numMasks; ++m) {
    const InputView &of = views[model->masks[m].input];
    views[model->numInputs + m] = {ones.data(), of.batch, of.seq};
  }
  forward(views.data(), nullptr);
  const int64_t vocab = model->outputWidth;
  for (int64_t b = 0; b < growing.batch; ++b)
    std::copy_n(outputBuffer() + (b * length + length - rows) * vocab,
                rows * vocab, logits + b * rows * vocab);
}

void ModelInstance::prefill(const InputView *inputs, float *logits) {
  if (model->regenerates) {
    // The inputs that stay, copied; the prompt into the growing sequence.
    size_t last = model->numInputs - 1;
    for (size_t i = 0; i < last; ++i) {
      size_t bytes = size_t(inputs[i].batch * inputs[i].seq) *
                     positionBytes(*model, model->inputs[i]);
      auto *from = static_cast<const unsigned char *>(inputs[i].data);
      std::copy_n(from, bytes, kept[i].data());
      views[i] = {kept[i].data(), inputs[i].batch, inputs[i].seq};
    }
    const InputView &prompt = inputs[last];
    auto *ids = static_cast<const int32_t *>(prompt.data);
    for (int64_t b = 0; b < prompt.batch; ++b)
      std::copy_n(ids + b * prompt.seq, prompt.seq,
                  sequence.data() + b * model->maxSeqLen);
    views[last].batch = prompt.batch;
    regenerate(prompt.seq, 1, logits);
    return;
  }
  activations->release(0);
  // An encoder_decoder's memory is its source: inputs[0].
  memoryLength = model->numInputs > 1 ? inputs[0].seq : 0;
  model->prefill(weightPointers.data(), caches.data(), inputs, 0, 0, logits,
                 *activations, *pool);
}

void ModelInstance::decode(const InputView &tokens, int64_t position,
                           float *logits) {
  if (model->regenerates) {
    auto *ids = static_cast<const int32_t *>(tokens.data);
    for (int64_t b = 0; b < tokens.batch; ++b)
      std::copy_n(ids + b * tokens.seq, tokens.seq,
                  sequence.data() + b * model->maxSeqLen + position);
    regenerate(position + tokens.seq, tokens.seq, logits);
    return;
  }
  activations->release(0);
  model->decode(weightPointers.data(), caches.data(), &tokens, position,
                memoryLength, logits, *activations, *pool);
}

bool ModelInstance::init(const ModelInfo &info, const char *weightsPath,
                         int threads, std::string &error) {
  model = &info;
  // Before the packing dispatches: the target fixes the panel widths.
  if (const char *isa = std::getenv("TFM_SIMD"); isa && *isa) {
    if (!info.limitSimd) {
      error = std::string("TFM_SIMD=") + isa +
              ": this model's code has no SIMD targets to choose from (only "
              "the Highway backend's, --backend=hwy, has)";
      return false;
    }
    if (const char *why = info.limitSimd(isa)) {
      error = std::string("TFM_SIMD=") + isa + ": " + why;
      return false;
    }
  }
  pool = std::make_unique<ThreadPool>(threads);
  if (!weightsPath)
    weightsPath = info.defaultWeights;
  if (weightsPath ? !weights.load(info, weightsPath, error)
                  : !weights.initRandom(info, error, pool.get()))
    return false;

  if (!packWeights(error) || !allocateCaches(error))
    return false;
  if (info.regenerates) {
    // Room for every input at the maxima, allocated once.
    size_t positions = size_t(info.maxBatch * info.maxSeqLen);
    kept.resize(info.numInputs);
    for (size_t i = 0; i + 1 < info.numInputs; ++i)
      kept[i].resize(positions * positionBytes(info, info.inputs[i]));
    sequence.assign(positions, 0);
    compacted.assign(positions, 0);
    ones.assign(positions, 1.0f);
    views.assign(info.numInputs + info.numMasks, InputView{nullptr, 0, 0});
  }

  activations = std::make_unique<Arena>(info.arenaBytes);
  if (activations->capacity() < info.arenaBytes) {
    error = "out of memory allocating " + std::to_string(info.arenaBytes) +
            " bytes of activation memory (tfm-compile --max-seq-len and "
            "--max-batch set how much)";
    return false;
  }

  int64_t outputShape[3] = {info.maxBatch, info.maxSeqLen, info.outputWidth};
  uint64_t outputElements;
  if (!checkedElementCount(outputShape, 3, sizeof(float), SIZE_MAX,
                           outputElements) ||
      !output.allocate(size_t(outputElements) * sizeof(float))) {
    error = "out of memory allocating the output buffer for shape " +
            std::string(ShapeText(outputShape, 3).c_str());
    return false;
  }
  return true;
}

void ModelInstance::forward(const InputView *inputs, float *out) {
  // A pass starts from an empty arena whatever the last one left behind.
  activations->release(0);
  model->forward(weightPointers.data(), inputs, out ? out : outputBuffer(),
                 *activations, *pool);
}

} // namespace tfm::rt
