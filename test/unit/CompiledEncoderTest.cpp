//===- CompiledEncoderTest.cpp - padding masks of a compiled encoder ------===//
//
// Linked with examples/tiny-encoder.json as tfm-compile --emit=obj makes it
// (the Highway backend's, --max-batch=3 --max-seq-len=160: see
// test/unit/CMakeLists.txt): float embeddings, sinusoidal positions, full
// attention in blocks of 64 keys. Padding masks (contract section 8)
// through the C API: padded keys are never attended to, so a right-padded
// row computes what the shorter sequence alone does; what the padded
// positions hold changes no real one; a mask of ones or none is no mask.
// The attention maps (contract section 9) under a mask. And the same
// model's executable (TFM_COMPILED_MODEL) with mask files and
// --dump-attention.
//
//===----------------------------------------------------------------------===//

#include "AllocationCounter.h"
#include "CompiledApiTestUtil.h"
#include "RuntimeTestUtil.h"
#include "tfm/runtime/AttentionWeights.h"
#include "tfm/runtime/Model.h"
#include "tfm/runtime/Npy.h"
#include "tiny_encoder.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace tfm::test;

namespace {

// tiny_encoder: embeddings of d_model 32 in, hidden states of 32 out;
// batch <= 3, seq <= 160; 4 heads; key blocks of 64.
constexpr int64_t kWidth = 32, kMaxBatch = 3, kMaxSeq = 160, kHeads = 4;

using tfm::test::tensor;

struct ModelDeleter {
  void operator()(tfm_model *m) const { tiny_encoder_destroy(m); }
};
using ModelPtr = std::unique_ptr<tfm_model, ModelDeleter>;

ModelPtr create() {
  char err[512] = "x";
  ModelPtr model(tiny_encoder_create(nullptr, err, sizeof(err)));
  EXPECT_TRUE(model) << err;
  return model;
}

using Result = tfm::test::ForwardResult;

Result forward(tfm_model *model, const std::vector<tfm_tensor> &inputs) {
  return tfm::test::runForward(tiny_encoder_forward, tiny_encoder_last_error,
                               model, inputs);
}

/// Embeddings N(0, 1), [batch, seq, 32].
std::vector<float> embeddings(int64_t batch, int64_t seq, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(size_t(batch * seq * kWidth));
  for (float &v : x)
    v = normal(rng);
  return x;
}

/// Right padding: row b's first lengths[b] positions are real.
std::vector<int32_t> rightPadding(const std::vector<int64_t> &lengths,
                                  int64_t seq) {
  std::vector<int32_t> mask;
  for (int64_t length : lengths)
    for (int64_t s = 0; s < seq; ++s)
      mask.push_back(s < length ? 1 : 0);
  return mask;
}

/// Row b of a [batch, seq, width] tensor, its first `positions` positions.
std::vector<float> rowPrefix(const std::vector<float> &x, int64_t seq,
                             int64_t b, int64_t positions) {
  auto begin = x.begin() + b * seq * kWidth;
  return std::vector<float>(begin, begin + positions * kWidth);
}

double maxAbsDiff(const std::vector<float> &a, const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
  if (a.size() != b.size())
    return INFINITY;
  return diff;
}

bool allFinite(const std::vector<float> &x) {
  for (float v : x)
    if (!std::isfinite(v))
      return false;
  return true;
}

// A right-padded row attends to its real keys only: its real positions get
// what the unpadded shorter sequence gets on its own (the padding is whole
// 64-key blocks in some rows, part of one in others, none in another).
TEST(CompiledEncoder, RightPaddingComputesTheShorterSequence) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  for (const std::vector<int64_t> &lengths :
       {std::vector<int64_t>{160, 65, 1}, std::vector<int64_t>{20, 127, 128},
        std::vector<int64_t>{64, 100, 159}}) {
    const int64_t batch = int64_t(lengths.size()), seq = kMaxSeq;
    SCOPED_TRACE("lengths " + std::to_string(lengths[0]) + ", " +
                 std::to_string(lengths[1]) + ", " +
                 std::to_string(lengths[2]));
    std::vector<float> x = embeddings(batch, seq, uint32_t(lengths[1]));
    std::vector<int32_t> mask = rightPadding(lengths, seq);
    Result padded =
        forward(model.get(), {tensor(TFM_F32, {batch, seq, kWidth}, x.data()),
                              tensor(TFM_I32, {batch, seq}, mask.data())});
    ASSERT_EQ(padded.status, 0) << padded.error;
    EXPECT_EQ(padded.shape, std::vector<int64_t>({batch, seq, kWidth}));
    // Padded query rows are computed like any other row.
    EXPECT_TRUE(allFinite(padded.out));
    Result unmasked =
        forward(model.get(), {tensor(TFM_F32, {batch, seq, kWidth}, x.data())});
    ASSERT_EQ(unmasked.status, 0) << unmasked.error;
    for (int64_t b = 0; b < batch; ++b) {
      SCOPED_TRACE("row " + std::to_string(b));
      const int64_t length = lengths[size_t(b)];
      std::vector<float> alone = rowPrefix(x, seq, b, length);
      Result shorter = forward(
          model.get(), {tensor(TFM_F32, {length, kWidth}, alone.data())});
      ASSERT_EQ(shorter.status, 0) << shorter.error;
      EXPECT_LE(maxAbsDiff(rowPrefix(padded.out, seq, b, length), shorter.out),
                1e-5);
      // Without the mask the padding is attended to: something else.
      if (length < seq)
        EXPECT_GT(
            maxAbsDiff(rowPrefix(unmasked.out, seq, b, length), shorter.out),
            1e-3);
      else
        EXPECT_EQ(rowPrefix(unmasked.out, seq, b, length),
                  rowPrefix(padded.out, seq, b, length));
    }
  }
}

