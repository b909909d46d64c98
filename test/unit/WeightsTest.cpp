//===- WeightsTest.cpp - loading weights against a model's parameters -----===//

#include "tfm/runtime/Weights.h"
#include "RuntimeTestUtil.h"
#include "tfm/runtime/Random.h"
#include "tfm/runtime/ThreadPool.h"
#include "tfm/runtime/WeightFormat.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace tfm::rt;
using namespace tfm::test;

namespace {

void noForward(const float *const *, const InputView *, float *, Arena &,
               ThreadPool &) {}

ModelInfo modelWith(const ParamInfo *params, size_t count) {
  static const InputInfo inputs[] = {{"input", InputKind::TokenIds}};
  return {"test",  params,  count, inputs,  1,       4,         16,
          4,       8,       1,     0,       nullptr, noForward, 0,
          nullptr, nullptr, 0,     nullptr, nullptr, nullptr,   nullptr};
}

const ParamInfo kLayerParams[] = {
    {"layers.0.linear1.weight", nullptr, 2, {64, 32}, ParamInit::Uniform, 0.1f},
    {"norm.weight", nullptr, 1, {32}, ParamInit::Ones, 0.0f},
};

std::string zeros(size_t floats) { return std::string(floats * 4, '\0'); }

std::string loadError(const ModelInfo &model, const std::string &image,
                      std::string *path = nullptr) {
  std::string file = tempPath("w.safetensors");
  if (path)
    *path = file;
  writeFile(file, image);
  Weights weights;
  std::string error;
  EXPECT_FALSE(weights.load(model, file.c_str(), error));
  return error;
}

TEST(Weights, LoadsFloat32InPlaceAndWidensHalfFloats) {
  const ParamInfo params[] = {
      {"a", nullptr, 1, {2}, ParamInit::Zeros, 0.0f},
      {"b", nullptr, 2, {2, 3}, ParamInit::Zeros, 0.0f},
      {"c", nullptr, 1, {2}, ParamInit::Zeros, 0.0f},
  };
  ModelInfo model = modelWith(params, 3);
  std::string path = tempPath("mixed.safetensors");
  // F16: 1, -2, 65504 (max), 2^-24 (smallest subnormal), -0, +inf.
  // BF16: 3.140625, -1.
  writeFile(path,
            safetensorsImage(
                {{"a", "F32", {2}, f32Bytes({0.25f, -7.0f})},
                 {"b",
                  "F16",
                  {2, 3},
                  f16Bytes({0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x7c00})},
                 {"c", "BF16", {2}, f16Bytes({0x4049, 0xbf80})}}));
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.load(model, path.c_str(), error)) << error;
  const float *const *w = weights.pointers();
  EXPECT_EQ(w[0][0], 0.25f);
  EXPECT_EQ(w[0][1], -7.0f);
  EXPECT_EQ(w[1][0], 1.0f);
  EXPECT_EQ(w[1][1], -2.0f);
  EXPECT_EQ(w[1][2], 65504.0f);
  EXPECT_EQ(w[1][3], std::ldexp(1.0f, -24));
  EXPECT_EQ(w[1][4], 0.0f);
  EXPECT_TRUE(std::signbit(w[1][4]));
  EXPECT_TRUE(std::isinf(w[1][5]));
  EXPECT_EQ(w[2][0], 3.140625f);
  EXPECT_EQ(w[2][1], -1.0f);
  // Converted tensors live in the aligned block.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w[1]) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w[2]) % 64, 0u);
}

TEST(Weights, CopiesMisalignedFloat32) {
  const ParamInfo params[] = {{"a", nullptr, 1, {3}, ParamInit::Zeros, 0.0f}};
  ModelInfo model = modelWith(params, 1);
  std::string path = tempPath("odd.safetensors");
  // A header length of 4k+1 puts the data at an odd address.
  std::string header =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}";
  while ((8 + header.size()) % 4 != 1)
    header += ' ';
  writeFile(path, safetensorsRaw(header, f32Bytes({1.0f, 2.0f, 3.0f})));
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.load(model, path.c_str(), error)) << error;
  const float *a = weights.pointers()[0];
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 4, 0u);
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[2], 3.0f);
}

