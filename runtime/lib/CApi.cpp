//===- CApi.cpp - what a generated NAME_* C API forwards to ---------------===//
//
// Everything a forward pass needs (views, narrowed ids, the message buffer)
// is sized in tfm_rt_create, so tfm_rt_forward allocates nothing. The
// runtime is built without exceptions, so none can cross this boundary.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/CApi.h"
#include "tfm/runtime/AlignedBuffer.h"
#include "tfm/runtime/Inputs.h"
#include "tfm/runtime/ModelInstance.h"

#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

using namespace tfm::rt;

struct tfm_model {
  ModelInstance instance;
  AlignedBuffer idBuffer;
  std::vector<int32_t *> idScratch;
  /// The padding masks as float 1/0, one slice per mask.
  AlignedBuffer maskBuffer;
  std::vector<float *> maskScratch;
  /// The inputs', then the masks' tensors, views and names.
  std::vector<TensorRef> tensors;
  std::vector<InputView> views;
  std::vector<std::array<char, 96>> sourceNames;
  std::vector<const char *> sources;
  char error[1024] = "";
  /// Positions already in the key/value caches (prefill resets it), and
  /// the batch they hold (0: no prefill yet).
  int64_t position = 0, cachedBatch = 0;
};

namespace {

__attribute__((format(printf, 3, 4))) void
writeMessage(char *buffer, size_t length, const char *format, ...) {
  if (!buffer || length == 0)
    return;
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, length, format, args);
  va_end(args);
}

/// $TFM_NUM_THREADS, 1 when unset; false when set to something else than a
/// thread count.
bool threadsFromEnvironment(int &threads, char *err, size_t errLength) {
  threads = 1;
  const char *text = std::getenv("TFM_NUM_THREADS");
  if (!text || !*text)
    return true;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 1 || value > 1024) {
    writeMessage(err, errLength,
                 "TFM_NUM_THREADS='%s' is not a thread count (1 to 1024)",
                 text);
    return false;
  }
  threads = int(value);
  return true;
}

} // namespace

