//===- Inputs.cpp - checking a forward pass's inputs ----------------------===//

#include "tfm/runtime/Inputs.h"
#include "tfm/runtime/Random.h"
#include "tfm/runtime/Shape.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace tfm::rt {

namespace {

/// Formats into the caller's fixed buffer: reporting must not allocate.
__attribute__((format(printf, 3, 4))) bool fail(char *error, size_t length,
                                                const char *format, ...) {
  if (error && length) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(error, length, format, args);
    va_end(args);
  }
  return false;
}

/// Checks ids against the vocabulary, narrowing int64 ones into `narrowed`.
template <typename Id>
bool checkIds(const Id *ids, int64_t batch, int64_t seq, bool hasBatch,
              int64_t vocabSize, const char *what, int32_t *narrowed,
              const char *source, char *error, size_t length) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      Id id = ids[b * seq + s];
      if (id < 0 || int64_t(id) >= vocabSize) {
        if (hasBatch)
          return fail(error, length,
                      "%s: %s %" PRId64 " at position [%" PRId64 ", %" PRId64
                      "] is out of range [0, %" PRId64 ")",
                      source, what, int64_t(id), b, s, vocabSize);
        return fail(error, length,
                    "%s: %s %" PRId64 " at position [%" PRId64
                    "] is out of range [0, %" PRId64 ")",
                    source, what, int64_t(id), s, vocabSize);
      }
      if (narrowed)
        narrowed[b * seq + s] = int32_t(id);
    }
  return true;
}

bool prepareOne(const ModelInfo &model, const InputInfo &info,
                const TensorRef &tensor, const char *source, int32_t *scratch,
                InputView &view, bool &hasBatch, char *error, size_t length) {
  ShapeText shape(tensor.shape, tensor.rank < 0 ? 0 : size_t(tensor.rank));
  bool ids = info.kind == InputKind::TokenIds;
  if (ids) {
    if (tensor.dtype != DType::I32 && tensor.dtype != DType::I64)
      return fail(error, length, "%s: token ids must be int32 or int64, not %s",
                  source, dtypeName(tensor.dtype));
    if (tensor.rank != 1 && tensor.rank != 2)
      return fail(error, length,
                  "%s: token ids must have shape [seq] or [batch, seq], not "
                  "%s",
                  source, shape.c_str());
  } else {
    if (tensor.dtype != DType::F32)
      return fail(error, length, "%s: embeddings must be float32, not %s",
                  source, dtypeName(tensor.dtype));
    if (tensor.rank != 2 && tensor.rank != 3)
      return fail(error, length,
                  "%s: embeddings must have shape [seq, %" PRId64
                  "] or [batch, seq, %" PRId64 "], not %s",
                  source, model.dModel, model.dModel, shape.c_str());
    int64_t width = tensor.shape[tensor.rank - 1];
    if (width != model.dModel)
      return fail(error, length,
                  "%s: embeddings of shape %s have last dimension %" PRId64
                  ", expected d_model %" PRId64,
                  source, shape.c_str(), width, model.dModel);
  }
  int dims = ids ? tensor.rank : tensor.rank - 1;
  hasBatch = dims == 2;
  int64_t batch = hasBatch ? tensor.shape[0] : 1;
  int64_t seq = tensor.shape[dims - 1];
  if (seq < 1)
    return fail(error, length,
                "%s: sequence length %" PRId64 " is not allowed (at least 1)",
                source, seq);
  if (seq > model.maxSeqLen)
    return fail(error, length,
                "%s: sequence length %" PRId64
                " exceeds the compiled maximum %" PRId64
                " (tfm-compile --max-seq-len)",
                source, seq, model.maxSeqLen);
  if (batch < 1)
    return fail(error, length,
                "%s: batch %" PRId64 " is not allowed (at least 1)", source,
                batch);
  if (batch > model.maxBatch)
    return fail(error, length,
                "%s: batch %" PRId64 " exceeds the compiled maximum %" PRId64
                " (tfm-compile --max-batch)",
                source, batch, model.maxBatch);
  if (!tensor.data)
    return fail(error, length, "%s: data pointer is null", source);

  view.batch = batch;
  view.seq = seq;
  view.data = tensor.data;
  if (!ids)
    return true;
  int64_t bound = info.idBound > 0 ? info.idBound : model.vocabSize;
  const char *what = info.zerosLike < 0 ? "token id" : "token type id";
  if (tensor.dtype == DType::I32)
    return checkIds(static_cast<const int32_t *>(tensor.data), batch, seq,
                    hasBatch, bound, what, nullptr, source, error, length);
  if (!scratch)
    return fail(error, length,
                "%s: internal error: no buffer to narrow int64 ids into",
                source);
  view.data = scratch;
  return checkIds(static_cast<const int64_t *>(tensor.data), batch, seq,
                  hasBatch, bound, what, scratch, source, error, length);
}