TEST(Weights, MisshapenTensorNamesBothShapes) {
  ModelInfo model = modelWith(kLayerParams, 2);
  std::string path;
  std::string error = loadError(
      model,
      safetensorsImage(
          {{"layers.0.linear1.weight", "F32", {64, 31}, zeros(64 * 31)},
           {"norm.weight", "F32", {32}, zeros(32)}}),
      &path);
  EXPECT_EQ(error, path + ": tensor 'layers.0.linear1.weight' has shape [64, "
                          "31], expected [64, 32]");
}

TEST(Weights, MissingAndUnexpectedTensorsAreAllReported) {
  ModelInfo model = modelWith(kLayerParams, 2);
  std::string path;
  std::string error = loadError(
      model,
      safetensorsImage(
          {{"layers.0.linear1.weight", "F32", {64, 32}, zeros(64 * 32)},
           {"foo", "F32", {3}, zeros(3)}}),
      &path);
  EXPECT_EQ(error, path + ": missing tensor 'norm.weight' [32]\n" + path +
                       ": unexpected tensor 'foo' [3] (not a parameter of "
                       "model 'test')");
}

TEST(Weights, UnsupportedDTypeFailsTheLoad) {
  ModelInfo model = modelWith(kLayerParams, 2);
  std::string error = loadError(
      model,
      safetensorsImage(
          {{"layers.0.linear1.weight", "F64", {64, 32}, zeros(2 * 64 * 32)},
           {"norm.weight", "F32", {32}, zeros(32)}}));
  EXPECT_NE(error.find("tensor 'layers.0.linear1.weight' has dtype F64"),
            std::string::npos)
      << error;
}

const ParamInfo kSharedEmbedding[] = {
    {"src_embed.weight", "embed.weight", 2, {4, 2}, ParamInit::Normal, 1.0f},
    {"tgt_embed.weight", "embed.weight", 2, {4, 2}, ParamInit::Normal, 1.0f},
};

TEST(Weights, AliasFeedsEveryParameterThatNamesIt) {
  ModelInfo model = modelWith(kSharedEmbedding, 2);
  std::string path = tempPath("shared.safetensors");
  writeFile(path, safetensorsImage({{"embed.weight",
                                     "F32",
                                     {4, 2},
                                     f32Bytes({0, 1, 2, 3, 4, 5, 6, 7})}}));
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.load(model, path.c_str(), error)) << error;
  EXPECT_EQ(weights.pointers()[0][5], 5.0f);
  EXPECT_EQ(weights.pointers()[1][7], 7.0f);
}

TEST(Weights, OwnNameWinsOverAlias) {
  ModelInfo model = modelWith(kSharedEmbedding, 2);
  std::string path = tempPath("own.safetensors");
  writeFile(path, safetensorsImage({{"embed.weight", "F32", {4, 2}, zeros(8)},
                                    {"src_embed.weight",
                                     "F32",
                                     {4, 2},
                                     f32Bytes({9, 9, 9, 9, 9, 9, 9, 9})}}));
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.load(model, path.c_str(), error)) << error;
  EXPECT_EQ(weights.pointers()[0][0], 9.0f);
  EXPECT_EQ(weights.pointers()[1][0], 0.0f);
}

TEST(Weights, UnusedAliasIsUnexpected) {
  ModelInfo model = modelWith(kSharedEmbedding, 2);
  std::string error = loadError(
      model, safetensorsImage({{"embed.weight", "F32", {4, 2}, zeros(8)},
                               {"src_embed.weight", "F32", {4, 2}, zeros(8)},
                               {"tgt_embed.weight", "F32", {4, 2}, zeros(8)}}));
  EXPECT_NE(error.find("unexpected tensor 'embed.weight' [4, 2]"),
            std::string::npos)
      << error;
}

TEST(Weights, MisshapenAliasNamesTheParameter) {
  ModelInfo model = modelWith(kSharedEmbedding, 2);
  std::string error = loadError(
      model, safetensorsImage({{"embed.weight", "F32", {4, 3}, zeros(12)}}));
  EXPECT_NE(error.find("tensor 'embed.weight' (for 'src_embed.weight') has "
                       "shape [4, 3], expected [4, 2]"),
            std::string::npos)
      << error;
}

