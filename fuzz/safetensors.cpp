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
#include "tfm/runtime/WeightFormat.h"
#include "tfm/runtime/Weights.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

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

/// makeModel()'s parameters with every rank-2 weight kept as `format`
/// (tfm-compile --weight-dtype).
const ParamInfo *paramsIn(WeightFormat format) {
  static ParamInfo converted[3][std::size(kParams)];
  ParamInfo *params = converted[int(format) - 1];
  for (size_t i = 0; i < std::size(kParams); ++i) {
    params[i] = kParams[i];
    if (kParams[i].rank == 2)
      params[i].format = format;
  }
  return params;
}

/// Loads the file that `model` loaded as `f32` into each weight format:
/// it loads (but for an f16 overflow, named as such), and each converted
/// weight holds its f32 values as that format rounds them.
void loadInEveryFormat(const ModelInfo &model, const Weights &f32,
                       const uint8_t *data, size_t size) {
  for (WeightFormat format :
       {WeightFormat::BF16, WeightFormat::F16, WeightFormat::Int8}) {
    ModelInfo in = model;
    in.params = paramsIn(format);
    Weights weights;
    std::string error;
    if (!weights.loadImage(in, data, size, "fuzz.safetensors", error)) {
      FUZZ_CHECK(format == WeightFormat::F16 &&
                     error.find("beyond float16's largest finite value") !=
                         std::string::npos,
                 "a file f32 loads loads in every format but f16 beyond "
                 "its range");
      continue;
    }
    for (size_t i = 0; i < in.numParams; ++i) {
      const ParamInfo &p = in.params[i];
      size_t elements = 1;
      for (int d = 0; d < p.rank; ++d)
        elements *= size_t(p.shape[d]);
      std::vector<float> expected(f32.pointers()[i],
                                  f32.pointers()[i] + elements);
      size_t at = 0;
      if (p.format != WeightFormat::F32)
        convertWeight(expected.data(), p.shape[0], p.shape[1], p.format, &at);
      FUZZ_CHECK(std::memcmp(expected.data(), weights.pointers()[i],
                             elements * sizeof(float)) == 0,
                 "each weight holds its values as its format rounds them");
    }
  }
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
  loadInEveryFormat(model, weights, data, size);
  return 0;
}
