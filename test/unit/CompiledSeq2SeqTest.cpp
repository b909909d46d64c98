//===- CompiledSeq2SeqTest.cpp - padding masks of an encoder_decoder ------===//
//
// Linked with examples/tiny-encoder-decoder.json as tfm-compile --emit=obj
// makes it (the Highway backend's, --max-batch=2: test/unit/CMakeLists.txt):
// token ids src and tgt, learned positions, additive attention scores (the
// one-key-at-a-time softmax), a causal decoder. Its padding masks src_mask
// and tgt_mask (contract section 8) through the C API: src_mask hides the
// padded source keys in the encoder's self-attention and in the decoder's
// cross-attention, tgt_mask the padded target keys; and through the
// executable (TFM_COMPILED_MODEL).
//
//===----------------------------------------------------------------------===//

#include "CompiledApiTestUtil.h"
#include "RuntimeTestUtil.h"
#include "tfm/runtime/AttentionWeights.h"
#include "tfm/runtime/Model.h"
#include "tiny_seq2seq.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace tfm::test;

namespace {

// tiny_seq2seq: vocab 64, seq <= 16, batch <= 2, logits of 64.
constexpr int64_t kVocab = 64, kMaxSeq = 16;

using tfm::test::tensor;

struct ModelDeleter {
  void operator()(tfm_model *m) const { tiny_seq2seq_destroy(m); }
};
using ModelPtr = std::unique_ptr<tfm_model, ModelDeleter>;

ModelPtr create() {
  char err[512] = "x";
  ModelPtr model(tiny_seq2seq_create(nullptr, err, sizeof(err)));
  EXPECT_TRUE(model) << err;
  return model;
}

using Result = tfm::test::ForwardResult;

Result forward(tfm_model *model, const std::vector<tfm_tensor> &inputs) {
  return tfm::test::runForward(tiny_seq2seq_forward, tiny_seq2seq_last_error,
                               model, inputs);
}

std::vector<int32_t> randomIds(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, int32_t(kVocab - 1));
  std::vector<int32_t> ids(n);
  for (int32_t &v : ids)
    v = id(rng);
  return ids;
}

std::vector<int32_t> rightPadding(const std::vector<int64_t> &lengths,
                                  int64_t seq) {
  std::vector<int32_t> mask;
  for (int64_t length : lengths)
    for (int64_t s = 0; s < seq; ++s)
      mask.push_back(s < length ? 1 : 0);
  return mask;
}

/// Row b of [batch, seq, width], its positions [from, from + count).
template <typename T>
std::vector<T> slice(const std::vector<T> &x, int64_t seq, int64_t width,
                     int64_t b, int64_t from, int64_t count) {
  auto begin = x.begin() + (b * seq + from) * width;
  return std::vector<T>(begin, begin + count * width);
}

double maxAbsDiff(const std::vector<float> &a, const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size())
    return INFINITY;
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
  return diff;
}

// A right-padded source with its mask: every target position gets what the
// shorter source alone gives (the encoder's keys and the decoder's
// cross-attention keys both hidden).
TEST(CompiledSeq2Seq, SourcePaddingComputesTheShorterSource) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t batch = 2, srcSeq = kMaxSeq, tgtSeq = 7;
  const std::vector<int64_t> lengths = {5, 13};
  std::vector<int32_t> src = randomIds(size_t(batch * srcSeq), 1);
  std::vector<int32_t> tgt = randomIds(size_t(batch * tgtSeq), 2);
  std::vector<int32_t> srcMask = rightPadding(lengths, srcSeq);
  tfm_tensor srcT = tensor(TFM_I32, {batch, srcSeq}, src.data());
  tfm_tensor tgtT = tensor(TFM_I32, {batch, tgtSeq}, tgt.data());
  Result masked =
      forward(model.get(),
              {srcT, tgtT, tensor(TFM_I32, {batch, srcSeq}, srcMask.data()),
               tensor(TFM_I32, {batch, tgtSeq}, nullptr)});
  ASSERT_EQ(masked.status, 0) << masked.error;
  Result unmasked = forward(model.get(), {srcT, tgtT});
  ASSERT_EQ(unmasked.status, 0) << unmasked.error;
  for (int64_t b = 0; b < batch; ++b) {
    SCOPED_TRACE("row " + std::to_string(b));
    const int64_t length = lengths[size_t(b)];
    std::vector<int32_t> srcAlone = slice(src, srcSeq, 1, b, 0, length);
    std::vector<int32_t> tgtAlone = slice(tgt, tgtSeq, 1, b, 0, tgtSeq);
    Result alone =
        forward(model.get(), {tensor(TFM_I32, {length}, srcAlone.data()),
                              tensor(TFM_I32, {tgtSeq}, tgtAlone.data())});
    ASSERT_EQ(alone.status, 0) << alone.error;
    EXPECT_LE(
        maxAbsDiff(slice(masked.out, tgtSeq, kVocab, b, 0, tgtSeq), alone.out),
        1e-5);
    EXPECT_GT(maxAbsDiff(slice(unmasked.out, tgtSeq, kVocab, b, 0, tgtSeq),
                         alone.out),
              1e-3);
  }
}

