//===- CApiTest.cpp - the C API a generated library forwards to -----------===//
//
// Drives tfm_rt_* with FakeModel.cpp's kModel the way a generated
// NAME_create/forward/destroy would.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/CApi.h"
#include "AllocationCounter.h"
#include "FakeModel.h"
#include "RuntimeTestUtil.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace tfm::test;

namespace {

// FakeModel: token ids, vocab 16, width 8, seq <= 32, batch <= 2.
tfm_tensor tensor(int32_t dtype, std::vector<int64_t> shape, void *data) {
  tfm_tensor t = {dtype, int32_t(shape.size()), {0, 0, 0, 0}, data};
  for (size_t i = 0; i < shape.size(); ++i)
    t.shape[i] = shape[i];
  return t;
}

struct ModelDeleter {
  void operator()(tfm_model *m) const { tfm_rt_destroy(m); }
};
using ModelPtr = std::unique_ptr<tfm_model, ModelDeleter>;

ModelPtr create(const char *weights = nullptr) {
  char err[512] = "x";
  ModelPtr model(tfm_rt_create(&tfm::rt::kModel, weights, err, sizeof(err)));
  EXPECT_TRUE(model) << err;
  EXPECT_STREQ(err, "");
  return model;
}

TEST(CApi, ForwardIntoOwnOrCallerBuffer) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  int32_t ids[5] = {1, 2, 3, 4, 15};
  tfm_tensor input = tensor(TFM_I32, {5}, ids);
  tfm_tensor output = {};
  ASSERT_EQ(tfm_rt_forward(model.get(), &input, 1, &output), 0)
      << tfm_rt_last_error(model.get());
  EXPECT_EQ(output.dtype, TFM_F32);
  EXPECT_EQ(output.rank, 2);
  EXPECT_EQ(output.shape[0], 5);
  EXPECT_EQ(output.shape[1], 8);
  ASSERT_NE(output.data, nullptr);
  std::vector<float> own(static_cast<float *>(output.data),
                         static_cast<float *>(output.data) + 40);

  std::vector<float> mine(40, -1.0f);
  int64_t wide[5] = {1, 2, 3, 4, 15};
  tfm_tensor input64 = tensor(TFM_I64, {1, 5}, wide);
  tfm_tensor output2 = {};
  output2.data = mine.data();
  ASSERT_EQ(tfm_rt_forward(model.get(), &input64, 1, &output2), 0)
      << tfm_rt_last_error(model.get());
  EXPECT_EQ(output2.data, mine.data());
  EXPECT_EQ(output2.rank, 3);
  EXPECT_EQ(output2.shape[0], 1);
  EXPECT_EQ(mine, own);
  EXPECT_STREQ(tfm_rt_last_error(model.get()), "");
}

// What ForwardAllocatesNothing relies on: every allocator is counted.
TEST(CApi, AllocationCounterSeesEveryAllocator) {
  // Through a volatile pointer, so the compiler keeps each allocation.
  static void *volatile sink;
  auto counted = [](auto allocate) {
    uint64_t before = allocationCount();
    allocate();
    return allocationCount() - before;
  };
  EXPECT_GE(counted([] {
              sink = std::malloc(24);
              std::free(sink);
            }),
            1u);
  EXPECT_GE(counted([] {
              sink = std::calloc(3, 8);
              std::free(sink);
            }),
            1u);
  EXPECT_GE(counted([] {
              sink = std::aligned_alloc(64, 128);
              std::free(sink);
            }),
            1u);
  EXPECT_GE(counted([] {
              void *p = nullptr;
              EXPECT_EQ(posix_memalign(&p, 64, 100), 0);
              sink = p;
              std::free(sink);
            }),
            1u);
  EXPECT_GE(counted([] {
              sink = std::malloc(8);
              sink = std::realloc(sink, 4096);
              std::free(sink);
            }),
            2u);
  EXPECT_GE(counted([] {
              auto *v = new std::vector<float>(100);
              sink = v;
              delete v;
            }),
            2u);
}