TEST(Weights, MissingWithAliasMentionsBoth) {
  ModelInfo model = modelWith(kSharedEmbedding, 2);
  std::string error = loadError(
      model, safetensorsImage({{"tgt_embed.weight", "F32", {4, 2}, zeros(8)}}));
  EXPECT_NE(error.find("missing tensor 'src_embed.weight' [4, 2] (or its "
                       "alias 'embed.weight')"),
            std::string::npos)
      << error;
}

// A checkpoint in another layout: in_proj from three stacked parts, a
// Conv1D weight stored [in, out], a bias under another name.
const char *const kQkv[] = {"q.weight", "k.weight", "v.weight"};
const char *const kConv[] = {"c_fc.weight"};
const char *const kConvBias[] = {"c_fc.bias"};
const ParamInfo kSourcedParams[] = {
    {"in_proj_weight",
     nullptr,
     2,
     {4, 2},
     ParamInit::Uniform,
     0.1f,
     kQkv,
     3,
     false},
    {"linear1.weight",
     nullptr,
     2,
     {3, 2},
     ParamInit::Uniform,
     0.1f,
     kConv,
     1,
     true},
    {"linear1.bias",
     nullptr,
     1,
     {3},
     ParamInit::Zeros,
     0.0f,
     kConvBias,
     1,
     false},
};

TEST(Weights, SourcesAreStackedAndTransposed) {
  ModelInfo model = modelWith(kSourcedParams, 3);
  std::string path = tempPath("sourced.safetensors");
  // q [2, 2] = 0 1 / 2 3, k [1, 2] = 4 5 (BF16), v [1, 2] = 6 7; c_fc
  // [2, 3] = the transpose of linear1 [3, 2] = 10 11 / 12 13 / 14 15.
  writeFile(
      path,
      safetensorsImage(
          {{"q.weight", "F32", {2, 2}, f32Bytes({0, 1, 2, 3})},
           {"k.weight", "BF16", {1, 2}, std::string("\x80\x40\xa0\x40")},
           {"v.weight", "F32", {1, 2}, f32Bytes({6, 7})},
           {"c_fc.weight", "F32", {2, 3}, f32Bytes({10, 12, 14, 11, 13, 15})},
           {"c_fc.bias", "F32", {3}, f32Bytes({1, 2, 3})}}));
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.load(model, path.c_str(), error)) << error;
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(weights.pointers()[0][i], float(i)) << i;
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(weights.pointers()[1][i], float(10 + i)) << i;
  EXPECT_EQ(weights.pointers()[2][2], 3.0f);
}

TEST(Weights, SourcesThatDoNotMakeTheWeightAreNamed) {
  ModelInfo model = modelWith(kSourcedParams, 3);
  std::string error = loadError(
      model, safetensorsImage({{"q.weight", "F32", {2, 2}, zeros(4)},
                               {"k.weight", "F32", {2, 2}, zeros(4)},
                               {"v.weight", "F32", {1, 2}, zeros(2)},
                               {"c_fc.weight", "F32", {3, 2}, zeros(6)},
                               {"linear1.bias", "F32", {3}, zeros(3)}}));
  EXPECT_NE(error.find("tensors 'q.weight' [2, 2], 'k.weight' [2, 2], "
                       "'v.weight' [1, 2] do not make 'in_proj_weight' [4, 2] "
                       "(stacked along the first dimension)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("tensors 'c_fc.weight' [3, 2] do not make "
                       "'linear1.weight' [3, 2] (each stored transposed, "
                       "stacked by columns)"),
            std::string::npos)
      << error;
  // The parameter's own name is not what the file must hold.
  EXPECT_NE(error.find("missing tensor 'c_fc.bias' (for 'linear1.bias' [3])"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("unexpected tensor 'linear1.bias' [3]"),
            std::string::npos)
      << error;
}

TEST(Weights, RandomInitFollowsParamInit) {
  const ParamInfo params[] = {
      {"z", nullptr, 1, {5}, ParamInit::Zeros, 0.0f},
      {"o", nullptr, 1, {5}, ParamInit::Ones, 0.0f},
      {"u", nullptr, 2, {100, 100}, ParamInit::Uniform, 0.25f},
      {"n", nullptr, 2, {100, 100}, ParamInit::Normal, 2.0f},
  };
  ModelInfo model = modelWith(params, 4);
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.initRandom(model, error)) << error;
  const float *const *w = weights.pointers();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(w[0][i], 0.0f);
    EXPECT_EQ(w[1][i], 1.0f);
  }
  double uMin = 1, uMax = -1, nSum = 0, nSquares = 0;
  for (int i = 0; i < 10000; ++i) {
    uMin = std::min(uMin, double(w[2][i]));
    uMax = std::max(uMax, double(w[2][i]));
    nSum += w[3][i];
    nSquares += double(w[3][i]) * w[3][i];
  }
  EXPECT_GE(uMin, -0.25);
  EXPECT_LE(uMax, 0.25);
  EXPECT_LT(uMin, -0.24); // spans the whole range
  EXPECT_GT(uMax, 0.24);
  double mean = nSum / 10000,
         stddev = std::sqrt(nSquares / 10000 - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.06);
  EXPECT_NEAR(stddev, 2.0, 0.06);
  for (int p = 0; p < 4; ++p)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w[p]) % 64, 0u);
}

