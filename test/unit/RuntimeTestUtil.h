//===- RuntimeTestUtil.h - files and processes for tests --------*- C++ -*-===//
//
// Builds safetensors and .npy images byte by byte (so tests can damage
// them on purpose) and runs the fake model executables.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_UNIT_RUNTIMETESTUTIL_H
#define TFM_TEST_UNIT_RUNTIMETESTUTIL_H

#include <cstdint>
#include <string>
#include <vector>

namespace tfm::test {

/// A fresh file name in this process's temporary folder.
std::string tempPath(const std::string &name);
void writeFile(const std::string &path, const std::string &bytes);
std::string readFile(const std::string &path);

std::string f32Bytes(const std::vector<float> &values);
std::string f16Bytes(const std::vector<uint16_t> &bits);
std::string i32Bytes(const std::vector<int32_t> &values);
std::string i64Bytes(const std::vector<int64_t> &values);

struct StTensor {
  std::string name;
  std::string dtype; // "F32", "F16", ...
  std::vector<int64_t> shape;
  std::string data;
};

/// A safetensors image with the tensors' data laid out in order. The header
/// is padded with spaces to `headerAlign` bytes (8, as the reference
/// writer does; other values misalign the data on purpose).
std::string safetensorsImage(const std::vector<StTensor> &tensors,
                             size_t headerAlign = 8);
/// A safetensors image with a hand-written JSON header.
std::string safetensorsRaw(const std::string &header, const std::string &data);

/// A .npy image: `descr` as written into the header ("<f4"), any version.
std::string npyImage(const std::string &descr,
                     const std::vector<int64_t> &shape, const std::string &data,
                     int major = 1, bool fortranOrder = false);

struct RunResult {
  int exitCode; // -SIGNAL when killed by a signal
  std::string out, err;
};
/// Runs `command` through the shell, capturing stdout and stderr.
RunResult runCommand(const std::string &command);

} // namespace tfm::test

#endif // TFM_TEST_UNIT_RUNTIMETESTUTIL_H