// Padding anywhere (not only on the right): whatever the padded positions
// hold, the real positions' outputs are the same, bit for bit (a padded
// key's weight is exactly 0).
TEST(CompiledEncoder, PaddedPositionsDoNotReachRealOnes) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t batch = kMaxBatch, seq = 150;
  std::mt19937 rng(7);
  std::bernoulli_distribution hole(0.4);
  std::vector<uint8_t> mask(size_t(batch * seq));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      // Row 0: holes; row 1: left padding of more than a block; row 2:
      // one real token in the middle.
      bool real = b == 0 ? !hole(rng) : b == 1 ? s >= 70 : s == 75;
      mask[size_t(b * seq + s)] = real ? 1 : 0;
    }
  std::vector<float> x = embeddings(batch, seq, 11);
  std::vector<float> other = x;
  std::uniform_real_distribution<float> garbage(-100, 100);
  for (size_t i = 0; i < mask.size(); ++i)
    if (!mask[i])
      for (int64_t c = 0; c < kWidth; ++c)
        other[i * kWidth + size_t(c)] = garbage(rng);
  tfm_tensor maskTensor = tensor(TFM_BOOL, {batch, seq}, mask.data());
  Result a =
      forward(model.get(),
              {tensor(TFM_F32, {batch, seq, kWidth}, x.data()), maskTensor});
  Result b =
      forward(model.get(), {tensor(TFM_F32, {batch, seq, kWidth}, other.data()),
                            maskTensor});
  ASSERT_EQ(a.status, 0) << a.error;
  ASSERT_EQ(b.status, 0) << b.error;
  EXPECT_TRUE(allFinite(b.out));
  size_t real = 0;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i])
      continue;
    ++real;
    for (int64_t c = 0; c < kWidth; ++c) {
      size_t at = i * kWidth + size_t(c);
      ASSERT_EQ(a.out[at], b.out[at])
          << "position " << i / seq << ", " << i % seq << " feature " << c;
    }
  }
  EXPECT_GT(real, 60u);
}