TEST(Weights, RandomInitDependsOnNamesNotOrder) {
  const ParamInfo forward[] = {
      {"a", nullptr, 1, {64}, ParamInit::Normal, 1.0f},
      {"b", nullptr, 1, {64}, ParamInit::Normal, 1.0f},
  };
  const ParamInfo backward[] = {forward[1], forward[0]};
  ModelInfo first = modelWith(forward, 2), second = modelWith(backward, 2);
  Weights one, two, again;
  std::string error;
  ASSERT_TRUE(one.initRandom(first, error));
  ASSERT_TRUE(two.initRandom(second, error));
  ASSERT_TRUE(again.initRandom(first, error));
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(one.pointers()[0][i], two.pointers()[1][i]);
    EXPECT_EQ(one.pointers()[1][i], two.pointers()[0][i]);
    EXPECT_EQ(one.pointers()[0][i], again.pointers()[0][i]);
  }
  // Different names, different streams.
  EXPECT_NE(one.pointers()[0][0], one.pointers()[1][0]);
}

// Tensors larger than one chunk of initRandom's work (2^16 elements) and of
// odd sizes (so that the last chunk is a partial, odd-sized one), with
// small ones between them.
const ParamInfo kLargeParams[] = {
    {"embed.weight", nullptr, 2, {1001, 197}, ParamInit::Normal, 1.0f},
    {"layers.0.linear1.weight",
     nullptr,
     2,
     {513, 257},
     ParamInit::Uniform,
     0.0625f},
    {"layers.0.linear1.bias", nullptr, 1, {513}, ParamInit::Uniform, 0.0625f},
    {"layers.0.norm1.weight", nullptr, 1, {140001}, ParamInit::Ones, 0.0f},
    {"layers.0.norm1.bias", nullptr, 1, {140001}, ParamInit::Zeros, 0.0f},
    {"pos.weight", nullptr, 2, {3, 5}, ParamInit::Normal, 0.5f},
};
constexpr size_t kNumLargeParams = sizeof(kLargeParams) / sizeof(ParamInfo);

size_t elementsOf(const ParamInfo &param) {
  size_t elements = 1;
  for (int d = 0; d < param.rank; ++d)
    elements *= size_t(param.shape[d]);
  return elements;
}

TEST(Weights, RandomInitSameForAnyThreadCount) {
  ModelInfo model = modelWith(kLargeParams, kNumLargeParams);
  Weights serial;
  std::string error;
  ASSERT_TRUE(serial.initRandom(model, error)) << error;
  for (int threads = 1; threads <= 4; ++threads) {
    ThreadPool pool(threads);
    Weights parallel;
    ASSERT_TRUE(parallel.initRandom(model, error, &pool)) << error;
    for (size_t p = 0; p < kNumLargeParams; ++p)
      EXPECT_EQ(std::memcmp(serial.pointers()[p], parallel.pointers()[p],
                            elementsOf(kLargeParams[p]) * sizeof(float)),
                0)
          << kLargeParams[p].name << " with " << threads << " threads";
  }
}