TEST(CApi, ForwardAllocatesNothing) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  int64_t ids[64] = {};
  tfm_tensor input = tensor(TFM_I64, {2, 32}, ids);
  tfm_tensor output = {};
  ASSERT_EQ(tfm_rt_forward(model.get(), &input, 1, &output), 0);
  uint64_t before = allocationCount();
  for (int i = 0; i < 10; ++i)
    tfm_rt_forward(model.get(), &input, 1, &output);
  ids[3] = 99; // and neither does rejecting an input
  EXPECT_EQ(tfm_rt_forward(model.get(), &input, 1, &output), 1);
  EXPECT_EQ(allocationCount(), before);
}

TEST(CApi, BadInputsReturnOneWithAMessage) {
  ModelPtr model = create();
  ASSERT_TRUE(model);
  int32_t ids[40] = {};
  tfm_tensor output = {};
  tfm_tensor tooLong = tensor(TFM_I32, {40}, ids);
  EXPECT_EQ(tfm_rt_forward(model.get(), &tooLong, 1, &output), 1);
  EXPECT_STREQ(tfm_rt_last_error(model.get()),
               "input 'input': sequence length 40 exceeds the compiled "
               "maximum 32 (tfm-compile --max-seq-len)");
  ids[2] = 16;
  tfm_tensor outOfRange = tensor(TFM_I32, {1, 4}, ids);
  EXPECT_EQ(tfm_rt_forward(model.get(), &outOfRange, 1, &output), 1);
  EXPECT_STREQ(tfm_rt_last_error(model.get()),
               "input 'input': token id 16 at position [0, 2] is out of range "
               "[0, 16)");
  tfm_tensor badDType = tensor(7, {4}, ids);
  EXPECT_EQ(tfm_rt_forward(model.get(), &badDType, 1, &output), 1);
  EXPECT_STREQ(tfm_rt_last_error(model.get()),
               "input 'input': unknown dtype 7");
  tfm_tensor badRank = tensor(TFM_I32, {4}, ids);
  badRank.rank = 9;
  EXPECT_EQ(tfm_rt_forward(model.get(), &badRank, 1, &output), 1);
  EXPECT_STREQ(tfm_rt_last_error(model.get()),
               "input 'input': rank 9 is outside 1 to 4");
  EXPECT_EQ(tfm_rt_forward(model.get(), nullptr, 0, &output), 1);
  EXPECT_STREQ(tfm_rt_last_error(model.get()),
               "fake: expected 1 input(s), got 0");
  // A model without padding masks takes its inputs alone: no word of masks.
  tfm_tensor two[2] = {tensor(TFM_I32, {4}, ids), tensor(TFM_I32, {4}, ids)};
  EXPECT_EQ(tfm_rt_forward(model.get(), two, 2, &output), 1);
  EXPECT_STREQ(tfm_rt_last_error(model.get()),
               "fake: expected 1 input(s), got 2");
  two[1].data = nullptr; // not even an absent one
  EXPECT_EQ(tfm_rt_forward(model.get(), two, 2, &output), 1);
  EXPECT_STREQ(tfm_rt_last_error(model.get()),
               "fake: expected 1 input(s), got 2");
  tfm_tensor good = tensor(TFM_I32, {4}, ids);
  ids[2] = 0;
  EXPECT_EQ(tfm_rt_forward(model.get(), &good, 1, nullptr), 1);
  EXPECT_EQ(tfm_rt_forward(nullptr, &good, 1, &output), 1);
  EXPECT_EQ(tfm_rt_forward(model.get(), &good, 1, &output), 0);
  EXPECT_STREQ(tfm_rt_last_error(model.get()), "");
}

