//===- DType.cpp - element types of input and output tensors --------------===//

#include "tfm/runtime/DType.h"

namespace tfm::rt {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::I32:
    return "int32";
  case DType::I64:
    return "int64";
  }
  return "unknown";
}

size_t dtypeSize(DType dtype) { return dtype == DType::I64 ? 8 : 4; }

} // namespace tfm::rt