// Data NULL is no mask; so is a mask of ones; every dtype of a mask is the
// same mask; a mask given once does not stay for the next call.
TEST(CompiledEncoder, AbsentOrAllOnesMaskIsNoMask) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t batch = 2, seq = 90;
  std::vector<float> x = embeddings(batch, seq, 3);
  tfm_tensor input = tensor(TFM_F32, {batch, seq, kWidth}, x.data());
  Result plain = forward(model.get(), {input});
  ASSERT_EQ(plain.status, 0) << plain.error;
  Result absent =
      forward(model.get(), {input, tensor(TFM_I32, {batch, seq}, nullptr)});
  ASSERT_EQ(absent.status, 0) << absent.error;
  EXPECT_EQ(absent.out, plain.out);
  // Even a null mask of another dtype and shape is just absent.
  tfm_tensor odd = tensor(42, {7}, nullptr);
  Result absentOdd = forward(model.get(), {input, odd});
  ASSERT_EQ(absentOdd.status, 0) << absentOdd.error;
  EXPECT_EQ(absentOdd.out, plain.out);

  std::vector<int32_t> ones32(size_t(batch * seq), 1);
  std::vector<int64_t> ones64(size_t(batch * seq), 1);
  std::vector<uint8_t> onesBool(size_t(batch * seq), 1);
  std::vector<float> onesF32(size_t(batch * seq), 1.0f);
  for (tfm_tensor ones : {tensor(TFM_I32, {batch, seq}, ones32.data()),
                          tensor(TFM_I64, {batch, seq}, ones64.data()),
                          tensor(TFM_BOOL, {batch, seq}, onesBool.data()),
                          tensor(TFM_F32, {batch, seq}, onesF32.data())}) {
    SCOPED_TRACE("dtype " + std::to_string(ones.dtype));
    Result r = forward(model.get(), {input, ones});
    ASSERT_EQ(r.status, 0) << r.error;
    EXPECT_EQ(r.out, plain.out);
  }

  // One padding mask in four dtypes: one result.
  std::vector<int64_t> lengths = {90, 33};
  std::vector<int32_t> m32 = rightPadding(lengths, seq);
  std::vector<int64_t> m64(m32.begin(), m32.end());
  std::vector<uint8_t> mBool(m32.begin(), m32.end());
  std::vector<float> mF32(m32.begin(), m32.end());
  Result masked =
      forward(model.get(), {input, tensor(TFM_I32, {batch, seq}, m32.data())});
  ASSERT_EQ(masked.status, 0) << masked.error;
  EXPECT_NE(masked.out, plain.out);
  for (tfm_tensor m : {tensor(TFM_I64, {batch, seq}, m64.data()),
                       tensor(TFM_BOOL, {batch, seq}, mBool.data()),
                       tensor(TFM_F32, {batch, seq}, mF32.data())}) {
    SCOPED_TRACE("dtype " + std::to_string(m.dtype));
    Result r = forward(model.get(), {input, m});
    ASSERT_EQ(r.status, 0) << r.error;
    EXPECT_EQ(r.out, masked.out);
  }
  // The next call without a mask has none.
  Result after = forward(model.get(), {input});
  ASSERT_EQ(after.status, 0) << after.error;
  EXPECT_EQ(after.out, plain.out);
  after = forward(model.get(), {input, tensor(TFM_I32, {batch, seq}, nullptr)});
  ASSERT_EQ(after.status, 0) << after.error;
  EXPECT_EQ(after.out, plain.out);
}

// An unbatched input takes a [seq] mask, as the input's shape goes.
TEST(CompiledEncoder, UnbatchedInputTakesASeqMask) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t seq = 40, length = 25;
  std::vector<float> x = embeddings(1, seq, 5);
  std::vector<int64_t> mask(size_t(seq), 0);
  for (int64_t s = 0; s < length; ++s)
    mask[size_t(s)] = 1;
  Result padded =
      forward(model.get(), {tensor(TFM_F32, {seq, kWidth}, x.data()),
                            tensor(TFM_I64, {seq}, mask.data())});
  ASSERT_EQ(padded.status, 0) << padded.error;
  EXPECT_EQ(padded.shape, std::vector<int64_t>({seq, kWidth}));
  std::vector<float> alone = rowPrefix(x, seq, 0, length);
  Result shorter =
      forward(model.get(), {tensor(TFM_F32, {length, kWidth}, alone.data())});
  ASSERT_EQ(shorter.status, 0) << shorter.error;
  EXPECT_LE(maxAbsDiff(rowPrefix(padded.out, seq, 0, length), shorter.out),
            1e-5);
}

