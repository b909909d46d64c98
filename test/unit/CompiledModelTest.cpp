//===- CompiledModelTest.cpp - a compiled model allocates nothing ---------===//
//
// Linked with examples/tiny-decoder.json as tfm-compile --emit=obj makes it
// (the Highway backend's, test/unit/CMakeLists.txt) and with
// AllocationCounter.cpp: after create, a forward pass, a prefill and each
// decode step take no heap memory (contract section 5), also when they
// reject an input. And its padding mask (contract section 8) through the C
// API and the executable (TFM_COMPILED_MODEL): with rotary positions a
// left-padded prompt's real positions compute what the unpadded one does
// (padded keys hidden), a null mask is none, generation takes none yet.
//
//===----------------------------------------------------------------------===//

#include "AllocationCounter.h"
#include "CompiledApiTestUtil.h"
#include "RuntimeTestUtil.h"
#include "tfm/runtime/Npy.h"
#include "tiny_decoder.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
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

// Padding masks
//===----------------------------------------------------------------------===//

using tfm::test::tensor;

using Result = tfm::test::ForwardResult;

Result forward(tfm_model *model, const std::vector<tfm_tensor> &inputs) {
  return tfm::test::runForward(tiny_decoder_forward, tiny_decoder_last_error,
                               model, inputs);
}

/// Logits of positions [from, from + count) of an unbatched result.
std::vector<float> positions(const std::vector<float> &logits, int64_t from,
                             int64_t count) {
  return std::vector<float>(logits.begin() + from * kVocab,
                            logits.begin() + (from + count) * kVocab);
}

/// max |a - b| / (1 + max |b|): contract section 6's measure.
double relativeDiff(const std::vector<float> &a, const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size())
    return INFINITY;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return diff / (1 + scale);
}

const std::vector<int32_t> kPrompt = {5, 17, 3, 42, 8, 8, 60, 1, 33};

// Rotary positions make a score depend on i - j alone, so left padding
// (which shifts the real tokens) changes nothing for them once the padded
// keys are hidden; without the mask they are attended to.
TEST(CompiledModelMasks, LeftPaddingHidesThePaddedKeys) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t n = int64_t(kPrompt.size());
  Result alone = forward(model.get(), {tensor(TFM_I32, {n}, kPrompt.data())});
  ASSERT_EQ(alone.status, 0) << alone.error;
  for (int64_t pad : {1, 3, 7}) {
    SCOPED_TRACE("left padding " + std::to_string(pad));
    std::vector<int32_t> padded(size_t(pad), 0);
    padded.insert(padded.end(), kPrompt.begin(), kPrompt.end());
    std::vector<int32_t> mask(size_t(pad), 0);
    mask.resize(padded.size(), 1);
    const int64_t seq = int64_t(padded.size());
    Result masked =
        forward(model.get(), {tensor(TFM_I32, {1, seq}, padded.data()),
                              tensor(TFM_I32, {1, seq}, mask.data())});
    ASSERT_EQ(masked.status, 0) << masked.error;
    EXPECT_LE(relativeDiff(positions(masked.out, pad, n), alone.out), 1e-5);
    Result unmasked =
        forward(model.get(), {tensor(TFM_I32, {1, seq}, padded.data())});
    ASSERT_EQ(unmasked.status, 0) << unmasked.error;
    EXPECT_GT(relativeDiff(positions(unmasked.out, pad, n), alone.out), 1e-3);
  }
}

// Right padding, causal: the real positions never saw the padding anyway;
// with the mask they still compute the shorter prompt.
TEST(CompiledModelMasks, RightPaddingComputesTheShorterPrompt) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t n = int64_t(kPrompt.size());
  Result alone = forward(model.get(), {tensor(TFM_I32, {n}, kPrompt.data())});
  ASSERT_EQ(alone.status, 0) << alone.error;
  std::vector<int32_t> padded = kPrompt;
  padded.resize(16, 63);
  std::vector<int64_t> mask(16, 0);
  for (int64_t s = 0; s < n; ++s)
    mask[size_t(s)] = 1;
  Result masked = forward(model.get(), {tensor(TFM_I32, {16}, padded.data()),
                                        tensor(TFM_I64, {16}, mask.data())});
  ASSERT_EQ(masked.status, 0) << masked.error;
  EXPECT_LE(relativeDiff(positions(masked.out, 0, n), alone.out), 1e-5);
  EXPECT_TRUE(
      finite(tensor(TFM_F32, {16, kVocab}, masked.out.data()), 16 * kVocab));
}