// Each tensor is its whole stream, as one fill from its name's seed makes
// it, whatever pieces initRandom cut it into.
TEST(Weights, RandomInitIsEachNamesStream) {
  ModelInfo model = modelWith(kLargeParams, kNumLargeParams);
  ThreadPool pool(3);
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.initRandom(model, error, &pool)) << error;
  for (size_t p = 0; p < kNumLargeParams; ++p) {
    const ParamInfo &param = kLargeParams[p];
    size_t elements = elementsOf(param);
    const float *w = weights.pointers()[p];
    std::vector<float> expected(elements);
    switch (param.init) {
    case ParamInit::Zeros:
      std::fill(expected.begin(), expected.end(), 0.0f);
      break;
    case ParamInit::Ones:
      std::fill(expected.begin(), expected.end(), 1.0f);
      break;
    case ParamInit::Uniform:
      fillUniform(expected.data(), elements, param.bound,
                  seedForName(param.name));
      break;
    case ParamInit::Normal:
      fillNormal(expected.data(), elements, param.bound,
                 seedForName(param.name));
      break;
    }
    EXPECT_EQ(std::memcmp(w, expected.data(), elements * sizeof(float)), 0)
        << param.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w) % 64, 0u);
  }
}

// ---- a sharded checkpoint: model.safetensors.index.json and its shards

/// The file name of `path`, as an index beside it names it.
std::string baseName(const std::string &path) {
  return path.substr(path.find_last_of('/') + 1);
}

/// Writes an index of `entries` (tensor, shard file name) beside the
/// shards; returns its path.
std::string
writeIndex(const std::vector<std::pair<std::string, std::string>> &entries,
           const std::string &name = "model.safetensors.index.json") {
  std::string text = "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {";
  for (size_t i = 0; i < entries.size(); ++i)
    text += (i ? ", \"" : "\"") + entries[i].first + "\": \"" +
            entries[i].second + "\"";
  std::string path = tempPath(name);
  writeFile(path, text + "}}");
  return path;
}

const ParamInfo kShardedParams[] = {
    {"a", nullptr, 1, {2}, ParamInit::Zeros, 0.0f},
    {"b", nullptr, 1, {3}, ParamInit::Zeros, 0.0f},
    {"c", nullptr, 1, {1}, ParamInit::Zeros, 0.0f},
};

TEST(Weights, LoadsTheShardsAnIndexLists) {
  ModelInfo model = modelWith(kShardedParams, 3);
  std::string one = tempPath("model-00001-of-00002.safetensors");
  std::string two = tempPath("model-00002-of-00002.safetensors");
  writeFile(one, safetensorsImage({{"a", "F32", {2}, f32Bytes({1.0f, 2.0f})},
                                   {"c", "F32", {1}, f32Bytes({5.0f})}}));
  writeFile(two, safetensorsImage(
                     {{"b", "BF16", {3}, f16Bytes({0x3f80, 0x4000, 0x4040})}}));
  std::string index = writeIndex(
      {{"a", baseName(one)}, {"b", baseName(two)}, {"c", baseName(one)}});
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.load(model, index.c_str(), error)) << error;
  const float *const *w = weights.pointers();
  EXPECT_EQ(w[0][0], 1.0f);
  EXPECT_EQ(w[0][1], 2.0f);
  EXPECT_EQ(w[1][0], 1.0f);
  EXPECT_EQ(w[1][2], 3.0f);
  EXPECT_EQ(w[2][0], 5.0f);
}