TEST(CompiledEncoder, BadMasksReturnOneNamingTheMask) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t batch = 2, seq = 6;
  std::vector<float> x = embeddings(batch, seq, 1);
  tfm_tensor input = tensor(TFM_F32, {batch, seq, kWidth}, x.data());
  auto error = [&](tfm_tensor mask) {
    Result r = forward(model.get(), {input, mask});
    EXPECT_EQ(r.status, 1);
    return r.error;
  };
  std::vector<int32_t> mask = {1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1};
  mask[4] = 2;
  EXPECT_EQ(error(tensor(TFM_I32, {batch, seq}, mask.data())),
            "input 'mask': padding mask value 2 at [0, 4] is not 0 or 1 (1: a "
            "real token, 0: padding)");
  mask[4] = 0;
  std::vector<float> half(12, 1.0f);
  half[11] = 0.5f;
  EXPECT_EQ(error(tensor(TFM_F32, {batch, seq}, half.data())),
            "input 'mask': padding mask value 0.5 at [1, 5] is not 0 or 1 (1: "
            "a real token, 0: padding)");
  half[11] = std::nanf("");
  EXPECT_EQ(error(tensor(TFM_F32, {batch, seq}, half.data())),
            "input 'mask': padding mask value nan at [1, 5] is not 0 or 1 (1: "
            "a real token, 0: padding)");
  std::vector<int32_t> emptyRow = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(error(tensor(TFM_I32, {batch, seq}, emptyRow.data())),
            "input 'mask': row 1 of the padding mask has no real token (all "
            "0)");
  EXPECT_EQ(error(tensor(TFM_I32, {batch, seq + 1}, mask.data())),
            "input 'mask': a padding mask of shape [2, 7] does not match input "
            "'input' (expected [2, 6], the input's [batch, seq])");
  EXPECT_EQ(error(tensor(TFM_I32, {batch, seq, kWidth}, mask.data())),
            "input 'mask': a padding mask of shape [2, 6, 32] does not match "
            "input 'input' (expected [2, 6], the input's [batch, seq])");
  EXPECT_EQ(error(tensor(9, {batch, seq}, mask.data())),
            "input 'mask': unknown dtype 9");
  tfm_tensor rank0 = tensor(TFM_I32, {}, mask.data());
  EXPECT_EQ(error(rank0), "input 'mask': rank 0 is outside 1 to 4");
  // Bool is a mask's dtype only.
  std::vector<uint8_t> bytes(size_t(batch * seq * kWidth), 1);
  tfm_tensor boolInput = tensor(TFM_BOOL, {batch, seq, kWidth}, bytes.data());
  Result r = forward(model.get(), {boolInput});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.error, "input 'input': unknown dtype 3");
  // And the model still runs after all that.
  Result ok =
      forward(model.get(), {input, tensor(TFM_I32, {batch, seq}, mask.data())});
  EXPECT_EQ(ok.status, 0) << ok.error;
  EXPECT_EQ(ok.error, "");
}

TEST(CompiledEncoder, InputCountSaysWhatItExpects) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  std::vector<float> x = embeddings(1, 4, 1);
  std::vector<int32_t> mask = {1, 1, 1, 1};
  tfm_tensor input = tensor(TFM_F32, {4, kWidth}, x.data());
  tfm_tensor m = tensor(TFM_I32, {4}, mask.data());
  Result r = forward(model.get(), {input, m, m});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.error, "tiny_encoder: expected 1 input(s), or 2 with the "
                     "padding masks, got 3");
  tfm_tensor output = {};
  EXPECT_EQ(tiny_encoder_forward(model.get(), nullptr, 0, &output), 1);
  EXPECT_STREQ(tiny_encoder_last_error(model.get()),
               "tiny_encoder: expected 1 input(s), or 2 with the padding "
               "masks, got 0");
  // Two inputs but no pointer to them.
  EXPECT_EQ(tiny_encoder_forward(model.get(), nullptr, 2, &output), 1);
  EXPECT_STREQ(tiny_encoder_last_error(model.get()),
               "tiny_encoder: expected 1 input(s), or 2 with the padding "
               "masks, got 0");
  // An encoder has no generation, masks or not.
  EXPECT_EQ(tiny_encoder_prefill(model.get(), &input, 1, &output), 1);
  EXPECT_NE(std::string(tiny_encoder_last_error(model.get()))
                .find("this model has no prefill/decode"),
            std::string::npos)
      << tiny_encoder_last_error(model.get());
}