/// An optional input (`info.zerosLike`): all zeros in `scratch` when none is
/// given, else checked as an input of the shape of `like` (already
/// prepared).
bool prepareOptional(const ModelInfo &model, const InputInfo &info,
                     const TensorRef &tensor, const TensorRef &likeTensor,
                     const InputView &like, const char *source,
                     const char *likeSource, int32_t *scratch, InputView &view,
                     bool &hasBatch, char *error, size_t length) {
  bool likeHasBatch = hasBatch;
  if (!tensor.data) {
    if (!scratch)
      return fail(error, length,
                  "%s: internal error: no buffer for the default zeros",
                  source);
    for (int64_t i = 0; i < like.batch * like.seq; ++i)
      scratch[i] = 0;
    view = {scratch, like.batch, like.seq};
    return true;
  }
  if (!prepareOne(model, info, tensor, source, scratch, view, hasBatch, error,
                  length))
    return false;
  int likeRank = likeTensor.rank;
  bool sameShape = tensor.rank == likeRank;
  for (int d = 0; sameShape && d < likeRank; ++d)
    sameShape = tensor.shape[d] == likeTensor.shape[d];
  if (!sameShape) {
    ShapeText got(tensor.shape, size_t(tensor.rank));
    ShapeText expected(likeTensor.shape, size_t(likeRank));
    return fail(error, length, "%s: shape %s does not match %s (expected %s)",
                source, got.c_str(), likeSource, expected.c_str());
  }
  hasBatch = likeHasBatch;
  return true;
}

/// Whether mask element i is 0 or 1 (1 in `real`).
bool maskValue(const TensorRef &mask, size_t i, bool &real) {
  switch (mask.dtype) {
  case DType::F32: {
    float v = static_cast<const float *>(mask.data)[i];
    real = v == 1.0f;
    return v == 0.0f || v == 1.0f;
  }
  case DType::I32: {
    int32_t v = static_cast<const int32_t *>(mask.data)[i];
    real = v == 1;
    return v == 0 || v == 1;
  }
  case DType::I64: {
    int64_t v = static_cast<const int64_t *>(mask.data)[i];
    real = v == 1;
    return v == 0 || v == 1;
  }
  case DType::Bool: {
    uint8_t v = static_cast<const uint8_t *>(mask.data)[i];
    real = v == 1;
    return v == 0 || v == 1;
  }
  }
  return false;
}

/// The text of mask element i's value, for a message.
void maskValueText(const TensorRef &mask, size_t i, char *text, size_t size) {
  switch (mask.dtype) {
  case DType::F32:
    std::snprintf(text, size, "%.9g", static_cast<const float *>(mask.data)[i]);
    return;
  case DType::I32:
    std::snprintf(text, size, "%d", static_cast<const int32_t *>(mask.data)[i]);
    return;
  case DType::I64:
    std::snprintf(text, size, "%" PRId64,
                  static_cast<const int64_t *>(mask.data)[i]);
    return;
  case DType::Bool:
    std::snprintf(text, size, "%u",
                  unsigned(static_cast<const uint8_t *>(mask.data)[i]));
    return;
  }
}

bool prepareMask(const ModelInfo &model, const MaskInfo &info,
                 const TensorRef &input, const InputView &inputView,
                 const TensorRef &mask, const char *source, float *scratch,
                 InputView &view, char *error, size_t length) {
  int64_t batch = inputView.batch, seq = inputView.seq;
  view = {scratch, batch, seq};
  if (!mask.data) {
    for (int64_t i = 0; i < batch * seq; ++i)
      scratch[i] = 1.0f;
    return true;
  }
  if (mask.dtype != DType::F32 && mask.dtype != DType::I32 &&
      mask.dtype != DType::I64 && mask.dtype != DType::Bool)
    return fail(error, length,
                "%s: a padding mask must be int32, int64, bool or float32, "
                "not %s",
                source, dtypeName(mask.dtype));
  // The input's [batch, seq] or [seq]: the ids' shape, the embeddings'
  // without d_model.
  bool ids = model.inputs[info.input].kind == InputKind::TokenIds;
  int rank = ids ? input.rank : input.rank - 1;
  bool sameShape = mask.rank == rank;
  for (int d = 0; sameShape && d < rank; ++d)
    sameShape = mask.shape[d] == input.shape[d];
  if (!sameShape) {
    ShapeText got(mask.shape, mask.rank < 0 ? 0 : size_t(mask.rank));
    ShapeText expected(input.shape, size_t(rank));
    return fail(error, length,
                "%s: a padding mask of shape %s does not match input '%s' "
                "(expected %s, the input's %s)",
                source, got.c_str(), model.inputs[info.input].name,
                expected.c_str(), rank == 2 ? "[batch, seq]" : "[seq]");
  }
  for (int64_t b = 0; b < batch; ++b) {
    bool anyReal = false;
    for (int64_t s = 0; s < seq; ++s) {
      size_t i = size_t(b * seq + s);
      bool real = false;
      if (!maskValue(mask, i, real)) {
        char value[32];
        maskValueText(mask, i, value, sizeof(value));
        if (rank == 2)
          return fail(error, length,
                      "%s: padding mask value %s at [%" PRId64 ", %" PRId64
                      "] is not 0 or 1 (1: a real token, 0: padding)",
                      source, value, b, s);
        return fail(error, length,
                    "%s: padding mask value %s at [%" PRId64
                    "] is not 0 or 1 (1: a real token, 0: padding)",
                    source, value, s);
      }
      scratch[i] = real ? 1.0f : 0.0f;
      anyReal |= real;
    }
    if (!anyReal) {
      if (rank == 2)
        return fail(error, length,
                    "%s: row %" PRId64
                    " of the padding mask has no real token (all 0)",
                    source, b);
      return fail(error, length,
                  "%s: the padding mask has no real token (all 0)", source);
    }
  }
  return true;
}

} // namespace

