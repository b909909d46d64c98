//===- SafetensorsTest.cpp - the safetensors reader -----------------------===//
//
// The reader must accept what the reference writer produces and turn every
// kind of damage into a message naming the file and the tensor, without
// reading outside the file.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/Safetensors.h"
#include "RuntimeTestUtil.h"
#include "tfm/runtime/Weights.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace tfm::rt;
using namespace tfm::test;

namespace {

std::string openError(const std::string &image) {
  std::string path = tempPath("t.safetensors");
  writeFile(path, image);
  SafetensorsFile file;
  std::string error;
  EXPECT_FALSE(file.open(path.c_str(), error));
  // Every line names the file.
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  return error;
}

TEST(Safetensors, ReadsTensorsAndIgnoresMetadata) {
  std::string path = tempPath("ok.safetensors");
  writeFile(path, safetensorsImage(
                      {{"b", "F32", {2}, f32Bytes({1.5f, -2.0f})},
                       {"a.weight", "F16", {1, 2}, f16Bytes({0x3c00, 0xc000})},
                       {"c", "BF16", {}, f16Bytes({0x4049})}}));
  SafetensorsFile file;
  std::string error;
  ASSERT_TRUE(file.open(path.c_str(), error)) << error;
  ASSERT_EQ(file.tensors().size(), 3u);
  EXPECT_EQ(file.tensors()[0].name, "a.weight"); // sorted by name
  const SafetensorsTensor *b = file.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, TensorDType::F32);
  EXPECT_EQ(b->shape, std::vector<int64_t>({2}));
  ASSERT_EQ(b->bytes, 8u);
  float values[2];
  std::memcpy(values, b->data, 8);
  EXPECT_EQ(values[0], 1.5f);
  EXPECT_EQ(values[1], -2.0f);
  const SafetensorsTensor *a = file.find("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, TensorDType::F16);
  EXPECT_EQ(a->bytes, 4u);
  const SafetensorsTensor *c = file.find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->dtype, TensorDType::BF16);
  EXPECT_TRUE(c->shape.empty());
  EXPECT_EQ(file.find("__metadata__"), nullptr);
  EXPECT_EQ(file.find("d"), nullptr);
}

// The in-memory entry points (what the fuzzer drives) check exactly what
// open() and load() check, and name the image as told.
TEST(Safetensors, ParsesAnImageInMemory) {
  std::string image =
      safetensorsImage({{"w", "F16", {2}, f16Bytes({0x3c00, 0xc000})}});
  SafetensorsFile file;
  std::string error;
  ASSERT_TRUE(file.parse(reinterpret_cast<const unsigned char *>(image.data()),
                         image.size(), "mem", error))
      << error;
  ASSERT_NE(file.find("w"), nullptr);
  EXPECT_EQ(file.find("w")->bytes, 4u);

  const ParamInfo params[] = {{"w", nullptr, 1, {2}, ParamInit::Zeros, 0.0f}};
  const InputInfo inputs[] = {{"input", InputKind::TokenIds}};
  ModelInfo model{};
  model.name = "m";
  model.params = params;
  model.numParams = 1;
  model.inputs = inputs;
  model.numInputs = 1;
  Weights weights;
  ASSERT_TRUE(weights.loadImage(
      model, reinterpret_cast<const unsigned char *>(image.data()),
      image.size(), "mem", error))
      << error;
  EXPECT_EQ(weights.pointers()[0][0], 1.0f);
  EXPECT_EQ(weights.pointers()[0][1], -2.0f);

  std::string cut = image.substr(0, image.size() - 1);
  EXPECT_FALSE(file.parse(reinterpret_cast<const unsigned char *>(cut.data()),
                          cut.size(), "mem", error));
  EXPECT_EQ(error.rfind("mem: tensor 'w' data [0, 4) exceeds", 0), 0u) << error;
  EXPECT_FALSE(weights.loadImage(
      model, reinterpret_cast<const unsigned char *>(cut.data()), cut.size(),
      "mem", error));
  EXPECT_FALSE(file.parse(nullptr, 0, "mem", error));
  EXPECT_EQ(error.rfind("mem: file of 0 bytes is too short", 0), 0u) << error;
}

TEST(Safetensors, EmptyHeaderObjectIsValid) {
  std::string path = tempPath("empty.safetensors");
  writeFile(path, safetensorsRaw("{}", ""));
  SafetensorsFile file;
  std::string error;
  EXPECT_TRUE(file.open(path.c_str(), error)) << error;
  EXPECT_TRUE(file.tensors().empty());
}

