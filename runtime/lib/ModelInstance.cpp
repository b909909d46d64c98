//===- ModelInstance.cpp - a model ready to run ---------------------------===//

#include "tfm/runtime/ModelInstance.h"
#include "tfm/runtime/Shape.h"

namespace tfm::rt {

bool ModelInstance::init(const ModelInfo &info, const char *weightsPath,
                         int threads, std::string &error) {
  model = &info;
  if (weightsPath ? !weights.load(info, weightsPath, error)
                  : !weights.initRandom(info, error))
    return false;

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
  pool = std::make_unique<ThreadPool>(threads);
  return true;
}

void ModelInstance::forward(const InputView *inputs, float *out) {
  // A pass starts from an empty arena whatever the last one left behind.
  activations->release(0);
  model->forward(weights.pointers(), inputs, out ? out : outputBuffer(),
                 *activations, *pool);
}

} // namespace tfm::rt