TEST(CompiledEncoder, ForwardWithMasksAllocatesNothing) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t batch = kMaxBatch, seq = kMaxSeq;
  std::vector<float> x = embeddings(batch, seq, 2);
  std::vector<int32_t> mask = rightPadding({160, 65, 1}, seq);
  tfm_tensor inputs[2] = {tensor(TFM_F32, {batch, seq, kWidth}, x.data()),
                          tensor(TFM_I32, {batch, seq}, mask.data())};
  tfm_tensor output = {};
  ASSERT_EQ(tiny_encoder_forward(model.get(), inputs, 2, &output), 0)
      << tiny_encoder_last_error(model.get());
  uint64_t before = allocationCount();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(tiny_encoder_forward(model.get(), inputs, 2, &output), 0);
  inputs[1].data = nullptr;
  ASSERT_EQ(tiny_encoder_forward(model.get(), inputs, 2, &output), 0);
  inputs[1].data = mask.data();
  mask[3] = 5; // and neither does rejecting a mask
  EXPECT_EQ(tiny_encoder_forward(model.get(), inputs, 2, &output), 1);
  EXPECT_EQ(allocationCount(), before);
}

// Padded queries with any thread count: bit-identical results.
TEST(CompiledEncoder, MaskedResultsDoNotDependOnThreads) {
  const int64_t batch = kMaxBatch, seq = kMaxSeq;
  std::vector<float> x = embeddings(batch, seq, 4);
  std::vector<int32_t> mask = rightPadding({100, 3, 160}, seq);
  std::vector<std::vector<float>> results;
  for (const char *threads : {"1", "3"}) {
    setenv("TFM_NUM_THREADS", threads, 1);
    ModelPtr model = create();
    ASSERT_TRUE(model);
    Result r =
        forward(model.get(), {tensor(TFM_F32, {batch, seq, kWidth}, x.data()),
                              tensor(TFM_I32, {batch, seq}, mask.data())});
    ASSERT_EQ(r.status, 0) << r.error;
    results.push_back(r.out);
  }
  unsetenv("TFM_NUM_THREADS");
  EXPECT_EQ(results[0], results[1]);
}