// Whatever the padded positions of either sequence hold, the real target
// positions' logits stay the same, bit for bit: left-padded targets too
// (causal rows that would otherwise see those keys).
TEST(CompiledSeq2Seq, PaddedTokensDoNotReachRealOnes) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t batch = 2, srcSeq = 11, tgtSeq = 9;
  std::vector<int32_t> src = randomIds(size_t(batch * srcSeq), 3);
  std::vector<int32_t> tgt = randomIds(size_t(batch * tgtSeq), 4);
  // Source: holes in row 0, right padding in row 1; target: left padding
  // in row 0, a hole in row 1.
  std::vector<int64_t> srcMask(size_t(batch * srcSeq), 1);
  for (int64_t s : {1, 4, 5, 9})
    srcMask[size_t(s)] = 0;
  for (int64_t s = 6; s < srcSeq; ++s)
    srcMask[size_t(srcSeq + s)] = 0;
  std::vector<int64_t> tgtMask(size_t(batch * tgtSeq), 1);
  for (int64_t s = 0; s < 3; ++s)
    tgtMask[size_t(s)] = 0;
  tgtMask[size_t(tgtSeq + 4)] = 0;
  auto run = [&](const std::vector<int32_t> &s, const std::vector<int32_t> &t) {
    return forward(model.get(),
                   {tensor(TFM_I32, {batch, srcSeq}, s.data()),
                    tensor(TFM_I32, {batch, tgtSeq}, t.data()),
                    tensor(TFM_I64, {batch, srcSeq}, srcMask.data()),
                    tensor(TFM_I64, {batch, tgtSeq}, tgtMask.data())});
  };
  Result a = run(src, tgt);
  ASSERT_EQ(a.status, 0) << a.error;
  std::vector<int32_t> src2 = src, tgt2 = tgt;
  for (size_t i = 0; i < src2.size(); ++i)
    if (!srcMask[i])
      src2[i] = (src2[i] + 17) % int32_t(kVocab);
  for (size_t i = 0; i < tgt2.size(); ++i)
    if (!tgtMask[i])
      tgt2[i] = (tgt2[i] + 29) % int32_t(kVocab);
  Result b = run(src2, tgt2);
  ASSERT_EQ(b.status, 0) << b.error;
  for (size_t i = 0; i < tgtMask.size(); ++i) {
    if (!tgtMask[i])
      continue;
    for (int64_t v = 0; v < kVocab; ++v)
      ASSERT_EQ(a.out[i * kVocab + size_t(v)], b.out[i * kVocab + size_t(v)])
          << "target position " << i / tgtSeq << ", " << i % tgtSeq;
  }
  // Without the masks the changes show.
  Result c =
      forward(model.get(), {tensor(TFM_I32, {batch, srcSeq}, src.data()),
                            tensor(TFM_I32, {batch, tgtSeq}, tgt.data())});
  Result d =
      forward(model.get(), {tensor(TFM_I32, {batch, srcSeq}, src2.data()),
                            tensor(TFM_I32, {batch, tgtSeq}, tgt2.data())});
  ASSERT_EQ(c.status, 0);
  ASSERT_EQ(d.status, 0);
  EXPECT_NE(c.out, d.out);
}

