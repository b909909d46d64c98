//===- MappedFile.cpp - a whole file, read-only in memory -----------------===//

#include "tfm/runtime/MappedFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tfm::rt {

MappedFile::~MappedFile() { close(); }

void MappedFile::close() {
  if (bytes)
    ::munmap(const_cast<unsigned char *>(bytes), length);
  bytes = nullptr;
  length = 0;
}

bool MappedFile::open(const char *path, std::string &error) {
  close();
  auto fail = [&](const char *what, int err) {
    error = std::string(path) + ": " + what;
    if (err)
      error += std::string(": ") + std::strerror(err);
    return false;
  };
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("cannot open", errno);
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    return fail("cannot stat", err);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return fail(
        S_ISDIR(info.st_mode) ? "is a directory" : "is not a regular file", 0);
  }
  // An empty file cannot be mapped; it is simply zero bytes long.
  if (info.st_size == 0) {
    ::close(fd);
    return true;
  }
  void *mapped =
      ::mmap(nullptr, size_t(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (mapped == MAP_FAILED)
    return fail("cannot map", err);
  bytes = static_cast<const unsigned char *>(mapped);
  length = size_t(info.st_size);
  return true;
}

} // namespace tfm::rt