// The attention maps under a mask (contract section 9): rows sum to 1,
// padded keys' entries are exactly 0, and a right-padded row's real queries
// weigh their keys as the shorter sequence's do.
TEST(CompiledEncoder, AttentionMapsLeavePaddedKeysOut) {
  const tfm::rt::ModelInfo &info = tfm::rt::kModel;
  ASSERT_EQ(info.numAttentionMaps, 2u);
  ASSERT_NE(info.attentionMaps, nullptr);
  EXPECT_STREQ(info.attentionMaps[0], "layer0.self");
  EXPECT_STREQ(info.attentionMaps[1], "layer1.self");
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t batch = 2, seq = 100;
  const std::vector<int64_t> lengths = {100, 70};
  std::vector<float> x = embeddings(batch, seq, 9);
  std::vector<int32_t> mask = rightPadding(lengths, seq);
  mask[10] = 0; // and a hole in row 0
  std::vector<tfm::rt::AttentionMap> maps(info.numAttentionMaps);
  tfm::rt::collectAttentionWeights(&maps);
  Result r =
      forward(model.get(), {tensor(TFM_F32, {batch, seq, kWidth}, x.data()),
                            tensor(TFM_I32, {batch, seq}, mask.data())});
  tfm::rt::collectAttentionWeights(nullptr);
  ASSERT_EQ(r.status, 0) << r.error;
  for (size_t m = 0; m < maps.size(); ++m) {
    SCOPED_TRACE(info.attentionMaps[m]);
    ASSERT_TRUE(maps[m].written);
    EXPECT_EQ(std::vector<int64_t>(maps[m].shape, maps[m].shape + 4),
              std::vector<int64_t>({batch, kHeads, seq, seq}));
    const std::vector<float> &w = maps[m].values;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < kHeads; ++h)
        for (int64_t i = 0; i < seq; ++i) {
          const float *row = w.data() + ((b * kHeads + h) * seq + i) * seq;
          double sum = 0;
          for (int64_t j = 0; j < seq; ++j) {
            sum += row[j];
            if (mask[size_t(b * seq + j)] == 0)
              ASSERT_EQ(row[j], 0.0f) << "b " << b << " h " << h << " query "
                                      << i << " padded key " << j;
          }
          ASSERT_NEAR(sum, 1.0, 1e-5)
              << "b " << b << " h " << h << " query " << i;
        }
  }
  // Row 1 against its 70 real positions alone.
  std::vector<float> alone = rowPrefix(x, seq, 1, lengths[1]);
  std::vector<tfm::rt::AttentionMap> shorter(info.numAttentionMaps);
  tfm::rt::collectAttentionWeights(&shorter);
  Result s = forward(model.get(),
                     {tensor(TFM_F32, {lengths[1], kWidth}, alone.data())});
  tfm::rt::collectAttentionWeights(nullptr);
  ASSERT_EQ(s.status, 0) << s.error;
  const int64_t n = lengths[1];
  for (size_t m = 0; m < maps.size(); ++m) {
    SCOPED_TRACE(info.attentionMaps[m]);
    // Unbatched: still 4-D.
    EXPECT_EQ(std::vector<int64_t>(shorter[m].shape, shorter[m].shape + 4),
              std::vector<int64_t>({1, kHeads, n, n}));
    double diff = 0;
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          diff = std::max(
              diff,
              std::fabs(
                  double(maps[m].values[size_t(
                      ((1 * kHeads + h) * seq + i) * seq + j)]) -
                  double(shorter[m].values[size_t((h * n + i) * n + j)])));
    EXPECT_LE(diff, 1e-5);
  }
  // No collector, no maps: the C API alone writes none.
  std::vector<tfm::rt::AttentionMap> untouched(info.numAttentionMaps);
  Result plain =
      forward(model.get(), {tensor(TFM_F32, {batch, seq, kWidth}, x.data()),
                            tensor(TFM_I32, {batch, seq}, mask.data())});
  ASSERT_EQ(plain.status, 0);
  EXPECT_EQ(plain.out, r.out);
  EXPECT_FALSE(untouched[0].written);
}

// The executable
//===----------------------------------------------------------------------===//

RunResult model(const std::string &args) {
  return runCommand(std::string(TFM_COMPILED_MODEL) + " " + args);
}

void expectUserError(const RunResult &run, const std::string &message) {
  EXPECT_EQ(run.exitCode, 1) << run.err;
  EXPECT_NE(run.err.find("error: " + message), std::string::npos)
      << "stderr: " << run.err;
  EXPECT_EQ(run.out, "");
}

std::string npyFile(const std::string &name, const std::string &descr,
                    const std::vector<int64_t> &shape,
                    const std::string &data) {
  std::string path = tempPath(name);
  writeFile(path, npyImage(descr, shape, data));
  return path;
}

std::string boolBytes(const std::vector<int32_t> &values) {
  std::string bytes;
  for (int32_t v : values)
    bytes += char(v);
  return bytes;
}

std::vector<float> readFloats(const std::string &path,
                              std::vector<int64_t> &shape) {
  tfm::rt::NpyArray array;
  std::string error;
  EXPECT_TRUE(tfm::rt::readNpy(path.c_str(), array, error)) << error;
  EXPECT_EQ(array.dtype, tfm::rt::DType::F32);
  shape = array.shape;
  const float *data = static_cast<const float *>(array.data.data());
  size_t count = 1;
  for (int64_t d : array.shape)
    count *= size_t(d);
  return std::vector<float>(data, data + (array.data.data() ? count : 0));
}

