//===- MappedFile.h - a whole file, read-only in memory ---------*- C++ -*-===//

#ifndef TFM_RUNTIME_MAPPEDFILE_H
#define TFM_RUNTIME_MAPPEDFILE_H

#include <cstddef>
#include <string>

namespace tfm::rt {

/// Mapped rather than read, so float32 weights are used in place without a
/// copy and pages of unused data are never touched.
class MappedFile {
public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  /// On failure `error` is "PATH: cannot open: REASON" or similar.
  bool open(const char *path, std::string &error);
  const unsigned char *data() const { return bytes; }
  size_t size() const { return length; }

private:
  void close();

  const unsigned char *bytes = nullptr;
  size_t length = 0;
};

} // namespace tfm::rt

#endif // TFM_RUNTIME_MAPPEDFILE_H
