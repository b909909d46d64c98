//===- Npy.cpp - reading and writing NumPy .npy files ---------------------===//
//
// The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// parsed here by a small recursive-descent reader that knows exactly the
// value forms NumPy writes: strings, True/False and tuples of integers.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/Npy.h"
#include "tfm/runtime/MappedFile.h"
#include "tfm/runtime/Shape.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace tfm::rt {

namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// NumPy itself allows 32 (64 in NumPy 2); nothing a model reads has more
// than 3, and a bound keeps a hostile header from growing the shape.
constexpr size_t kMaxRank = 32;

/// The header dict, parsed.
struct Header {
  std::string descr;
  bool haveDescr = false, haveOrder = false, haveShape = false;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text(text) {}

  /// On failure `problem` says what was expected where.
  bool parse(Header &header, std::string &problem) {
    if (!expect('{', problem))
      return false;
    for (;;) {
      skipSpace();
      if (consume('}'))
        return true;
      std::string key;
      if (!parseString(key, problem) || !expect(':', problem))
        return false;
      if (key == "descr") {
        if (!parseString(header.descr, problem)) {
          problem += " (structured dtypes are not supported)";
          return false;
        }
        header.haveDescr = true;
      } else if (key == "fortran_order") {
        if (!parseBool(header.fortranOrder, problem))
          return false;
        header.haveOrder = true;
      } else if (key == "shape") {
        if (!parseShape(header.shape, problem))
          return false;
        header.haveShape = true;
      } else {
        problem = "unexpected key '" + key + "'";
        return false;
      }
      skipSpace();
      if (consume(','))
        continue;
      if (!expect('}', problem))
        return false;
      return true;
    }
  }

private:
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool expect(char c, std::string &problem) {
    if (consume(c))
      return true;
    problem =
        std::string("expected '") + c + "' at offset " + std::to_string(pos);
    return false;
  }
  bool parseString(std::string &out, std::string &problem) {
    skipSpace();
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"')) {
      problem = "expected a string at offset " + std::to_string(pos);
      return false;
    }
    char quote = text[pos++];
    size_t close = text.find(quote, pos);
    if (close == std::string_view::npos) {
      problem = "unterminated string at offset " + std::to_string(pos - 1);
      return false;
    }
    out.assign(text.substr(pos, close - pos));
    pos = close + 1;
    return true;
  }
  bool parseBool(bool &out, std::string &problem) {
    skipSpace();
    if (text.substr(pos, 4) == "True") {
      out = true;
      pos += 4;
      return true;
    }
    if (text.substr(pos, 5) == "False") {
      out = false;
      pos += 5;
      return true;
    }
    problem = "expected True or False at offset " + std::to_string(pos);
    return false;
  }
  bool parseShape(std::vector<int64_t> &shape, std::string &problem) {
    shape.clear();
    if (!expect('(', problem))
      return false;
    for (;;) {
      if (consume(')'))
        return true;
      skipSpace();
      size_t start = pos;
      int64_t value = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        if (__builtin_mul_overflow(value, int64_t(10), &value) ||
            __builtin_add_overflow(value, int64_t(text[pos] - '0'), &value)) {
          problem = "shape dimension at offset " + std::to_string(start) +
                    " is too large";
          return false;
        }
        ++pos;
      }
      if (pos == start) {
        problem = "expected a non-negative integer in 'shape' at offset " +
                  std::to_string(pos);
        return false;
      }
      // Python 2 wrote long integers with a suffix.
      if (pos < text.size() && text[pos] == 'L')
        ++pos;
      if (shape.size() == kMaxRank) {
        problem =
            "shape has more than " + std::to_string(kMaxRank) + " dimensions";
        return false;
      }
      shape.push_back(value);
      if (consume(','))
        continue;
      return expect(')', problem);
    }
  }

  std::string_view text;
  size_t pos = 0;
};

bool parseDescr(const std::string &descr, DType &dtype, std::string &problem) {
  if (descr.size() >= 2 && descr[0] == '>') {
    problem = "big-endian dtype '" + descr +
              "' is not supported; save it little-endian "
              "(arr.astype(arr.dtype.newbyteorder('<')))";
    return false;
  }
  if (descr == "<f4" || descr == "|f4")
    dtype = DType::F32;
  else if (descr == "<i4" || descr == "|i4")
    dtype = DType::I32;
  else if (descr == "<i8" || descr == "|i8")
    dtype = DType::I64;
  else if (descr == "|b1")
    dtype = DType::Bool;
  else {
    problem = "unsupported dtype '" + descr +
              "' (supported: '<f4' float32, '<i4' int32, '<i8' int64, '|b1' "
              "bool)";
    return false;
  }
  return true;
}

} // namespace