// A mask file (NumPy bool) gives the C API's result, and --dump-attention
// writes the maps with the padded keys at 0.
TEST(CompiledEncoderCli, MaskFileAndAttentionDump) {
  const int64_t batch = 2, seq = 30;
  const std::vector<int64_t> lengths = {30, 12};
  std::vector<float> x = embeddings(batch, seq, 21);
  std::vector<int32_t> mask = rightPadding(lengths, seq);
  std::string input =
      npyFile("x.npy", "<f4", {batch, seq, kWidth}, f32Bytes(x));
  std::string maskFile = npyFile("m.npy", "|b1", {batch, seq}, boolBytes(mask));
  std::string out = tempPath("out.npy");
  std::string dir = tempPath("maps");
  ASSERT_EQ(runCommand("mkdir -p " + dir).exitCode, 0);
  RunResult run = model("--input input=" + input + " --input mask=" + maskFile +
                        " --output " + out + " --dump-attention " + dir);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  std::vector<int64_t> shape;
  std::vector<float> got = readFloats(out, shape);
  EXPECT_EQ(shape, std::vector<int64_t>({batch, seq, kWidth}));
  ModelPtr api = create();
  ASSERT_TRUE(api);
  Result expected =
      forward(api.get(), {tensor(TFM_F32, {batch, seq, kWidth}, x.data()),
                          tensor(TFM_I32, {batch, seq}, mask.data())});
  ASSERT_EQ(expected.status, 0) << expected.error;
  EXPECT_EQ(got, expected.out);
  for (const char *name : {"layer0.self", "layer1.self"}) {
    SCOPED_TRACE(name);
    std::vector<float> w = readFloats(dir + "/" + name + ".npy", shape);
    ASSERT_EQ(shape, std::vector<int64_t>({batch, kHeads, seq, seq}));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t q = 0; q < kHeads * seq; ++q) {
        const float *row = w.data() + (b * kHeads * seq + q) * seq;
        double sum = 0;
        for (int64_t j = 0; j < seq; ++j) {
          sum += row[j];
          if (j >= lengths[size_t(b)])
            ASSERT_EQ(row[j], 0.0f) << "b " << b << " key " << j;
        }
        ASSERT_NEAR(sum, 1.0, 1e-5);
      }
  }
}

TEST(CompiledEncoderCli, MaskErrorsNameTheFile) {
  std::vector<float> x = embeddings(1, 5, 1);
  std::string input = npyFile("x.npy", "<f4", {1, 5, kWidth}, f32Bytes(x));
  std::string twos =
      npyFile("twos.npy", "<i8", {1, 5}, i64Bytes({1, 1, 2, 1, 1}));
  expectUserError(model("--input input=" + input + " --input mask=" + twos),
                  twos + ": padding mask value 2 at [0, 2] is not 0 or 1");
  std::string wide =
      npyFile("wide.npy", "<i4", {1, 6}, i32Bytes({1, 1, 1, 1, 1, 1}));
  expectUserError(model("--input input=" + input + " --input mask=" + wide),
                  wide + ": a padding mask of shape [1, 6] does not match "
                         "input 'input' (expected [1, 5], the input's "
                         "[batch, seq])");
  std::string zeros =
      npyFile("zeros.npy", "<f4", {1, 5}, f32Bytes({0, 0, 0, 0, 0}));
  expectUserError(model("--input input=" + input + " --input mask=" + zeros),
                  zeros + ": row 0 of the padding mask has no real token");
  // A mask needs its input's file.
  std::string ones =
      npyFile("ones.npy", "<i4", {1, 5}, i32Bytes({1, 1, 1, 1, 1}));
  expectUserError(model("--input mask=" + ones),
                  "missing --input input=FILE (this model's inputs: input; "
                  "optional padding masks: mask;");
  expectUserError(model("--input input=" + input + " --input mask=" + ones +
                        " --input mask=" + ones),
                  "--input mask is given twice");
  std::string nowhere = tempPath("nowhere");
  expectUserError(model("--dump-attention " + nowhere),
                  "--dump-attention " + nowhere +
                      ": not a directory (it must exist)");
  // A file is not a directory either.
  expectUserError(model("--dump-attention " + input),
                  "--dump-attention " + input +
                      ": not a directory (it must exist)");
  // Help lists the mask.
  RunResult help = model("--help");
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("  mask               optional padding mask of "
                          "input: int32, int64, bool or float32"),
            std::string::npos)
      << help.out;
}

} // namespace
