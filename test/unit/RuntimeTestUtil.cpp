//===- RuntimeTestUtil.cpp - files and processes for runtime tests --------===//

#include "RuntimeTestUtil.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

namespace tfm::test {

namespace {

/// The process's scratch folder, removed with all it holds when the process
/// exits: ctest runs every test in a process of its own, so folders left
/// behind would pile up by the thousand.
class ScratchFolder {
public:
  ScratchFolder() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/tfm-runtime-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!mkdtemp(buffer.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    path = buffer.data();
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string path;
};

const std::string &tempDir() {
  static const ScratchFolder folder;
  return folder.path;
}

template <typename T> std::string rawBytes(const std::vector<T> &values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  if (!values.empty())
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::string littleEndian(uint64_t value, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i)
    out += char((value >> (8 * i)) & 0xff);
  return out;
}

} // namespace

std::string tempPath(const std::string &name) {
  static int counter = 0;
  return tempDir() + "/" + std::to_string(++counter) + "-" + name;
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string f32Bytes(const std::vector<float> &values) {
  return rawBytes(values);
}
std::string f16Bytes(const std::vector<uint16_t> &bits) {
  return rawBytes(bits);
}
std::string i32Bytes(const std::vector<int32_t> &values) {
  return rawBytes(values);
}
std::string i64Bytes(const std::vector<int64_t> &values) {
  return rawBytes(values);
}

std::string safetensorsImage(const std::vector<StTensor> &tensors,
                             size_t headerAlign) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::string data;
  for (const StTensor &t : tensors) {
    header += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + t.data.size()) + "]}";
    data += t.data;
  }
  header += "}";
  while ((8 + header.size()) % headerAlign)
    header += ' ';
  return safetensorsRaw(header, data);
}

std::string safetensorsRaw(const std::string &header, const std::string &data) {
  return littleEndian(header.size(), 8) + header + data;
}

std::string npyImage(const std::string &descr,
                     const std::vector<int64_t> &shape, const std::string &data,
                     int major, bool fortranOrder) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " +
                       (fortranOrder ? "True" : "False") + ", 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    header += std::to_string(shape[i]) + (shape.size() == 1 ? "," : "") +
              (i + 1 < shape.size() ? ", " : "");
  header += "), }";
  size_t preamble = major == 1 ? 10 : 12;
  while ((preamble + header.size() + 1) % 16)
    header += ' ';
  header += '\n';
  std::string image = "\x93NUMPY";
  image += char(major);
  image += char(0);
  image += littleEndian(header.size(), major == 1 ? 2 : 4);
  return image + header + data;
}

RunResult runCommand(const std::string &command) {
  std::string errPath = tempPath("stderr.txt");
  std::string full = command + " 2>" + errPath;
  RunResult result{-1, "", ""};
  std::FILE *pipe = popen(full.c_str(), "r");
  if (!pipe)
    return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    result.out.append(buffer, n);
  int status = pclose(pipe);
  if (WIFEXITED(status))
    result.exitCode = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exitCode = -WTERMSIG(status);
  result.err = readFile(errPath);
  return result;
}

} // namespace tfm::test