bool parseNpy(const unsigned char *bytes, size_t size, const char *path,
              NpyArray &out, std::string &error) {
  auto fail = [&](const std::string &what) {
    error = std::string(path) + ": " + what;
    return false;
  };
  if (size == 0)
    return fail("file is empty, not a .npy file");
  if (std::memcmp(bytes, kMagic, std::min(size, sizeof(kMagic))) != 0)
    return fail("not a .npy file (bad magic)");
  if (size < 8)
    return fail("truncated .npy file (" + std::to_string(size) + " bytes)");
  unsigned major = bytes[6], minor = bytes[7];
  size_t preamble;
  uint64_t headerBytes;
  if (major == 1) {
    preamble = 10;
    if (size < preamble)
      return fail("truncated .npy header");
    headerBytes = bytes[8] | (unsigned(bytes[9]) << 8);
  } else if (major == 2 || major == 3) {
    preamble = 12;
    if (size < preamble)
      return fail("truncated .npy header");
    headerBytes = bytes[8] | (unsigned(bytes[9]) << 8) |
                  (uint32_t(bytes[10]) << 16) | (uint32_t(bytes[11]) << 24);
  } else {
    return fail("unsupported .npy version " + std::to_string(major) + "." +
                std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  if (headerBytes > size - preamble)
    return fail("truncated .npy header (it declares " +
                std::to_string(headerBytes) + " bytes, the file has " +
                std::to_string(size - preamble) + " after the preamble)");

  Header header;
  std::string problem;
  std::string_view text(reinterpret_cast<const char *>(bytes + preamble),
                        size_t(headerBytes));
  if (!HeaderParser(text).parse(header, problem))
    return fail("malformed .npy header: " + problem);
  if (!header.haveDescr || !header.haveOrder || !header.haveShape)
    return fail("malformed .npy header: it needs 'descr', 'fortran_order' "
                "and 'shape'");
  if (header.fortranOrder)
    return fail("Fortran-order arrays are not supported; save a C-order "
                "array (np.ascontiguousarray)");
  if (!parseDescr(header.descr, out.dtype, problem))
    return fail(problem);

  uint64_t dataBytes = size - preamble - headerBytes;
  ShapeText shapeText(header.shape.data(), header.shape.size());
  uint64_t elements;
  // Bounding by the file keeps an absurd shape from ever being allocated.
  if (!checkedElementCount(header.shape.data(), header.shape.size(),
                           dtypeSize(out.dtype), UINT64_MAX >> 1, elements))
    return fail(std::string("shape ") + shapeText.c_str() + " is too large");
  uint64_t needed = elements * dtypeSize(out.dtype);
  if (needed != dataBytes)
    return fail(std::string(needed > dataBytes ? "truncated: " : "") +
                "shape " + shapeText.c_str() + " of " + dtypeName(out.dtype) +
                " needs " + std::to_string(needed) +
                " bytes of data, the file has " + std::to_string(dataBytes));
  if (!out.data.allocate(size_t(needed)))
    return fail("out of memory reading " + std::to_string(needed) + " bytes");
  if (needed)
    std::memcpy(out.data.data(), bytes + preamble + headerBytes,
                size_t(needed));
  out.shape = std::move(header.shape);
  return true;
}

bool readNpy(const char *path, NpyArray &out, std::string &error) {
  MappedFile file;
  if (!file.open(path, error))
    return false;
  static const unsigned char empty = 0;
  return parseNpy(file.size() ? file.data() : &empty, file.size(), path, out,
                  error);
}

bool writeNpy(const char *path, const TensorRef &tensor, std::string &error) {
  std::string header = "{'descr': '";
  header += tensor.dtype == DType::F32    ? "<f4"
            : tensor.dtype == DType::I32  ? "<i4"
            : tensor.dtype == DType::Bool ? "|b1"
                                          : "<i8";
  header += "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < tensor.rank; ++i) {
    header += std::to_string(tensor.shape[i]);
    if (i + 1 < tensor.rank || tensor.rank == 1)
      header += ",";
    if (i + 1 < tensor.rank)
      header += " ";
  }
  header += "), }";
  // Pad with spaces and end with a newline, as NumPy does, so that the
  // 10-byte preamble plus the header is a multiple of 64.
  size_t total = (10 + header.size() + 1 + 63) & ~size_t(63);
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';

  uint64_t elements = 0;
  checkedElementCount(tensor.shape, size_t(tensor.rank), 1, UINT64_MAX,
                      elements);
  size_t dataBytes = size_t(elements) * dtypeSize(tensor.dtype);

  auto fail = [&](int err) {
    error = std::string(path) + ": cannot write: " + std::strerror(err);
    return false;
  };
  std::FILE *file = std::fopen(path, "wb");
  if (!file)
    return fail(errno);
  unsigned char preamble[10] = {0x93,
                                'N',
                                'U',
                                'M',
                                'P',
                                'Y',
                                1,
                                0,
                                uint8_t(header.size() & 0xff),
                                uint8_t(header.size() >> 8)};
  bool ok =
      std::fwrite(preamble, 1, sizeof(preamble), file) == sizeof(preamble) &&
      std::fwrite(header.data(), 1, header.size(), file) == header.size() &&
      (dataBytes == 0 ||
       std::fwrite(tensor.data, 1, dataBytes, file) == dataBytes);
  int err = errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    err = errno;
  }
  return ok ? true : fail(err ? err : EIO);
}

} // namespace tfm::rt