extern "C" {

tfm_model *tfm_rt_create(const ModelInfo *info, const char *weights_path,
                         char *err, size_t err_len) {
  writeMessage(err, err_len, "%s", "");
  if (!info) {
    writeMessage(err, err_len, "tfm_rt_create: no model");
    return nullptr;
  }
  int threads;
  if (!threadsFromEnvironment(threads, err, err_len))
    return nullptr;
  auto *model = new (std::nothrow) tfm_model;
  if (!model) {
    writeMessage(err, err_len, "out of memory creating model '%s'", info->name);
    return nullptr;
  }
  std::string error;
  if (!model->instance.init(*info, weights_path, threads, error)) {
    writeMessage(err, err_len, "%s", error.c_str());
    delete model;
    return nullptr;
  }

  size_t inputs = info->numInputs;
  size_t idsPerInput = size_t(info->maxBatch * info->maxSeqLen);
  // int64 ids are narrowed to int32 here; one block, one slice per input.
  if (!model->idBuffer.allocate(inputs * idsPerInput * sizeof(int32_t))) {
    writeMessage(err, err_len, "out of memory creating model '%s'", info->name);
    delete model;
    return nullptr;
  }
  size_t masks = info->numMasks;
  if (masks &&
      !model->maskBuffer.allocate(masks * idsPerInput * sizeof(float))) {
    writeMessage(err, err_len, "out of memory creating model '%s'", info->name);
    delete model;
    return nullptr;
  }
  model->idScratch.resize(inputs);
  model->maskScratch.resize(masks);
  model->tensors.resize(inputs + masks);
  model->views.resize(inputs + masks);
  model->sourceNames.resize(inputs + masks);
  model->sources.resize(inputs + masks);
  for (size_t i = 0; i < inputs + masks; ++i) {
    const char *name =
        i < inputs ? info->inputs[i].name : info->masks[i - inputs].name;
    if (i < inputs)
      model->idScratch[i] =
          static_cast<int32_t *>(model->idBuffer.data()) + i * idsPerInput;
    else
      model->maskScratch[i - inputs] =
          static_cast<float *>(model->maskBuffer.data()) +
          (i - inputs) * idsPerInput;
    std::snprintf(model->sourceNames[i].data(), model->sourceNames[i].size(),
                  "input '%s'", name);
    model->sources[i] = model->sourceNames[i].data();
  }
  return model;
}

/// The checks every entry point makes on its inputs, the model's inputs
/// from `firstInput` on; fills model->views from there. With
/// `masksAllowed`, the padding masks may follow the inputs (all of them or
/// none; a null data pointer: no mask); else the masks' views are all ones.
static bool checkInputs(tfm_model *model, const tfm_tensor *inputs,
                        size_t n_inputs, const tfm_tensor *output,
                        OutputShape &shape, size_t firstInput = 0,
                        bool masksAllowed = true) {
  model->error[0] = '\0';
  const ModelInfo &whole = model->instance.info();
  ModelInfo info = whole;
  info.inputs += firstInput;
  info.numInputs -= firstInput;
  char *error = model->error;
  size_t length = sizeof(model->error);
  size_t withMasks = info.numInputs + whole.numMasks;
  bool hasMasks = firstInput == 0 && whole.numMasks && n_inputs == withMasks;
  if ((n_inputs != info.numInputs && !hasMasks) || (!inputs && n_inputs)) {
    if (firstInput == 0 && whole.numMasks && masksAllowed)
      writeMessage(error, length,
                   "%s: expected %zu input(s), or %zu with the padding "
                   "masks, got %zu",
                   info.name, info.numInputs, withMasks,
                   inputs ? n_inputs : size_t(0));
    else
      writeMessage(error, length, "%s: expected %zu input(s), got %zu",
                   info.name, info.numInputs, inputs ? n_inputs : size_t(0));
    return false;
  }
  if (hasMasks && !masksAllowed) {
    writeMessage(error, length,
                 "%s: prefill takes no padding mask yet: give the %zu "
                 "input(s) alone",
                 info.name, info.numInputs);
    return false;
  }
  if (!output) {
    writeMessage(error, length, "%s: output tensor is null", info.name);
    return false;
  }
  for (size_t i = 0; i < n_inputs; ++i) {
    const tfm_tensor &tensor = inputs[i];
    // An absent mask, or an absent optional input (zeros).
    if ((i >= info.numInputs || info.inputs[i].zerosLike >= 0) &&
        !tensor.data) {
      model->tensors[firstInput + i] = TensorRef{};
      continue;
    }
    if (tensor.dtype != TFM_F32 && tensor.dtype != TFM_I32 &&
        tensor.dtype != TFM_I64 &&
        (tensor.dtype != TFM_BOOL || i < info.numInputs)) {
      writeMessage(error, length, "%s: unknown dtype %d",
                   model->sources[firstInput + i], int(tensor.dtype));
      return false;
    }
    if (tensor.rank < 1 || tensor.rank > TFM_MAX_RANK) {
      writeMessage(error, length, "%s: rank %d is outside 1 to %d",
                   model->sources[firstInput + i], int(tensor.rank),
                   TFM_MAX_RANK);
      return false;
    }
    model->tensors[firstInput + i] = {DType(tensor.dtype), int(tensor.rank),
                                      tensor.shape, tensor.data};
  }
  if (!prepareInputs(info, model->tensors.data() + firstInput,
                     model->sources.data() + firstInput,
                     model->idScratch.data() + firstInput,
                     model->views.data() + firstInput, shape, error, length))
    return false;
  if (firstInput != 0)
    return true;
  size_t numInputs = whole.numInputs;
  if (!hasMasks)
    for (size_t m = 0; m < whole.numMasks; ++m)
      model->tensors[numInputs + m] = TensorRef{};
  return prepareMasks(
      whole, model->tensors.data(), model->tensors.data() + numInputs,
      model->sources.data() + numInputs, model->maskScratch.data(),
      model->views.data(), error, length);
}

/// Sets `output`'s dtype and shape, and its data to the model's own buffer
/// when the caller gave none.
static void describeOutput(tfm_model *model, const OutputShape &shape,
                           tfm_tensor *output) {
  output->dtype = TFM_F32;
  output->rank = shape.rank;
  for (int d = 0; d < TFM_MAX_RANK; ++d)
    output->shape[d] = d < shape.rank ? shape.shape[d] : 0;
  if (!output->data)
    output->data = model->instance.outputBuffer();
}

int tfm_rt_forward(tfm_model *model, const tfm_tensor *inputs, size_t n_inputs,
                   tfm_tensor *output) {
  if (!model)
    return 1;
  OutputShape shape;
  if (!checkInputs(model, inputs, n_inputs, output, shape))
    return 1;
  describeOutput(model, shape, output);
  model->instance.forward(model->views.data(),
                          static_cast<float *>(output->data));
  return 0;
}

/// prefill (all the model's inputs, position 0) or decode (new target
/// tokens at model->position): the shared part.
static int step(tfm_model *model, const tfm_tensor *inputs, size_t n_inputs,
                tfm_tensor *output, bool isPrefill) {
  if (!model)
    return 1;
  const ModelInfo &info = model->instance.info();
  if (!model->instance.canGenerate()) {
    writeMessage(model->error, sizeof(model->error),
                 "%s: this model has no prefill/decode (generation needs a "
                 "decoder or encoder_decoder with token ids and an LM head)",
                 info.name);
    return 1;
  }
  // Decode takes the growing sequence only: the last input.
  size_t last = info.numInputs - 1;
  OutputShape shape;
  if (!checkInputs(model, inputs, n_inputs, output, shape, isPrefill ? 0 : last,
                   /*masksAllowed=*/false))
    return 1;
  const InputView &tokens = model->views[last];
  if (!isPrefill && model->cachedBatch == 0) {
    writeMessage(model->error, sizeof(model->error),
                 "%s: decode needs a prefill first", info.name);
    return 1;
  }
  if (!isPrefill && tokens.batch != model->cachedBatch) {
    writeMessage(model->error, sizeof(model->error),
                 "%s: decode got a batch of %lld but the prefill had %lld",
                 info.name, (long long)tokens.batch,
                 (long long)model->cachedBatch);
    return 1;
  }
  int64_t first = isPrefill ? 0 : model->position;
  if (first + tokens.seq > info.maxSeqLen) {
    writeMessage(model->error, sizeof(model->error),
                 "%s: positions %lld to %lld exceed the compiled maximum "
                 "sequence length %lld",
                 info.name, (long long)first,
                 (long long)(first + tokens.seq - 1),
                 (long long)info.maxSeqLen);
    return 1;
  }
  if (isPrefill)
    shape.shape[shape.rank - 2] = 1; // the last position's logits only
  describeOutput(model, shape, output);
  float *logits = static_cast<float *>(output->data);
  if (isPrefill)
    model->instance.prefill(model->views.data(), logits);
  else
    model->instance.decode(tokens, first, logits);
  model->position = first + tokens.seq;
  model->cachedBatch = tokens.batch;
  return 0;
}

int tfm_rt_prefill(tfm_model *model, const tfm_tensor *inputs, size_t n_inputs,
                   tfm_tensor *output) {
  return step(model, inputs, n_inputs, output, /*isPrefill=*/true);
}

int tfm_rt_decode(tfm_model *model, const tfm_tensor *tokens,
                  tfm_tensor *output) {
  return step(model, tokens, 1, output, /*isPrefill=*/false);
}

const char *tfm_rt_last_error(const tfm_model *model) {
  return model ? model->error : "tfm_rt_last_error: no model";
}

void tfm_rt_destroy(tfm_model *model) { delete model; }

} // extern "C"
