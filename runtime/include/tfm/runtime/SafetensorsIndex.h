//===- SafetensorsIndex.h - a sharded checkpoint's index --------*- C++ -*-===//
//
// `model.safetensors.index.json`, as Hugging Face writes it for a checkpoint
// saved in shards: {"metadata": {...}, "weight_map": {TENSOR: SHARD, ...}},
// each SHARD a safetensors file beside the index.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_SAFETENSORSINDEX_H
#define TFM_RUNTIME_SAFETENSORSINDEX_H

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tfm::rt {

struct SafetensorsIndex {
  /// The shards' paths (the index's directory joined with each name), in
  /// the order of their names, each once.
  std::vector<std::string> shards;
  /// Each tensor the index lists, sorted by name, and its shard's index in
  /// `shards`.
  std::vector<std::pair<std::string, size_t>> tensors;
};

/// Whether `path` names an index (ends in ".json") rather than a
/// safetensors file.
bool isSafetensorsIndexPath(const char *path);

/// Reads the index at `path`. Every problem is one line of `error`,
/// starting with "PATH: ".
bool readSafetensorsIndex(const char *path, SafetensorsIndex &index,
                          std::string &error);

} // namespace tfm::rt

#endif // TFM_RUNTIME_SAFETENSORSINDEX_H
