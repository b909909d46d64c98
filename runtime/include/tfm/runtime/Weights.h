//===- Weights.h - a model's parameters, loaded and checked -----*- C++ -*-===//

#ifndef TFM_RUNTIME_WEIGHTS_H
#define TFM_RUNTIME_WEIGHTS_H

#include "tfm/runtime/AlignedBuffer.h"
#include "tfm/runtime/Model.h"
#include "tfm/runtime/Safetensors.h"

#include <memory>
#include <string>
#include <vector>

namespace tfm::rt {

class ThreadPool;

/// The float32 tensors the forward pass reads, in the order of
/// ModelInfo::params. float32 data of a weights file is used in place (it
/// is then only as aligned as the file makes it: 4 bytes at least); what is
/// converted or generated lives in one 64-byte aligned block.
class Weights {
public:
  /// Checks every tensor of the safetensors file `path` (or of the shards
  /// an index `path`, *.json, lists) against `model.params` (names or
  /// aliases, shapes, dtypes, extents) before converting any. Every
  /// problem is one line of `error`, starting with "PATH: ".
  bool load(const ModelInfo &model, const char *path, std::string &error);

  /// The same from the image of a whole safetensors file that the caller
  /// owns and keeps valid and unchanged while these weights are used
  /// (float32 tensors are used in place). `path` only names it in messages.
  bool loadImage(const ModelInfo &model, const unsigned char *bytes,
                 size_t size, const char *path, std::string &error);

  /// Fills each parameter as its ParamInfo says, from a seed derived from
  /// its name (so it does not depend on the order of parameters). Runs on
  /// `pool` if given; the numbers do not depend on it.
  bool initRandom(const ModelInfo &model, std::string &error,
                  ThreadPool *pool = nullptr);

  const float *const *pointers() const { return ptrs.data(); }

private:
  /// Checks and converts the tensors of `files`, already parsed.
  bool loadParsed(const ModelInfo &model, const char *path, std::string &error);
  /// Opens the shards of the index at `path`, checking that each holds the
  /// tensors the index puts there.
  bool openShards(const char *path, std::string &error);

  /// One file, or an index's shards.
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  AlignedBuffer owned;
  std::vector<const float *> ptrs;
};

} // namespace tfm::rt

#endif // TFM_RUNTIME_WEIGHTS_H