TEST(Weights, ShardProblemsNameTheIndexAndTheShard) {
  ModelInfo model = modelWith(kShardedParams, 3);
  std::string one = tempPath("s1.safetensors");
  std::string two = tempPath("s2.safetensors");
  writeFile(one, safetensorsImage({{"a", "F32", {2}, zeros(2)},
                                   {"c", "F32", {1}, zeros(1)}}));
  writeFile(two, safetensorsImage({{"b", "F32", {3}, zeros(3)},
                                   {"c", "F32", {1}, zeros(1)}}));
  Weights weights;
  std::string error;
  // The index puts b in the shard that lacks it.
  std::string index = writeIndex(
      {{"a", baseName(one)}, {"b", baseName(one)}, {"c", baseName(one)}});
  EXPECT_FALSE(weights.load(model, index.c_str(), error));
  EXPECT_EQ(error, index + ": the index puts tensor 'b' in '" + one +
                       "', which has no such tensor");
  // c in both shards.
  index = writeIndex(
      {{"a", baseName(one)}, {"b", baseName(two)}, {"c", baseName(two)}});
  EXPECT_FALSE(weights.load(model, index.c_str(), error));
  EXPECT_EQ(error, index + ": tensor 'c' is in more than one shard");
  // A shard that is not there.
  std::string gone = tempPath("gone.safetensors");
  index = writeIndex({{"a", baseName(one)}, {"b", baseName(gone)}});
  EXPECT_FALSE(weights.load(model, index.c_str(), error));
  EXPECT_NE(error.find(gone + ": "), std::string::npos) << error;
  // Not an index: no weight_map; a shard path outside the index's folder.
  std::string notIndex = tempPath("x.json");
  writeFile(notIndex, "{\"metadata\": {}}");
  EXPECT_FALSE(weights.load(model, notIndex.c_str(), error));
  EXPECT_EQ(error, notIndex + ": no \"weight_map\" object (a safetensors "
                              "index maps each tensor to its shard)");
  index = writeIndex({{"a", "../elsewhere.safetensors"}});
  EXPECT_FALSE(weights.load(model, index.c_str(), error));
  EXPECT_EQ(error, index + ": weight_map entry 'a' does not name a file "
                           "beside the index (a string, no '/')");
  writeFile(notIndex, "{\"weight_map\": [1, 2");
  EXPECT_FALSE(weights.load(model, notIndex.c_str(), error));
  EXPECT_EQ(error.rfind(notIndex + ": not valid JSON: ", 0), 0u) << error;
}

TEST(Weights, IgnoredTensorsAreNotUnexpected) {
  const ParamInfo params[] = {{"a", nullptr, 1, {2}, ParamInit::Zeros, 0.0f}};
  ModelInfo model = modelWith(params, 1);
  // A prefix (ends in '.') and an exact name.
  const char *const ignored[] = {"pooler.", "embeddings.position_ids"};
  model.ignoredTensors = ignored;
  model.numIgnoredTensors = 2;
  std::string path;
  std::string error = loadError(
      model,
      safetensorsImage({{"a", "F32", {2}, zeros(2)},
                        {"pooler.dense.weight", "F32", {1}, zeros(1)},
                        {"embeddings.position_ids", "I64", {1}, zeros(2)},
                        {"embeddings.position_ids2", "F32", {1}, zeros(1)},
                        {"poolerx", "F32", {1}, zeros(1)}}),
      &path);
  EXPECT_EQ(error, path +
                       ": unexpected tensor 'embeddings.position_ids2' [1] "
                       "(not a parameter of model 'test')\n" +
                       path +
                       ": unexpected tensor 'poolerx' [1] (not a "
                       "parameter of model 'test')");
  writeFile(path,
            safetensorsImage({{"a", "F32", {2}, zeros(2)},
                              {"pooler.dense.bias", "F32", {1}, zeros(1)}}));
  Weights weights;
  EXPECT_TRUE(weights.load(model, path.c_str(), error)) << error;
}

TEST(Weights, LoaderConvertsOnlyMarkedWeights) {
  const ParamInfo params[] = {
      {"w",
       nullptr,
       2,
       {1, 3},
       ParamInit::Uniform,
       0.5f,
       nullptr,
       0,
       false,
       false,
       WeightFormat::BF16},
      {"b", nullptr, 1, {3}, ParamInit::Zeros, 0.0f},
  };
  ModelInfo model = modelWith(params, 2);
  std::string path = tempPath("formats.safetensors");
  float x = 1.00390625f; // 1 + 2^-8: a bf16 tie, rounds to 1
  writeFile(path,
            safetensorsImage({{"w", "F32", {1, 3}, f32Bytes({x, x, 0.1f})},
                              {"b", "F32", {3}, f32Bytes({x, x, 0.1f})}}));
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.load(model, path.c_str(), error)) << error;
  const float *const *p = weights.pointers();
  EXPECT_EQ(p[0][0], 1.0f);
  EXPECT_EQ(p[0][2], roundToBFloat16(0.1f));
  EXPECT_NE(p[0][2], 0.1f);
  EXPECT_EQ(p[1][0], x); // not a GEMM weight: as the file has it
  EXPECT_EQ(p[1][2], 0.1f);
}

