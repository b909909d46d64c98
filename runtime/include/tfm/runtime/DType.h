//===- DType.h - element types of input and output tensors ------*- C++ -*-===//

#ifndef TFM_RUNTIME_DTYPE_H
#define TFM_RUNTIME_DTYPE_H

#include "tfm/tfm.h"

#include <cstddef>
#include <cstdint>

namespace tfm::rt {

/// The values equal the C API's TFM_* constants, so a tfm_tensor's dtype
/// converts by a cast.
enum class DType : int32_t {
  F32 = TFM_F32,
  I32 = TFM_I32,
  I64 = TFM_I64,
  Bool = TFM_BOOL,
};

/// NumPy's name ("float32", "int32", "int64"), which users see in messages.
const char *dtypeName(DType dtype);
size_t dtypeSize(DType dtype);

/// A dense C-order tensor someone else owns: a .npy file just read, or a
/// C API caller's buffer.
struct TensorRef {
  DType dtype;
  int rank;
  const int64_t *shape;
  const void *data;
};

} // namespace tfm::rt

#endif // TFM_RUNTIME_DTYPE_H