TEST(CompiledSeq2Seq, NullMasksAreNoMasks) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  std::vector<int32_t> src = randomIds(10, 5), tgt = randomIds(4, 6);
  tfm_tensor srcT = tensor(TFM_I32, {10}, src.data());
  tfm_tensor tgtT = tensor(TFM_I32, {4}, tgt.data());
  Result plain = forward(model.get(), {srcT, tgtT});
  ASSERT_EQ(plain.status, 0) << plain.error;
  Result absent =
      forward(model.get(), {srcT, tgtT, tensor(TFM_I32, {10}, nullptr),
                            tensor(TFM_I32, {4}, nullptr)});
  ASSERT_EQ(absent.status, 0) << absent.error;
  EXPECT_EQ(absent.out, plain.out);
  std::vector<uint8_t> ones(10, 1);
  Result onlySrc =
      forward(model.get(), {srcT, tgtT, tensor(TFM_BOOL, {10}, ones.data()),
                            tensor(TFM_I32, {4}, nullptr)});
  ASSERT_EQ(onlySrc.status, 0) << onlySrc.error;
  EXPECT_EQ(onlySrc.out, plain.out);
}

TEST(CompiledSeq2Seq, BadMasksNameTheirInput) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  std::vector<int32_t> src = randomIds(6, 7), tgt = randomIds(3, 8);
  tfm_tensor srcT = tensor(TFM_I32, {1, 6}, src.data());
  tfm_tensor tgtT = tensor(TFM_I32, {1, 3}, tgt.data());
  std::vector<int32_t> ones(6, 1), zeros(3, 0);
  // The source's mask given for the target.
  Result r = forward(model.get(), {srcT, tgtT, tensor(TFM_I32, {1, 6}, nullptr),
                                   tensor(TFM_I32, {1, 6}, ones.data())});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.error, "input 'tgt_mask': a padding mask of shape [1, 6] does "
                     "not match input 'tgt' (expected [1, 3], the input's "
                     "[batch, seq])");
  r = forward(model.get(), {srcT, tgtT, tensor(TFM_I32, {1, 6}, ones.data()),
                            tensor(TFM_I32, {1, 3}, zeros.data())});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.error, "input 'tgt_mask': row 0 of the padding mask has no real "
                     "token (all 0)");
  std::vector<float> half(6, 1.0f);
  half[0] = 0.5f;
  r = forward(model.get(), {srcT, tgtT, tensor(TFM_F32, {1, 6}, half.data()),
                            tensor(TFM_I32, {1, 3}, nullptr)});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.error, "input 'src_mask': padding mask value 0.5 at [0, 0] is "
                     "not 0 or 1 (1: a real token, 0: padding)");
  // One mask alone is not a count the model takes.
  r = forward(model.get(), {srcT, tgtT, tensor(TFM_I32, {1, 6}, ones.data())});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.error, "tiny_seq2seq: expected 2 input(s), or 4 with the "
                     "padding masks, got 3");
}

TEST(CompiledSeq2Seq, PrefillTakesNoMaskYet) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  std::vector<int32_t> src = randomIds(6, 9), tgt = {1};
  std::vector<int32_t> srcMask(6, 1), tgtMask(1, 1);
  tfm_tensor inputs[4] = {tensor(TFM_I32, {6}, src.data()),
                          tensor(TFM_I32, {1}, tgt.data()),
                          tensor(TFM_I32, {6}, srcMask.data()),
                          tensor(TFM_I32, {1}, tgtMask.data())};
  tfm_tensor output = {};
  EXPECT_EQ(tiny_seq2seq_prefill(model.get(), inputs, 4, &output), 1);
  EXPECT_STREQ(tiny_seq2seq_last_error(model.get()),
               "tiny_seq2seq: prefill takes no padding mask yet: give the 2 "
               "input(s) alone");
  EXPECT_EQ(tiny_seq2seq_prefill(model.get(), inputs, 3, &output), 1);
  EXPECT_STREQ(tiny_seq2seq_last_error(model.get()),
               "tiny_seq2seq: expected 2 input(s), got 3");
  EXPECT_EQ(tiny_seq2seq_prefill(model.get(), inputs, 2, &output), 0)
      << tiny_seq2seq_last_error(model.get());
}