TEST(Safetensors, MissingFile) {
  SafetensorsFile file;
  std::string error;
  EXPECT_FALSE(file.open("/nonexistent/w.safetensors", error));
  EXPECT_EQ(error, "/nonexistent/w.safetensors: cannot open: No such file or "
                   "directory");
}

TEST(Safetensors, FileShorterThanTheLengthField) {
  EXPECT_NE(openError(std::string("\x10\x00\x00", 3))
                .find("file of 3 bytes is too short for a safetensors file"),
            std::string::npos);
}

TEST(Safetensors, HeaderLengthPastTheEndOfFile) {
  std::string image = safetensorsImage({{"x", "F32", {1}, f32Bytes({1})}});
  std::string error = openError(image.substr(0, 20));
  EXPECT_NE(error.find("exceeds the file (20 bytes)"), std::string::npos)
      << error;
}

TEST(Safetensors, HugeHeaderLengthFailsBeforeAllocating) {
  // 2^63: a length that would overflow any size computation.
  std::string image("\x00\x00\x00\x00\x00\x00\x00\x80{}", 10);
  std::string error = openError(image);
  EXPECT_NE(error.find("header length 9223372036854775808 exceeds the file "
                       "(10 bytes)"),
            std::string::npos)
      << error;
}

// A header nested a million levels deep once overflowed the stack (the
// JSON parser recurses); now it is refused before parsing.
TEST(Safetensors, DeeplyNestedHeaderFailsWithoutRecursing) {
  std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  std::string error = openError(safetensorsRaw(deep, ""));
  EXPECT_NE(error.find("header nests JSON deeper than 64 levels (at byte "
                       "72); the file is damaged or not safetensors"),
            std::string::npos)
      << error;
  // Brackets inside strings do not count.
  std::string quoted = "{\"" + std::string(1000, '[') + "\": 1}";
  error = openError(safetensorsRaw(quoted, ""));
  EXPECT_EQ(error.find("deeper"), std::string::npos) << error;
}

TEST(Safetensors, HeaderIsNotJson) {
  std::string error = openError(safetensorsRaw("{\"x\": [", ""));
  EXPECT_NE(error.find("header is not valid JSON"), std::string::npos) << error;
  error = openError(safetensorsRaw("[1, 2]", ""));
  EXPECT_NE(error.find("header is not a JSON object"), std::string::npos)
      << error;
}

TEST(Safetensors, UnsupportedDTypeNamesTensorAndDType) {
  std::string error = openError(
      safetensorsImage({{"layers.0.ids", "U8", {2}, std::string(2, '\1')}}));
  EXPECT_NE(error.find("tensor 'layers.0.ids' has dtype U8, which tfm does "
                       "not load (supported: F32, F16, BF16; I32 and I64 for "
                       "ids)"),
            std::string::npos)
      << error;
}

TEST(Safetensors, DataPastTheEndOfFile) {
  std::string image =
      safetensorsImage({{"a", "F32", {2}, f32Bytes({1, 2})},
                        {"w", "F32", {4}, f32Bytes({1, 2, 3, 4})}});
  std::string error = openError(image.substr(0, image.size() - 4));
  EXPECT_NE(error.find("tensor 'w' data [8, 24) exceeds the file's data (20 "
                       "bytes)"),
            std::string::npos)
      << error;
}

TEST(Safetensors, OffsetsInconsistentWithShape) {
  std::string error = openError(safetensorsRaw(
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,12]}}",
      f32Bytes({1, 2, 3, 4})));
  EXPECT_NE(error.find("tensor 'w' data [0, 12) holds 12 bytes, but shape "
                       "[4] of F32 needs 16"),
            std::string::npos)
      << error;
}

TEST(Safetensors, ShapeTooLargeForTheFile) {
  std::string error = openError(safetensorsRaw(
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
      "\"data_offsets\":[0,4]}}",
      f32Bytes({1})));
  EXPECT_NE(error.find("tensor 'w' has shape [4294967296, 4294967296], more "
                       "than the file's data (4 bytes) can hold"),
            std::string::npos)
      << error;
}

TEST(Safetensors, MalformedEntries) {
  std::string error = openError(safetensorsRaw(
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]},"
      "\"c\":{\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"d\":3}",
      f32Bytes({1, 2})));
  // One line per broken tensor, in name order.
  EXPECT_NE(error.find("tensor 'a': 'shape' must hold non-negative"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("tensor 'b': 'data_offsets' must be two integers"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("tensor 'c': header entry has no string 'dtype'"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("tensor 'd': header entry is not an object"),
            std::string::npos)
      << error;
  EXPECT_LT(error.find("tensor 'a'"), error.find("tensor 'd'"));
}

} // namespace