TEST(CApi, CreateReportsWeightErrors) {
  std::string path = tempPath("capi.safetensors");
  writeFile(path,
            safetensorsImage(
                {{"embed.weight", "F32", {16, 8}, std::string(512, '\0')}}));
  char err[512];
  EXPECT_EQ(tfm_rt_create(&tfm::rt::kModel, path.c_str(), err, sizeof(err)),
            nullptr);
  EXPECT_EQ(std::string(err), path + ": missing tensor 'bias' [8]");
  // A short buffer gets a truncated, terminated message.
  char shortErr[8];
  EXPECT_EQ(
      tfm_rt_create(&tfm::rt::kModel, path.c_str(), shortErr, sizeof(shortErr)),
      nullptr);
  EXPECT_EQ(std::strlen(shortErr), 7u);
  EXPECT_EQ(tfm_rt_create(&tfm::rt::kModel, path.c_str(), nullptr, 0), nullptr);
  EXPECT_EQ(tfm_rt_create(nullptr, nullptr, err, sizeof(err)), nullptr);
}

TEST(CApi, LoadsWeightsFromFile) {
  std::string path = tempPath("capi-ok.safetensors");
  std::vector<float> bias = {1, 2, 3, 4, 5, 6, 7, 8};
  writeFile(path, safetensorsImage(
                      {{"embed.weight", "F32", {16, 8}, std::string(512, '\0')},
                       {"bias", "F32", {8}, f32Bytes(bias)}}));
  ModelPtr model = create(path.c_str());
  ASSERT_TRUE(model);
  int32_t ids[2] = {3, 3};
  tfm_tensor input = tensor(TFM_I32, {2}, ids);
  tfm_tensor output = {};
  ASSERT_EQ(tfm_rt_forward(model.get(), &input, 1, &output), 0);
  // Zero embeddings: out = bias + 0.01 * position.
  const float *out = static_cast<const float *>(output.data);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[8 + 7], 8.01f);
}

TEST(CApi, ThreadsFromEnvironment) {
  int32_t ids[64];
  for (int i = 0; i < 64; ++i)
    ids[i] = i % 16;
  tfm_tensor input = tensor(TFM_I32, {2, 32}, ids);
  std::vector<std::vector<float>> results;
  // Unset: one thread; else the count asked for, with the same results.
  unsetenv("TFM_NUM_THREADS");
  for (const char *threads : {"", "1", "3"}) {
    if (*threads)
      setenv("TFM_NUM_THREADS", threads, 1);
    ModelPtr model = create();
    ASSERT_TRUE(model);
    tfm_tensor output = {};
    fakeForwardThreads = 0;
    ASSERT_EQ(tfm_rt_forward(model.get(), &input, 1, &output), 0);
    EXPECT_EQ(fakeForwardThreads.load(), *threads ? std::atoi(threads) : 1)
        << "TFM_NUM_THREADS='" << threads << "'";
    const float *out = static_cast<const float *>(output.data);
    results.emplace_back(out, out + 2 * 32 * 8);
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[1], results[2]);
  setenv("TFM_NUM_THREADS", "many", 1);
  char err[256];
  EXPECT_EQ(tfm_rt_create(&tfm::rt::kModel, nullptr, err, sizeof(err)),
            nullptr);
  EXPECT_STREQ(err, "TFM_NUM_THREADS='many' is not a thread count (1 to 1024)");
  unsetenv("TFM_NUM_THREADS");
}

} // namespace

namespace {

// TFM_SIMD reaches the model's limitSimd before anything runs; its refusal
// is the create's error, and unset or empty it is not asked.
TEST(CApi, SimdTargetFromEnvironment) {
  char err[512];
  fakeSimdLimit.clear();
  unsetenv("TFM_SIMD");
  EXPECT_TRUE(create());
  EXPECT_EQ(fakeSimdLimit, "");
  setenv("TFM_SIMD", "", 1);
  EXPECT_TRUE(create());
  EXPECT_EQ(fakeSimdLimit, "");
  setenv("TFM_SIMD", "avx2", 1);
  EXPECT_TRUE(create());
  EXPECT_EQ(fakeSimdLimit, "avx2");
  setenv("TFM_SIMD", "avx512", 1);
  EXPECT_EQ(tfm_rt_create(&tfm::rt::kModel, nullptr, err, sizeof(err)),
            nullptr);
  EXPECT_STREQ(err, "TFM_SIMD=avx512: this CPU has no such target");
  EXPECT_EQ(fakeSimdLimit, "avx512");
  unsetenv("TFM_SIMD");
}

} // namespace
