//===- Generate.cpp - text generation with the key/value cache ------------===//
//
// One prefill over the prompt, then one decode step per new token: each
// step costs one token's work, the cache holding every earlier key and
// value. Choosing a token is the runtime's business (it is not part of the
// model's computation); the model's code only produces logits.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/Generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tfm::rt {

namespace {

/// xoshiro-style splitmix64 stream: deterministic sampling from a seed.
class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }

private:
  uint64_t state;
};

int32_t argmax(const float *logits, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  return int32_t(best);
}

/// Samples from softmax(logits / temperature) over the top `topK` tokens;
/// `order` is scratch of `vocab` ints.
int32_t sample(const float *logits, int64_t vocab, double temperature,
               int64_t topK, Rng &rng, std::vector<int32_t> &order) {
  int64_t k = topK > 0 && topK < vocab ? topK : vocab;
  for (int64_t i = 0; i < vocab; ++i)
    order[size_t(i)] = int32_t(i);
  // The k most likely first; ties by lower id, so the choice is stable.
  std::partial_sort(
      order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
      });
  double top = logits[order[0]];
  double total = 0;
  for (int64_t i = 0; i < k; ++i)
    total += std::exp((double(logits[order[size_t(i)]]) - top) / temperature);
  double target = rng.uniform() * total;
  for (int64_t i = 0; i < k; ++i) {
    target -= std::exp((double(logits[order[size_t(i)]]) - top) / temperature);
    if (target < 0)
      return order[size_t(i)];
  }
  return order[size_t(k - 1)];
}

} // namespace

bool generate(ModelInstance &instance, const InputView *inputs,
              const GenerateOptions &options, bool keepStepLogits,
              GenerateResult &result, std::string &error) {
  const ModelInfo &model = instance.info();
  const InputView &prompt = inputs[model.numInputs - 1];
  int64_t batch = prompt.batch, promptLength = prompt.seq;
  int64_t n = options.newTokens, vocab = model.outputWidth;
  if (promptLength + n > model.maxSeqLen) {
    auto tokens = [](int64_t count) {
      return std::to_string(count) + (count == 1 ? " token" : " tokens");
    };
    error = std::string(model.numInputs > 1 ? "the start of tgt ("
                                            : "the prompt (") +
            tokens(promptLength) + ") and " + tokens(n) +
            " to generate exceed the compiled maximum sequence length " +
            std::to_string(model.maxSeqLen) + " (tfm-compile --max-seq-len)";
    return false;
  }

  result.ids.assign(size_t(batch * n), 0);
  if (keepStepLogits)
    result.stepLogits.assign(size_t(n * batch * vocab), 0.0f);
  std::vector<float> logits(size_t(batch * vocab));
  std::vector<int32_t> tokens(static_cast<size_t>(batch));
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  Rng rng(options.seed);

  auto choose = [&](int64_t step) {
    for (int64_t b = 0; b < batch; ++b) {
      const float *row = logits.data() + b * vocab;
      int32_t id = options.temperature > 0
                       ? sample(row, vocab, options.temperature, options.topK,
                                rng, order)
                       : argmax(row, vocab);
      result.ids[size_t(b * n + step)] = id;
      tokens[size_t(b)] = id;
    }
    if (keepStepLogits)
      std::copy(logits.begin(), logits.end(),
                result.stepLogits.begin() + step * batch * vocab);
  };

  auto start = std::chrono::steady_clock::now();
  instance.prefill(inputs, logits.data());
  auto prefilled = std::chrono::steady_clock::now();
  if (n > 0)
    choose(0);
  InputView step{tokens.data(), batch, 1};
  for (int64_t t = 1; t < n; ++t) {
    instance.decode(step, promptLength + t - 1, logits.data());
    choose(t);
  }
  auto done = std::chrono::steady_clock::now();
  result.prefillSeconds =
      std::chrono::duration<double>(prefilled - start).count();
  result.decodeSeconds =
      std::chrono::duration<double>(done - prefilled).count();
  return true;
}

} // namespace tfm::rt
