//===- Generate.h - text generation with the key/value cache ----*- C++ -*-===//

#ifndef TFM_RUNTIME_GENERATE_H
#define TFM_RUNTIME_GENERATE_H

#include "tfm/runtime/ModelInstance.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfm::rt {

struct GenerateOptions {
  int64_t newTokens = 0;
  /// 0: greedy (argmax, lowest id on ties); else sample from softmax(l / T).
  double temperature = 0.0;
  /// With sampling: only the k most likely tokens (0: all).
  int64_t topK = 0;
  uint64_t seed = 0;
};

struct GenerateResult {
  /// [batch, newTokens], row-major.
  std::vector<int32_t> ids;
  /// [newTokens, batch, vocab]: the logits each new token was chosen from.
  std::vector<float> stepLogits;
  double prefillSeconds = 0, decodeSeconds = 0;
};

/// Runs the prompt `inputs` (the model's inputs, checked: [batch, seq] int32
/// ids; the last one is the sequence that grows) through prefill, then
/// chooses `options.newTokens` tokens, feeding each back through decode.
/// Everything is allocated before the first step. False with `error` when
/// the prompt and the new tokens do not fit the compiled maximum.
bool generate(ModelInstance &instance, const InputView *inputs,
              const GenerateOptions &options, bool keepStepLogits,
              GenerateResult &result, std::string &error);

} // namespace tfm::rt

#endif // TFM_RUNTIME_GENERATE_H
