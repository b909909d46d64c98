//===- SafetensorsIndex.cpp - a sharded checkpoint's index ----------------===//

#include "tfm/runtime/SafetensorsIndex.h"
#include "tfm/runtime/MappedFile.h"
#include "tfm/runtime/Safetensors.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstring>

namespace tfm::rt {

bool isSafetensorsIndexPath(const char *path) {
  size_t length = std::strlen(path);
  return length >= 5 && std::strcmp(path + length - 5, ".json") == 0;
}

bool readSafetensorsIndex(const char *path, SafetensorsIndex &index,
                          std::string &error) {
  index = {};
  MappedFile file;
  if (!file.open(path, error))
    return false;
  auto fail = [&](const std::string &what) {
    error = std::string(path) + ": " + what;
    return false;
  };
  llvm::StringRef text(reinterpret_cast<const char *>(file.data()),
                       file.size());
  if (findDeepJsonNesting(text, 64) != llvm::StringRef::npos)
    return fail("nests JSON deeper than 64 levels; not a safetensors index");
  llvm::Expected<llvm::json::Value> root = llvm::json::parse(text);
  if (!root)
    return fail("not valid JSON: " + llvm::toString(root.takeError()));
  const llvm::json::Object *object = root->getAsObject();
  const llvm::json::Object *map =
      object ? object->getObject("weight_map") : nullptr;
  if (!map)
    return fail("no \"weight_map\" object (a safetensors index maps each "
                "tensor to its shard)");

  std::string dir(path);
  size_t slash = dir.find_last_of('/');
  dir = slash == std::string::npos ? std::string() : dir.substr(0, slash + 1);
  std::vector<std::pair<std::string, std::string>> entries;
  std::string problems;
  for (const auto &kv : *map) {
    std::optional<llvm::StringRef> shard = kv.second.getAsString();
    if (!shard || shard->empty() || shard->contains('/') ||
        shard->contains('\0')) {
      if (!problems.empty())
        problems += '\n';
      problems += std::string(path) + ": weight_map entry '" + kv.first.str() +
                  "' does not name a file beside the index (a string, no "
                  "'/')";
      continue;
    }
    entries.emplace_back(kv.first.str(), shard->str());
  }
  if (!problems.empty()) {
    error = std::move(problems);
    return false;
  }
  if (entries.empty())
    return fail("its weight_map lists no tensor");
  std::vector<std::string> names;
  for (const auto &[tensor, shard] : entries)
    names.push_back(shard);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const std::string &name : names)
    index.shards.push_back(dir + name);
  std::sort(entries.begin(), entries.end());
  for (const auto &[tensor, shard] : entries)
    index.tensors.emplace_back(
        tensor, size_t(std::lower_bound(names.begin(), names.end(), shard) -
                       names.begin()));
  return true;
}

} // namespace tfm::rt
