//===- NpyTest.cpp - the .npy reader and writer ---------------------------===//

#include "tfm/runtime/Npy.h"
#include "RuntimeTestUtil.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace tfm::rt;
using namespace tfm::test;

namespace {

bool parse(const std::string &image, NpyArray &array, std::string &error) {
  return parseNpy(reinterpret_cast<const unsigned char *>(image.data()),
                  image.size(), "x.npy", array, error);
}

std::string parseError(const std::string &image) {
  NpyArray array;
  std::string error;
  EXPECT_FALSE(parse(image, array, error));
  EXPECT_EQ(error.rfind("x.npy: ", 0), 0u) << error;
  return error;
}

TEST(Npy, ReadsEachDTypeInEachVersion) {
  for (int major : {1, 2, 3}) {
    NpyArray array;
    std::string error;
    ASSERT_TRUE(
        parse(npyImage("<f4", {2, 3}, f32Bytes({1, 2, 3, 4, 5, 6.5f}), major),
              array, error))
        << error;
    EXPECT_EQ(array.dtype, DType::F32);
    EXPECT_EQ(array.shape, std::vector<int64_t>({2, 3}));
    EXPECT_EQ(static_cast<const float *>(array.data.data())[5], 6.5f);

    ASSERT_TRUE(
        parse(npyImage("<i4", {3}, i32Bytes({7, -1, 9}), major), array, error))
        << error;
    EXPECT_EQ(array.dtype, DType::I32);
    EXPECT_EQ(array.shape, std::vector<int64_t>({3}));
    EXPECT_EQ(static_cast<const int32_t *>(array.data.data())[1], -1);

    ASSERT_TRUE(parse(npyImage("<i8", {1, 2}, i64Bytes({1ll << 40, 3}), major),
                      array, error))
        << error;
    EXPECT_EQ(array.dtype, DType::I64);
    EXPECT_EQ(static_cast<const int64_t *>(array.data.data())[0], 1ll << 40);
  }
}

TEST(Npy, AcceptsNotApplicableByteOrderAndEmptyArrays) {
  NpyArray array;
  std::string error;
  ASSERT_TRUE(parse(npyImage("|i4", {1}, i32Bytes({4})), array, error))
      << error;
  EXPECT_EQ(array.dtype, DType::I32);
  ASSERT_TRUE(parse(npyImage("<f4", {0, 3}, ""), array, error)) << error;
  EXPECT_EQ(array.shape, std::vector<int64_t>({0, 3}));
  ASSERT_TRUE(parse(npyImage("<f4", {}, f32Bytes({2})), array, error)) << error;
  EXPECT_TRUE(array.shape.empty());
}

TEST(Npy, ToleratesNumPyHeaderVariants) {
  // Key order, double quotes, no trailing comma, Python 2's long suffix.
  std::string header =
      "{\"shape\": (2L, 1), \"fortran_order\": False, \"descr\": \"<i4\"}";
  std::string image = std::string("\x93NUMPY\x01\x00", 8);
  image += char(header.size());
  image += char(0);
  image += header + i32Bytes({5, 6});
  NpyArray array;
  std::string error;
  ASSERT_TRUE(parse(image, array, error)) << error;
  EXPECT_EQ(array.shape, std::vector<int64_t>({2, 1}));
}

TEST(Npy, RejectsBadMagic) {
  EXPECT_EQ(parseError("PK\x03\x04 this is a zip"),
            "x.npy: not a .npy file (bad magic)");
  EXPECT_EQ(parseError(""), "x.npy: file is empty, not a .npy file");
}

TEST(Npy, RejectsUnknownVersion) {
  std::string image = npyImage("<f4", {1}, f32Bytes({1}));
  image[6] = 4;
  EXPECT_EQ(parseError(image),
            "x.npy: unsupported .npy version 4.0 (supported: 1.0, 2.0, 3.0)");
}

TEST(Npy, RejectsFortranOrder) {
  EXPECT_NE(parseError(npyImage("<f4", {2, 2}, f32Bytes({1, 2, 3, 4}), 1,
                                /*fortranOrder=*/true))
                .find("Fortran-order arrays are not supported"),
            std::string::npos);
}

TEST(Npy, RejectsBigEndian) {
  EXPECT_NE(parseError(npyImage(">f4", {1}, f32Bytes({1})))
                .find("big-endian dtype '>f4' is not supported"),
            std::string::npos);
}

TEST(Npy, RejectsUnsupportedDType) {
  EXPECT_EQ(parseError(npyImage("<f8", {1}, std::string(8, '\0'))),
            "x.npy: unsupported dtype '<f8' (supported: '<f4' float32, '<i4' "
            "int32, '<i8' int64, '|b1' bool)");
  EXPECT_NE(parseError(npyImage("<u1", {1}, std::string(1, '\0')))
                .find("unsupported dtype '<u1'"),
            std::string::npos);
}

TEST(Npy, ReadsBool) {
  // A padding mask saved from NumPy's bool: one byte an element.
  NpyArray array;
  std::string error;
  std::string bytes = {char(1), char(0), char(1)};
  ASSERT_TRUE(parse(npyImage("|b1", {3}, bytes), array, error)) << error;
  EXPECT_EQ(array.dtype, DType::Bool);
  EXPECT_EQ(array.shape, std::vector<int64_t>({3}));
  const auto *data = static_cast<const uint8_t *>(array.data.data());
  EXPECT_EQ(data[0], 1);
  EXPECT_EQ(data[1], 0);
  EXPECT_EQ(data[2], 1);
}

TEST(Npy, RejectsStructuredDType) {
  std::string header = "{'descr': [('a', '<f4')], 'fortran_order': False, "
                       "'shape': (1,), }";
  std::string image = std::string("\x93NUMPY\x01\x00", 8);
  image += char(header.size());
  image += char(0);
  EXPECT_NE(parseError(image + header + f32Bytes({1}))
                .find("structured dtypes are not supported"),
            std::string::npos);
}

TEST(Npy, RejectsTooMuchData) {
  EXPECT_EQ(parseError(npyImage("<i4", {2}, i32Bytes({1, 2, 3}))),
            "x.npy: shape [2] of int32 needs 8 bytes of data, the file has "
            "12");
}

TEST(Npy, RejectsTruncatedData) {
  EXPECT_EQ(parseError(npyImage("<f4", {2, 3}, f32Bytes({1, 2}))),
            "x.npy: truncated: shape [2, 3] of float32 needs 24 bytes of "
            "data, the file has 8");
}

TEST(Npy, RejectsTruncatedHeader) {
  std::string image = npyImage("<f4", {2}, f32Bytes({1, 2}));
  EXPECT_NE(parseError(image.substr(0, 30)).find("truncated .npy header"),
            std::string::npos);
  EXPECT_NE(parseError(image.substr(0, 7)).find("truncated .npy file"),
            std::string::npos);
}

TEST(Npy, RejectsAbsurdShapes) {
  EXPECT_EQ(parseError(npyImage("<f4", {1ll << 40, 1ll << 40}, "")),
            "x.npy: shape [1099511627776, 1099511627776] is too large");
  EXPECT_EQ(parseError(npyImage("<f4", {}, "")),
            "x.npy: truncated: shape [] of float32 needs 4 bytes of data, "
            "the file has 0");
  std::string huge = "{'descr': '<f4', 'fortran_order': False, 'shape': "
                     "(99999999999999999999,), }";
  std::string image = std::string("\x93NUMPY\x01\x00", 8);
  image += char(huge.size());
  image += char(0);
  EXPECT_NE(parseError(image + huge).find("is too large"), std::string::npos);
}

TEST(Npy, RejectsMalformedHeader) {
  std::string header = "{'descr': '<f4', 'shape': (1,), }";
  std::string image = std::string("\x93NUMPY\x01\x00", 8);
  image += char(header.size());
  image += char(0);
  EXPECT_NE(parseError(image + header + f32Bytes({1}))
                .find("it needs 'descr', 'fortran_order' and 'shape'"),
            std::string::npos);
  header = "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }";
  image = std::string("\x93NUMPY\x01\x00", 8);
  image += char(header.size());
  image += char(0);
  EXPECT_NE(
      parseError(image + header + f32Bytes({1})).find("expected True or False"),
      std::string::npos);
}

TEST(Npy, MissingFileNamesTheFile) {
  NpyArray array;
  std::string error;
  EXPECT_FALSE(readNpy("/nonexistent/in.npy", array, error));
  EXPECT_EQ(error, "/nonexistent/in.npy: cannot open: No such file or "
                   "directory");
}

TEST(Npy, WriterRoundTripsWithAlignedData) {
  const float values[] = {1.5f, -2, 3, 4, 5, 6};
  const int64_t shapes[][3] = {{2, 3, 1}, {6, 0, 0}};
  const int ranks[] = {3, 1};
  for (int s = 0; s < 2; ++s) {
    std::string path = tempPath("out.npy");
    std::string error;
    ASSERT_TRUE(writeNpy(path.c_str(),
                         {DType::F32, ranks[s], shapes[s], values}, error))
        << error;
    std::string bytes = readFile(path);
    size_t headerLength = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
    EXPECT_EQ((10 + headerLength) % 64, 0u);
    EXPECT_EQ(bytes[6], 1);
    EXPECT_EQ(bytes[10 + headerLength - 1], '\n');
    NpyArray array;
    ASSERT_TRUE(readNpy(path.c_str(), array, error)) << error;
    EXPECT_EQ(array.shape,
              std::vector<int64_t>(shapes[s], shapes[s] + ranks[s]));
    EXPECT_EQ(std::memcmp(array.data.data(), values, sizeof(values)), 0);
  }
  const int32_t ids[] = {3, 1, 4};
  const int64_t shape[] = {3};
  std::string path = tempPath("ids.npy");
  std::string error;
  ASSERT_TRUE(writeNpy(path.c_str(), {DType::I32, 1, shape, ids}, error));
  EXPECT_NE(readFile(path).find("{'descr': '<i4', 'fortran_order': False, "
                                "'shape': (3,), }"),
            std::string::npos);
}

TEST(Npy, WriterReportsUnwritablePath) {
  const float value = 1;
  const int64_t shape[] = {1};
  std::string error;
  EXPECT_FALSE(
      writeNpy("/nonexistent/out.npy", {DType::F32, 1, shape, &value}, error));
  EXPECT_EQ(error,
            "/nonexistent/out.npy: cannot write: No such file or directory");
}

} // namespace