TEST(CompiledModelMasks, NullMaskIsNoMask) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t n = int64_t(kPrompt.size());
  tfm_tensor input = tensor(TFM_I32, {1, n}, kPrompt.data());
  Result plain = forward(model.get(), {input});
  ASSERT_EQ(plain.status, 0) << plain.error;
  Result absent =
      forward(model.get(), {input, tensor(TFM_I32, {1, n}, nullptr)});
  ASSERT_EQ(absent.status, 0) << absent.error;
  EXPECT_EQ(absent.out, plain.out);
  std::vector<uint8_t> ones(size_t(n), 1);
  Result allOnes =
      forward(model.get(), {input, tensor(TFM_BOOL, {1, n}, ones.data())});
  ASSERT_EQ(allOnes.status, 0) << allOnes.error;
  EXPECT_EQ(allOnes.out, plain.out);
}

TEST(CompiledModelMasks, BadMaskOrCountReturnsOne) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t n = int64_t(kPrompt.size());
  tfm_tensor input = tensor(TFM_I32, {n}, kPrompt.data());
  std::vector<int32_t> mask(size_t(n), 1);
  mask[2] = 2;
  Result r = forward(model.get(), {input, tensor(TFM_I32, {n}, mask.data())});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.error, "input 'mask': padding mask value 2 at [2] is not 0 or 1 "
                     "(1: a real token, 0: padding)");
  mask[2] = 1;
  r = forward(model.get(), {input, tensor(TFM_I32, {1, n}, mask.data())});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.error, "input 'mask': a padding mask of shape [1, 9] does not "
                     "match input 'input' (expected [9], the input's [seq])");
  r = forward(model.get(), {input, tensor(TFM_I32, {n}, mask.data()), input});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.error, "tiny_decoder: expected 1 input(s), or 2 with the "
                     "padding masks, got 3");
  r = forward(model.get(), {input, tensor(TFM_I32, {n}, mask.data())});
  EXPECT_EQ(r.status, 0) << r.error;
}

TEST(CompiledModelMasks, GenerationTakesNoMaskYet) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t n = int64_t(kPrompt.size());
  std::vector<int32_t> mask(size_t(n), 1);
  tfm_tensor inputs[2] = {tensor(TFM_I32, {n}, kPrompt.data()),
                          tensor(TFM_I32, {n}, mask.data())};
  tfm_tensor output = {};
  EXPECT_EQ(tiny_decoder_prefill(model.get(), inputs, 2, &output), 1);
  EXPECT_STREQ(tiny_decoder_last_error(model.get()),
               "tiny_decoder: prefill takes no padding mask yet: give the 1 "
               "input(s) alone");
  // Not even an absent one.
  inputs[1].data = nullptr;
  EXPECT_EQ(tiny_decoder_prefill(model.get(), inputs, 2, &output), 1);
  EXPECT_STREQ(tiny_decoder_last_error(model.get()),
               "tiny_decoder: prefill takes no padding mask yet: give the 1 "
               "input(s) alone");
  // A refused prefill is no prefill.
  std::vector<int32_t> next = {4};
  tfm_tensor token = ids(next);
  EXPECT_EQ(tiny_decoder_decode(model.get(), &token, &output), 1);
  EXPECT_STREQ(tiny_decoder_last_error(model.get()),
               "tiny_decoder: decode needs a prefill first");
  EXPECT_EQ(tiny_decoder_prefill(model.get(), inputs, 3, &output), 1);
  EXPECT_STREQ(tiny_decoder_last_error(model.get()),
               "tiny_decoder: expected 1 input(s), got 3");
  ASSERT_EQ(tiny_decoder_prefill(model.get(), inputs, 1, &output), 0)
      << tiny_decoder_last_error(model.get());
  // The prefill's logits are the forward pass's at the last position.
  std::vector<float> last(static_cast<float *>(output.data),
                          static_cast<float *>(output.data) + kVocab);
  Result full = forward(model.get(), {inputs[0]});
  ASSERT_EQ(full.status, 0);
  EXPECT_LE(relativeDiff(last, positions(full.out, n - 1, 1)), 1e-5);
}

// Left padding leaves the first rows with no key at all (contract section
// 8: unspecified values), the same for any thread count.
TEST(CompiledModelMasks, RowsWithNoKeyDoNotDependOnThreads) {
  std::vector<int32_t> padded(5, 0);
  padded.insert(padded.end(), kPrompt.begin(), kPrompt.end());
  std::vector<int32_t> mask(5, 0);
  mask.resize(padded.size(), 1);
  const int64_t seq = int64_t(padded.size());
  std::vector<std::vector<float>> results;
  for (const char *threads : {"1", "4"}) {
    setenv("TFM_NUM_THREADS", threads, 1);
    ModelPtr model = create();
    ASSERT_TRUE(model);
    Result r = forward(model.get(), {tensor(TFM_I32, {seq}, padded.data()),
                                     tensor(TFM_I32, {seq}, mask.data())});
    ASSERT_EQ(r.status, 0) << r.error;
    results.push_back(r.out);
  }
  unsetenv("TFM_NUM_THREADS");
  EXPECT_EQ(results[0], results[1]);
}

