//===- npy.cpp - fuzzing the .npy reader and the input checks -------------===//
//
// Any bytes as a .npy file: parseNpy (what readNpy runs on the mapped file),
// then, when it reads, the checks of a forward pass's inputs
// (prepareInputs) for models with token ids, float embeddings and two
// inputs, and as a padding mask (prepareMasks) of ids of its own shape and
// of a fixed one. Beyond not crashing or reading out of bounds: what parses
// holds exactly shape x dtype bytes, accepted inputs are in range, and an
// accepted mask is 1s and 0s with a 1 in every row.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "tfm/runtime/Inputs.h"
#include "tfm/runtime/Npy.h"
#include "tfm/runtime/Shape.h"

#include <cstdint>
#include <cstring>
#include <string>

using namespace tfm::rt;

namespace {

ModelInfo makeModel(const InputInfo *inputs, size_t numInputs,
                    int64_t vocabSize) {
  ModelInfo m{};
  m.name = "fuzz";
  m.inputs = inputs;
  m.numInputs = numInputs;
  m.dModel = 4;
  m.vocabSize = vocabSize;
  m.outputWidth = vocabSize ? vocabSize : 4;
  m.maxSeqLen = 8;
  m.maxBatch = 3;
  return m;
}

const InputInfo kIds[] = {{"input", InputKind::TokenIds}};
const InputInfo kFloats[] = {{"input", InputKind::Embeddings}};
const InputInfo kSeq2Seq[] = {{"src", InputKind::TokenIds},
                              {"tgt", InputKind::TokenIds}};

/// Runs prepareInputs with `tensor` as every input of `model`, and checks
/// what it accepts.
void checkInputs(const ModelInfo &model, const TensorRef &tensor) {
  const size_t n = model.numInputs;
  TensorRef tensors[2] = {tensor, tensor};
  const char *sources[2] = {"fuzz.npy", "fuzz.npy"};
  static int32_t scratch[2][3 * 8];
  int32_t *idScratch[2] = {scratch[0], scratch[1]};
  InputView views[2];
  OutputShape output;
  char error[256];
  error[0] = '\0';
  if (!prepareInputs(model, tensors, sources, idScratch, views, output, error,
                     sizeof(error))) {
    FUZZ_CHECK(error[0] != '\0', "a rejected input says why");
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const InputView &v = views[i];
    FUZZ_CHECK(v.batch >= 1 && v.batch <= model.maxBatch && v.seq >= 1 &&
                   v.seq <= model.maxSeqLen,
               "accepted inputs are within the compiled maxima");
    size_t count = size_t(v.batch * v.seq);
    if (model.inputs[i].kind == InputKind::TokenIds) {
      const auto *ids = static_cast<const int32_t *>(v.data);
      for (size_t e = 0; e < count; ++e)
        FUZZ_CHECK(ids[e] >= 0 && ids[e] < model.vocabSize,
                   "accepted token ids are in range");
    } else {
      // The forward pass reads every float of the view.
      float sum = 0;
      const auto *x = static_cast<const float *>(v.data);
      for (size_t e = 0; e < count * size_t(model.dModel); ++e)
        sum += x[e];
      (void)sum;
    }
  }
  FUZZ_CHECK(output.elements() == size_t(views[n - 1].batch) *
                                      size_t(views[n - 1].seq) *
                                      size_t(model.outputWidth),
             "the output shape follows the last input");
}

const MaskInfo kMask[] = {{"mask", 0}};

/// Runs prepareMasks with `mask` as the padding mask of token ids of shape
/// `shape` (rank 1 or 2), and checks what it accepts.
void checkMask(const TensorRef &mask, const int64_t *shape, int rank) {
  ModelInfo model = makeModel(kIds, 1, 50);
  model.masks = kMask;
  model.numMasks = 1;
  static int32_t ids[3 * 8];
  TensorRef input = {DType::I32, rank, shape, ids};
  const char *source = "ids.npy";
  InputView views[2];
  OutputShape output;
  char error[256];
  if (!prepareInputs(model, &input, &source, nullptr, views, output, error,
                     sizeof(error)))
    return;
  static float scratch[3 * 8];
  float *maskScratch = scratch;
  const char *maskSource = "fuzz.npy";
  error[0] = '\0';
  if (!prepareMasks(model, &input, &mask, &maskSource, &maskScratch, views,
                    error, sizeof(error))) {
    FUZZ_CHECK(std::strncmp(error, "fuzz.npy: ", 10) == 0,
               "a rejected mask is named in the message");
    return;
  }
  const InputView &m = views[1];
  FUZZ_CHECK(m.batch == views[0].batch && m.seq == views[0].seq,
             "an accepted mask has its input's batch and seq");
  for (int64_t b = 0; b < m.batch; ++b) {
    bool real = false;
    for (int64_t s = 0; s < m.seq; ++s) {
      float v = scratch[b * m.seq + s];
      FUZZ_CHECK(v == 0.0f || v == 1.0f, "an accepted mask is 1s and 0s");
      real |= v == 1.0f;
    }
    FUZZ_CHECK(real, "every row of an accepted mask has a real token");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  NpyArray array;
  std::string error;
  if (!parseNpy(data, size, "fuzz.npy", array, error)) {
    FUZZ_CHECK(error.rfind("fuzz.npy: ", 0) == 0,
               "a rejected file is named in the message");
    return 0;
  }
  uint64_t elements = 0;
  FUZZ_CHECK(checkedElementCount(array.shape.data(), array.shape.size(),
                                 dtypeSize(array.dtype), size, elements),
             "a file that parses holds its whole shape");
  // Every byte of the data is there (ASan checks the reads).
  size_t bytes = size_t(elements) * dtypeSize(array.dtype);
  unsigned char acc = 0;
  const auto *p = static_cast<const unsigned char *>(array.data.data());
  for (size_t i = 0; i < bytes; ++i)
    acc ^= p[i];
  (void)acc;

  TensorRef tensor = array.ref();
  checkInputs(makeModel(kIds, 1, 50), tensor);
  checkInputs(makeModel(kFloats, 1, 0), tensor);
  checkInputs(makeModel(kSeq2Seq, 2, 1000), tensor);
  // As a mask: of ids of its own shape (when that is one ids may have),
  // and of [2, 3].
  if (tensor.rank == 1 || tensor.rank == 2)
    checkMask(tensor, tensor.shape, tensor.rank);
  const int64_t fixed[2] = {2, 3};
  checkMask(tensor, fixed, 2);
  return 0;
}