TEST(Weights, LoaderNamesTheTensorAFloat16OverflowIsIn) {
  const ParamInfo params[] = {
      {"layers.0.linear1.weight",
       nullptr,
       2,
       {2, 2},
       ParamInit::Uniform,
       0.5f,
       nullptr,
       0,
       false,
       false,
       WeightFormat::F16},
  };
  ModelInfo model = modelWith(params, 1);
  std::string path = tempPath("overflow.safetensors");
  writeFile(path, safetensorsImage({{"layers.0.linear1.weight",
                                     "F32",
                                     {2, 2},
                                     f32Bytes({1.0f, 2.0f, 3.0f, -1e6f})}}));
  Weights weights;
  std::string error;
  ASSERT_FALSE(weights.load(model, path.c_str(), error));
  EXPECT_EQ(error, path + ": tensor 'layers.0.linear1.weight' has the value "
                          "-1e+06 at [1, 1], beyond float16's largest finite "
                          "value 65504: the model was compiled with "
                          "--weight-dtype=f16 (bf16 or f32 keep it)");
}

TEST(Weights, RandomWeightsAreConvertedToo) {
  const ParamInfo params[] = {
      {"w",
       nullptr,
       2,
       {4, 40},
       ParamInit::Uniform,
       1.0f,
       nullptr,
       0,
       false,
       false,
       WeightFormat::Int8},
      {"v", nullptr, 2, {4, 40}, ParamInit::Uniform, 1.0f},
  };
  ModelInfo model = modelWith(params, 2);
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.initRandom(model, error)) << error;
  // Same name-seeded values before conversion: compare with a converted
  // copy of an unconverted twin.
  const ParamInfo twin[] = {
      {"w", nullptr, 2, {4, 40}, ParamInit::Uniform, 1.0f},
  };
  Weights plain;
  ASSERT_TRUE(plain.initRandom(modelWith(twin, 1), error)) << error;
  std::vector<float> expected(plain.pointers()[0], plain.pointers()[0] + 160);
  size_t at;
  ASSERT_TRUE(convertWeight(expected.data(), 4, 40, WeightFormat::Int8, &at));
  for (size_t i = 0; i < 160; ++i)
    ASSERT_EQ(weights.pointers()[0][i], expected[i]) << i;
  EXPECT_NE(std::memcmp(weights.pointers()[0], plain.pointers()[0], 160 * 4),
            0);
}

TEST(Weights, OneTableForTwoWeightsIsConvertedForBoth) {
  // An encoder_decoder's src and tgt tables read one shared embed.weight;
  // the tied head converts tgt's, and so the table both look up.
  const ParamInfo params[] = {
      {"src_embed.weight", "embed.weight", 2, {1, 2}, ParamInit::Normal, 1.0f},
      {"tgt_embed.weight",
       "embed.weight",
       2,
       {1, 2},
       ParamInit::Normal,
       1.0f,
       nullptr,
       0,
       false,
       false,
       WeightFormat::BF16},
  };
  ModelInfo model = modelWith(params, 2);
  std::string path = tempPath("shared.safetensors");
  writeFile(path,
            safetensorsImage(
                {{"embed.weight", "F32", {1, 2}, f32Bytes({0.1f, 1.0f})}}));
  Weights weights;
  std::string error;
  ASSERT_TRUE(weights.load(model, path.c_str(), error)) << error;
  EXPECT_EQ(weights.pointers()[0][0], roundToBFloat16(0.1f));
  EXPECT_EQ(weights.pointers()[1][0], roundToBFloat16(0.1f));
  EXPECT_NE(weights.pointers()[0][0], 0.1f);

  // Two tables in the file: only the converted weight's is.
  writeFile(path,
            safetensorsImage(
                {{"src_embed.weight", "F32", {1, 2}, f32Bytes({0.1f, 1.0f})},
                 {"tgt_embed.weight", "F32", {1, 2}, f32Bytes({0.1f, 1.0f})}}));
  Weights two;
  ASSERT_TRUE(two.load(model, path.c_str(), error)) << error;
  EXPECT_EQ(two.pointers()[0][0], 0.1f);
  EXPECT_EQ(two.pointers()[1][0], roundToBFloat16(0.1f));
}

} // namespace
