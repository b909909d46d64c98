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
  case DType::Bool:
    return "bool";
  }
  return "unknown";
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::I64:
    return 8;
  case DType::Bool:
    return 1;
  case DType::F32:
  case DType::I32:
    return 4;
  }
  return 4;
}

} // namespace tfm::rt
