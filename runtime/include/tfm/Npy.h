//===- Npy.h - reading and writing NumPy .npy files -------------*- C++ -*-===//
//
// The subset a model's inputs and outputs need: versions 1.0, 2.0 and 3.0,
// little-endian, C order, float32/int32/int64. Everything else is rejected
// with a message that says what to do instead, never misread.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_NPY_H
#define TFM_RUNTIME_NPY_H

#include "tfm/runtime/AlignedBuffer.h"
#include "tfm/runtime/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfm::rt {

struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  AlignedBuffer data;

  TensorRef ref() const {
    return {dtype, int(shape.size()), shape.data(), data.data()};
  }
};

/// On failure `error` is "PATH: WHAT".
bool readNpy(const char *path, NpyArray &out, std::string &error);

/// Parses the image of a whole .npy file; `path` only names it in messages.
bool parseNpy(const unsigned char *bytes, size_t size, const char *path,
              NpyArray &out, std::string &error);

/// Writes version 1.0 with the data 64-byte aligned in the file, so a
/// reader that maps it can use the data in place.
bool writeNpy(const char *path, const TensorRef &tensor, std::string &error);

} // namespace tfm::rt

#endif // TFM_RUNTIME_NPY_H