// The executable
//===----------------------------------------------------------------------===//

RunResult run(const std::string &args) {
  return runCommand(std::string(TFM_COMPILED_MODEL) + " " + args);
}

void expectUserError(const RunResult &result, const std::string &message) {
  EXPECT_EQ(result.exitCode, 1) << result.err;
  EXPECT_NE(result.err.find("error: " + message), std::string::npos)
      << "stderr: " << result.err;
  EXPECT_EQ(result.out, "");
}

TEST(CompiledModelCli, GenerateRefusesMasksAndAttentionDumps) {
  std::string prompt = tempPath("prompt.npy");
  writeFile(prompt, npyImage("<i4", {3}, i32Bytes({3, 1, 4})));
  std::string mask = tempPath("mask.npy");
  writeFile(mask, npyImage("<i4", {3}, i32Bytes({1, 1, 1})));
  std::string dir = tempPath("maps");
  ASSERT_EQ(runCommand("mkdir -p " + dir).exitCode, 0);
  expectUserError(
      run("--generate 2 --input input=" + prompt + " --input mask=" + mask),
      "--input mask: --generate takes no padding mask yet");
  expectUserError(
      run("--generate 2 --input input=" + prompt + " --dump-attention " + dir),
      "--dump-attention writes the weights of a forward pass; "
      "it does not go with --generate");
  expectUserError(run("--dump-attention " + dir + " --generate 2"),
                  "--dump-attention writes the weights of a forward pass; "
                  "it does not go with --generate");
  // Nothing was written on the way.
  EXPECT_EQ(runCommand("ls -A " + dir).out, "");
  RunResult ok = run("--generate 2 --input input=" + prompt);
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
}

// A left-padded prompt's file and its mask file: the dump's causal maps
// are 0 on the padded keys and after the query.
TEST(CompiledModelCli, MaskFileAndCausalAttentionDump) {
  std::vector<int32_t> padded = {0, 0};
  padded.insert(padded.end(), kPrompt.begin(), kPrompt.end());
  const int64_t seq = int64_t(padded.size()), n = int64_t(kPrompt.size());
  std::string input = tempPath("ids.npy");
  writeFile(input, npyImage("<i4", {1, seq}, i32Bytes(padded)));
  std::vector<float> maskValues(size_t(seq), 1.0f);
  maskValues[0] = maskValues[1] = 0.0f;
  std::string mask = tempPath("mask.npy");
  writeFile(mask, npyImage("<f4", {1, seq}, f32Bytes(maskValues)));
  std::string dir = tempPath("maps");
  ASSERT_EQ(runCommand("mkdir -p " + dir).exitCode, 0);
  std::string out = tempPath("out.npy");
  RunResult result = run("--input input=" + input + " --input mask=" + mask +
                         " --output " + out + " --dump-attention " + dir);
  ASSERT_EQ(result.exitCode, 0) << result.err;
  tfm::rt::NpyArray logits;
  std::string error;
  ASSERT_TRUE(tfm::rt::readNpy(out.c_str(), logits, error)) << error;
  ASSERT_EQ(logits.shape, std::vector<int64_t>({1, seq, kVocab}));
  const float *data = static_cast<const float *>(logits.data.data());
  std::vector<float> all(data, data + seq * kVocab);
  ModelPtr model = create();
  ASSERT_TRUE(model);
  Result alone = forward(model.get(), {tensor(TFM_I32, {n}, kPrompt.data())});
  ASSERT_EQ(alone.status, 0) << alone.error;
  EXPECT_LE(relativeDiff(positions(all, 2, n), alone.out), 1e-5);
  for (const char *name : {"layer0.self", "layer1.self"}) {
    SCOPED_TRACE(name);
    tfm::rt::NpyArray map;
    ASSERT_TRUE(
        tfm::rt::readNpy((dir + "/" + name + ".npy").c_str(), map, error))
        << error;
    ASSERT_EQ(map.shape, std::vector<int64_t>({1, 4, seq, seq}));
    const float *w = static_cast<const float *>(map.data.data());
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 2; i < seq; ++i) { // the real queries
        const float *row = w + (h * seq + i) * seq;
        double sum = 0;
        for (int64_t j = 0; j < seq; ++j) {
          sum += row[j];
          if (j < 2 || j > i)
            ASSERT_EQ(row[j], 0.0f)
                << "head " << h << " query " << i << " key " << j;
        }
        ASSERT_NEAR(sum, 1.0, 1e-5) << "head " << h << " query " << i;
      }
  }
}

} // namespace
