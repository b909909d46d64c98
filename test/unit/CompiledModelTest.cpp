//===- CompiledModelTest.cpp - a compiled model allocates nothing ---------===//
//
// Linked with examples/tiny-decoder.json as tfm-compile --emit=obj makes it
// (the Highway backend's, test/unit/CMakeLists.txt) and with
// AllocationCounter.cpp: after create, a forward pass, a prefill and each
// decode step take no heap memory (contract section 5), also when they
// reject an input.
//
//===----------------------------------------------------------------------===//

#include "AllocationCounter.h"
#include "tiny_decoder.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

using namespace tfm::test;

namespace {

// tiny_decoder: token ids, vocab 64, max_seq_len 16.
constexpr int64_t kVocab = 64;

tfm_tensor ids(std::vector<int32_t> &tokens) {
  tfm_tensor t = {};
  t.dtype = TFM_I32;
  t.rank = 1;
  t.shape[0] = int64_t(tokens.size());
  t.data = tokens.data();
  return t;
}

struct ModelDeleter {
  void operator()(tfm_model *m) const { tiny_decoder_destroy(m); }
};
using ModelPtr = std::unique_ptr<tfm_model, ModelDeleter>;

ModelPtr create() {
  char err[512] = "x";
  ModelPtr model(tiny_decoder_create(nullptr, err, sizeof(err)));
  EXPECT_TRUE(model) << err;
  return model;
}

bool finite(const tfm_tensor &t, int64_t count) {
  const float *data = static_cast<const float *>(t.data);
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(data[i]))
      return false;
  return true;
}

TEST(CompiledModel, ForwardAllocatesNothing) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7};
  tfm_tensor input = ids(tokens);
  tfm_tensor output = {};
  ASSERT_EQ(tiny_decoder_forward(model.get(), &input, 1, &output), 0)
      << tiny_decoder_last_error(model.get());
  ASSERT_TRUE(finite(output, 7 * kVocab));
  uint64_t before = allocationCount();
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(tiny_decoder_forward(model.get(), &input, 1, &output), 0);
  tokens[2] = int32_t(kVocab); // and neither does rejecting an input
  EXPECT_EQ(tiny_decoder_forward(model.get(), &input, 1, &output), 1);
  EXPECT_EQ(allocationCount(), before);
}

TEST(CompiledModel, GenerationAllocatesNothing) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  std::vector<int32_t> prompt = {3, 1, 4};
  tfm_tensor input = ids(prompt);
  tfm_tensor output = {};
  // A first round, so what is made once per model is made before counting.
  ASSERT_EQ(tiny_decoder_prefill(model.get(), &input, 1, &output), 0)
      << tiny_decoder_last_error(model.get());
  std::vector<int32_t> next = {1};
  tfm_tensor token = ids(next);
  ASSERT_EQ(tiny_decoder_decode(model.get(), &token, &output), 0)
      << tiny_decoder_last_error(model.get());
  uint64_t before = allocationCount();
  ASSERT_EQ(tiny_decoder_prefill(model.get(), &input, 1, &output), 0);
  for (int32_t step = 0; step < 6; ++step) {
    next[0] = step + 5;
    ASSERT_EQ(tiny_decoder_decode(model.get(), &token, &output), 0)
        << tiny_decoder_last_error(model.get());
    ASSERT_TRUE(finite(output, kVocab));
  }
  next[0] = -1; // rejected, without allocating either
  EXPECT_EQ(tiny_decoder_decode(model.get(), &token, &output), 1);
  EXPECT_EQ(allocationCount(), before);
}

} // namespace