// The cross-attention maps give the padded source keys 0.
TEST(CompiledSeq2Seq, CrossAttentionMapsLeavePaddedSourceOut) {
  const tfm::rt::ModelInfo &info = tfm::rt::kModel;
  std::vector<std::string> names(info.attentionMaps,
                                 info.attentionMaps + info.numAttentionMaps);
  EXPECT_EQ(names, std::vector<std::string>(
                       {"encoder.layer0.self", "encoder.layer1.self",
                        "decoder.layer0.self", "decoder.layer0.cross"}));
  ModelPtr model = create();
  ASSERT_TRUE(model);
  const int64_t batch = 2, srcSeq = 12, tgtSeq = 5;
  const std::vector<int64_t> lengths = {12, 4};
  std::vector<int32_t> src = randomIds(size_t(batch * srcSeq), 10);
  std::vector<int32_t> tgt = randomIds(size_t(batch * tgtSeq), 11);
  std::vector<int32_t> srcMask = rightPadding(lengths, srcSeq);
  std::vector<tfm::rt::AttentionMap> maps(info.numAttentionMaps);
  tfm::rt::collectAttentionWeights(&maps);
  Result r =
      forward(model.get(), {tensor(TFM_I32, {batch, srcSeq}, src.data()),
                            tensor(TFM_I32, {batch, tgtSeq}, tgt.data()),
                            tensor(TFM_I32, {batch, srcSeq}, srcMask.data()),
                            tensor(TFM_I32, {batch, tgtSeq}, nullptr)});
  tfm::rt::collectAttentionWeights(nullptr);
  ASSERT_EQ(r.status, 0) << r.error;
  for (size_t m = 0; m < maps.size(); ++m) {
    SCOPED_TRACE(names[m]);
    ASSERT_TRUE(maps[m].written);
    bool cross = names[m] == "decoder.layer0.cross";
    bool overSource = cross || names[m].rfind("encoder.", 0) == 0;
    const int64_t q = names[m].rfind("encoder.", 0) == 0 ? srcSeq : tgtSeq;
    const int64_t k = overSource ? srcSeq : tgtSeq;
    ASSERT_EQ(std::vector<int64_t>(maps[m].shape, maps[m].shape + 4),
              std::vector<int64_t>({batch, 4, q, k}));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t row = 0; row < 4 * q; ++row) {
        const float *w = maps[m].values.data() + (b * 4 * q + row) * k;
        double sum = 0;
        for (int64_t j = 0; j < k; ++j) {
          sum += w[j];
          if (overSource && j >= lengths[size_t(b)])
            ASSERT_EQ(w[j], 0.0f) << "b " << b << " key " << j;
        }
        ASSERT_NEAR(sum, 1.0, 1e-5);
      }
  }
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

TEST(CompiledSeq2SeqCli, MasksByName) {
  std::string src = tempPath("src.npy"), tgt = tempPath("tgt.npy"),
              srcMask = tempPath("src_mask.npy"),
              tgtMask = tempPath("tgt_mask.npy");
  writeFile(src, npyImage("<i4", {6}, i32Bytes({1, 2, 3, 4, 5, 6})));
  writeFile(tgt, npyImage("<i4", {3}, i32Bytes({7, 8, 9})));
  writeFile(srcMask, npyImage("<i8", {6}, i64Bytes({1, 1, 1, 1, 0, 0})));
  writeFile(tgtMask, npyImage("<i4", {6}, i32Bytes({1, 1, 1, 1, 1, 1})));
  RunResult ok = run("--input src=" + src + " --input tgt=" + tgt +
                     " --input src_mask=" + srcMask);
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
  expectUserError(run("--input src=" + src + " --input tgt=" + tgt +
                      " --input tgt_mask=" + tgtMask),
                  tgtMask + ": a padding mask of shape [6] does not match "
                            "input 'tgt' (expected [3], the input's [seq])");
  expectUserError(run("--input src=" + src + " --input tgt=" + tgt +
                      " --input mask=" + srcMask),
                  "--input mask=" + srcMask +
                      ": unknown input 'mask' (this model's inputs: src and "
                      "tgt; optional padding masks: src_mask, tgt_mask)");
  expectUserError(run("--generate 2 --input src=" + src +
                      " --input tgt=" + tgt + " --input src_mask=" + srcMask),
                  "--input src_mask: --generate takes no padding mask yet");
}

} // namespace
