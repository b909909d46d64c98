//===- Inputs.h - checking a forward pass's inputs --------------*- C++ -*-===//
//
// One set of checks for the executable's .npy inputs and for C API callers.
// Runs inside a forward pass of the C API, so it writes messages into a
// fixed buffer and allocates nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_INPUTS_H
#define TFM_RUNTIME_INPUTS_H

#include "tfm/runtime/DType.h"
#include "tfm/runtime/Model.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tfm::rt {

/// The shape of a forward pass's output: [batch, seq, width], or
/// [seq, width] when the last input had no batch dimension.
struct OutputShape {
  int rank;
  int64_t shape[3];
  size_t elements() const;
};

/// Checks `tensors[i]` as `model.inputs[i]` for every input and makes the
/// views the forward pass reads. `sources[i]` names the tensor in messages
/// (a file name, or "input 'src'"). int64 token ids are narrowed into
/// `idScratch[i]`, which must hold maxBatch * maxSeqLen ints (null for
/// float inputs); int32 ids and floats are used in place. On failure writes
/// "SOURCE: WHAT" into `error`.
bool prepareInputs(const ModelInfo &model, const TensorRef *tensors,
                   const char *const *sources, int32_t *const *idScratch,
                   InputView *views, OutputShape &output, char *error,
                   size_t errorLength);

/// Checks the padding masks (`masks[m]` for model.masks[m]; data null: none
/// given) against their inputs `inputs` (those prepareInputs took and
/// accepted) and writes each as float32 1/0 into `scratch[m]` (maxBatch *
/// maxSeqLen floats; all ones when none was given), its view into
/// `views[numInputs + m]`. On failure writes "SOURCE: WHAT" into `error`.
bool prepareMasks(const ModelInfo &model, const TensorRef *inputs,
                  const TensorRef *masks, const char *const *sources,
                  float *const *scratch, InputView *views, char *error,
                  size_t errorLength);

/// A deterministic input of the largest shape the model takes, with a batch
/// dimension: ids uniform in [0, vocab), floats N(0, 1).
struct DefaultInput {
  DType dtype;
  int64_t shape[3];
  int rank;
  std::vector<int32_t> ids;
  std::vector<float> floats;

  TensorRef ref() const;
};
DefaultInput makeDefaultInput(const ModelInfo &model, size_t index);

} // namespace tfm::rt

#endif // TFM_RUNTIME_INPUTS_H
