//===- Safetensors.h - reading Hugging Face safetensors files ---*- C++ -*-===//
//
// The format: an 8-byte little-endian header length, a JSON header mapping
// each tensor name to {dtype, shape, data_offsets}, then the raw data. The
// reader checks the whole header before anyone reads a byte of data, so a
// damaged or hostile file fails with a message instead of a wild read.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_SAFETENSORS_H
#define TFM_RUNTIME_SAFETENSORS_H

#include "tfm/runtime/MappedFile.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tfm::rt {

/// The dtypes tfm loads; F16 and BF16 are widened to float32 on load.
/// The dtypes tfm reads: floats for weights, integers for ids
/// (BigBird's block_pattern).
enum class TensorDType : uint8_t { F32, F16, BF16, I32, I64 };

/// Whether a tensor of this dtype holds floats.
inline bool isFloatDType(TensorDType dtype) {
  return dtype == TensorDType::F32 || dtype == TensorDType::F16 ||
         dtype == TensorDType::BF16;
}

const char *tensorDTypeName(TensorDType dtype);

/// The offset of the first '[' or '{' (outside strings) nested deeper than
/// `maxDepth`, or npos: llvm::json parses and destroys values recursively,
/// so hostile nesting ([[[[...) would overflow the stack.
size_t findDeepJsonNesting(std::string_view text, unsigned maxDepth);
size_t tensorDTypeSize(TensorDType dtype);

struct SafetensorsTensor {
  std::string name;
  TensorDType dtype;
  std::vector<int64_t> shape;
  /// Points into the mapped file; `bytes` is checked to equal the element
  /// count times the dtype's size and to lie inside the file.
  const unsigned char *data;
  size_t bytes;
};

class SafetensorsFile {
public:
  /// Maps `path` and checks its header: every problem found is one line of
  /// `error`, each starting with "PATH: ".
  bool open(const char *path, std::string &error);

  /// The same checks on the image of a whole safetensors file that the
  /// caller owns: `bytes` must stay valid and unchanged while this object
  /// is used (tensors point into it). `path` only names it in messages.
  bool parse(const unsigned char *bytes, size_t size, const char *path,
             std::string &error);

  /// Sorted by name.
  const std::vector<SafetensorsTensor> &tensors() const { return entries; }
  const SafetensorsTensor *find(std::string_view name) const;

private:
  MappedFile file;
  std::vector<SafetensorsTensor> entries;
};

} // namespace tfm::rt

#endif // TFM_RUNTIME_SAFETENSORS_H