bool prepareMasks(const ModelInfo &model, const TensorRef *inputs,
                  const TensorRef *masks, const char *const *sources,
                  float *const *scratch, InputView *views, char *error,
                  size_t errorLength) {
  for (size_t m = 0; m < model.numMasks; ++m) {
    const MaskInfo &info = model.masks[m];
    if (info.input >= model.numInputs)
      return fail(error, errorLength,
                  "internal error: mask '%s' is of input %zu of %zu", info.name,
                  info.input, model.numInputs);
    if (!prepareMask(model, info, inputs[info.input], views[info.input],
                     masks[m], sources[m], scratch[m],
                     views[model.numInputs + m], error, errorLength))
      return false;
  }
  return true;
}

size_t OutputShape::elements() const {
  size_t count = 1;
  for (int i = 0; i < rank; ++i)
    count *= size_t(shape[i]);
  return count;
}

bool prepareInputs(const ModelInfo &model, const TensorRef *tensors,
                   const char *const *sources, int32_t *const *idScratch,
                   InputView *views, OutputShape &output, char *error,
                   size_t errorLength) {
  if (model.numInputs == 0)
    return fail(error, errorLength,
                "internal error: the compiled model has no inputs");
  bool hasBatch = false;
  for (size_t i = 0; i < model.numInputs; ++i) {
    const InputInfo &info = model.inputs[i];
    int32_t *scratch = idScratch ? idScratch[i] : nullptr;
    if (info.zerosLike >= 0) {
      size_t like = size_t(info.zerosLike);
      if (like >= i || model.inputs[like].kind != InputKind::TokenIds)
        return fail(error, errorLength,
                    "internal error: input '%s' takes the shape of input %zu",
                    info.name, like);
      if (!prepareOptional(model, info, tensors[i], tensors[like], views[like],
                           sources[i], sources[like], scratch, views[i],
                           hasBatch, error, errorLength))
        return false;
      continue;
    }
    if (!prepareOne(model, info, tensors[i], sources[i], scratch, views[i],
                    hasBatch, error, errorLength))
      return false;
    if (i > 0 && views[i].batch != views[0].batch)
      return fail(error, errorLength,
                  "%s: batch %" PRId64 " does not match batch %" PRId64
                  " of %s",
                  sources[i], views[i].batch, views[0].batch, sources[0]);
  }
  const InputView &last = views[model.numInputs - 1];
  if (hasBatch) {
    output.rank = 3;
    output.shape[0] = last.batch;
    output.shape[1] = last.seq;
    output.shape[2] = model.outputWidth;
  } else {
    output.rank = 2;
    output.shape[0] = last.seq;
    output.shape[1] = model.outputWidth;
    output.shape[2] = 0;
  }
  return true;
}

TensorRef DefaultInput::ref() const {
  const void *data = dtype == DType::F32
                         ? static_cast<const void *>(floats.data())
                         : ids.data();
  return {dtype, rank, shape, data};
}

DefaultInput makeDefaultInput(const ModelInfo &model, size_t index) {
  const InputInfo &info = model.inputs[index];
  DefaultInput input;
  input.shape[0] = model.maxBatch;
  input.shape[1] = model.maxSeqLen;
  input.shape[2] = model.dModel;
  size_t count = size_t(model.maxBatch * model.maxSeqLen);
  uint64_t seed = seedForName(info.name);
  if (info.kind == InputKind::TokenIds) {
    input.dtype = DType::I32;
    input.rank = 2;
    input.ids.resize(count);
    fillTokenIds(input.ids.data(), count,
                 info.idBound > 0 ? info.idBound : model.vocabSize, seed);
  } else {
    input.dtype = DType::F32;
    input.rank = 3;
    count *= size_t(model.dModel);
    input.floats.resize(count);
    fillNormal(input.floats.data(), count, 1.0f, seed);
  }
  return input;
}

} // namespace tfm::rt
