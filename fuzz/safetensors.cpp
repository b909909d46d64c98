//===- safetensors.cpp - fuzzing the safetensors reader and weight loading ===//
//
// Any bytes as a weights file: the header checks (SafetensorsFile) and the
// loading against a small fixed model (Weights: names and aliases, shapes,
// dtypes F32/F16/BF16, in place or converted). Beyond not crashing or
// reading out of bounds: every tensor of a file that parses lies inside
// it, and loaded weights are readable over their whole shape.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "tfm/runtime/Safetensors.h"
#include "tfm/runtime/Shape.h"
#include "tfm/runtime/Weights.h"

#include <cstdint>
#include <string>

using namespace tfm::rt;

namespace {

// Names in the style of a real model, one with an alias (as an
// encoder-decoder's embeddings have), ranks 1 to 4.
const ParamInfo kParams[] = {
    {"src_embed.weight", "embed.weight", 2, {5, 4}, ParamInit::Normal, 1.0f},
    {"tgt_embed.weight", "embed.weight", 2, {5, 4}, ParamInit::Normal, 1.0f},
    {"layers.0.norm1.weight", nullptr, 1, {4}, ParamInit::Ones, 0.0f},
    {"layers.0.score.w_key", nullptr, 3, {2, 3, 2}, ParamInit::Uniform, 0.5f},
    {"x", nullptr, 4, {1, 2, 1, 3}, ParamInit::Zeros, 0.0f},
};
const InputInfo kInputs[] = {{"input", InputKind::TokenIds}};

ModelInfo makeModel() {
  ModelInfo m{};
  m.name = "fuzz";
  m.params = kParams;
  m.numParams = std::size(kParams);
  m.inputs = kInputs;
  m.numInputs = 1;
  m.dModel = 4;
  m.vocabSize = 5;
  m.outputWidth = 5;
  m.maxSeqLen = 8;
  m.maxBatch = 1;
  return m;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string error;
  SafetensorsFile file;
  if (file.parse(data, size, "fuzz.safetensors", error)) {
    for (const SafetensorsTensor &t : file.tensors()) {
      FUZZ_CHECK(t.data >= data && t.bytes <= size &&
                     size_t(t.data - data) <= size - t.bytes,
                 "every tensor lies inside the file");
      uint64_t elements = 0;
      FUZZ_CHECK(checkedElementCount(t.shape.data(), t.shape.size(),
                                     tensorDTypeSize(t.dtype), size,
                                     elements) &&
                     elements * tensorDTypeSize(t.dtype) == t.bytes,
                 "a tensor's bytes are its shape times its dtype");
      FUZZ_CHECK(file.find(t.name) == &t, "every tensor is found by name");
    }
  } else {
    FUZZ_CHECK(error.rfind("fuzz.safetensors: ", 0) == 0,
               "a rejected file is named in the message");
  }

  static const ModelInfo model = makeModel();
  Weights weights;
  error.clear();
  if (!weights.loadImage(model, data, size, "fuzz.safetensors", error)) {
    FUZZ_CHECK(!error.empty(), "a rejected file says why");
    return 0;
  }
  // The forward pass reads every float of every parameter.
  float sum = 0;
  for (size_t i = 0; i < model.numParams; ++i) {
    const ParamInfo &p = model.params[i];
    size_t elements = 1;
    for (int d = 0; d < p.rank; ++d)
      elements *= size_t(p.shape[d]);
    const float *w = weights.pointers()[i];
    FUZZ_CHECK(w != nullptr, "every parameter is loaded");
    for (size_t e = 0; e < elements; ++e)
      sum += w[e];
  }
  (void)sum;
  return 0;
}
