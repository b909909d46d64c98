//===- Safetensors.cpp - reading Hugging Face safetensors files -----------===//

#include "tfm/runtime/Safetensors.h"
#include "tfm/runtime/Shape.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstring>

namespace tfm::rt {

namespace {

// The limit the reference implementation (safetensors' MAX_HEADER_SIZE)
// enforces: a larger header is a damaged file, and must not make us parse
// gigabytes of JSON.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// llvm::json parses and destroys values recursively, so deep nesting
// ([[[[...) in a hostile header would overflow the stack. A header needs 3
// levels (object, entry, shape).
constexpr unsigned kMaxJsonDepth = 64;

bool parseDType(llvm::StringRef name, TensorDType &dtype) {
  if (name == "F32")
    dtype = TensorDType::F32;
  else if (name == "F16")
    dtype = TensorDType::F16;
  else if (name == "BF16")
    dtype = TensorDType::BF16;
  else if (name == "I32")
    dtype = TensorDType::I32;
  else if (name == "I64")
    dtype = TensorDType::I64;
  else
    return false;
  return true;
}

/// Collects one line per problem, each prefixed with the file name.
class Problems {
public:
  explicit Problems(const char *path) : path(path) {}
  void add(const std::string &what) {
    if (!text.empty())
      text += '\n';
    text += path;
    text += ": ";
    text += what;
  }
  bool empty() const { return text.empty(); }
  std::string take() { return std::move(text); }

private:
  const char *path;
  std::string text;
};

std::string quoted(llvm::StringRef name) { return "'" + name.str() + "'"; }

/// Checks one header entry; returns false after recording a problem.
bool parseEntry(llvm::StringRef name, const llvm::json::Value &value,
                const unsigned char *data, uint64_t dataBytes,
                SafetensorsTensor &out, Problems &problems) {
  std::string tensor = "tensor " + quoted(name);
  const llvm::json::Object *entry = value.getAsObject();
  if (!entry) {
    problems.add(tensor + ": header entry is not an object");
    return false;
  }
  std::optional<llvm::StringRef> dtype = entry->getString("dtype");
  if (!dtype) {
    problems.add(tensor + ": header entry has no string 'dtype'");
    return false;
  }
  if (!parseDType(*dtype, out.dtype)) {
    problems.add(
        tensor + " has dtype " + dtype->str() +
        ", which tfm does not load (supported: F32, F16, BF16; I32 and "
        "I64 for ids)");
    return false;
  }
  const llvm::json::Array *shape = entry->getArray("shape");
  if (!shape) {
    problems.add(tensor + ": header entry has no array 'shape'");
    return false;
  }
  out.shape.clear();
  for (const llvm::json::Value &dim : *shape) {
    std::optional<int64_t> size = dim.getAsInteger();
    if (!size || *size < 0) {
      problems.add(tensor + ": 'shape' must hold non-negative integers only");
      return false;
    }
    out.shape.push_back(*size);
  }
  const llvm::json::Array *offsets = entry->getArray("data_offsets");
  std::optional<int64_t> begin, end;
  if (offsets && offsets->size() == 2) {
    begin = (*offsets)[0].getAsInteger();
    end = (*offsets)[1].getAsInteger();
  }
  if (!begin || !end || *begin < 0 || *end < *begin) {
    problems.add(tensor + ": 'data_offsets' must be two integers [begin, "
                          "end) with 0 <= begin <= end");
    return false;
  }
  std::string range =
      "data [" + std::to_string(*begin) + ", " + std::to_string(*end) + ")";
  if (uint64_t(*end) > dataBytes) {
    problems.add(tensor + " " + range + " exceeds the file's data (" +
                 std::to_string(dataBytes) + " bytes)");
    return false;
  }
  uint64_t elements;
  size_t elementSize = tensorDTypeSize(out.dtype);
  ShapeText shapeText(out.shape.data(), out.shape.size());
  if (!checkedElementCount(out.shape.data(), out.shape.size(), elementSize,
                           dataBytes, elements)) {
    problems.add(tensor + " has shape " + shapeText.c_str() +
                 ", more than the file's data (" + std::to_string(dataBytes) +
                 " bytes) can hold");
    return false;
  }
  uint64_t bytes = uint64_t(*end - *begin);
  if (bytes != elements * elementSize) {
    problems.add(tensor + " " + range + " holds " + std::to_string(bytes) +
                 " bytes, but shape " + shapeText.c_str() + " of " +
                 dtype->str() + " needs " +
                 std::to_string(elements * elementSize));
    return false;
  }
  out.name = name.str();
  out.data = data + *begin;
  out.bytes = size_t(bytes);
  return true;
}

} // namespace

size_t findDeepJsonNesting(std::string_view text, unsigned maxDepth) {
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

const char *tensorDTypeName(TensorDType dtype) {
  switch (dtype) {
  case TensorDType::F32:
    return "F32";
  case TensorDType::F16:
    return "F16";
  case TensorDType::BF16:
    return "BF16";
  case TensorDType::I32:
    return "I32";
  case TensorDType::I64:
    return "I64";
  }
  return "unknown";
}

size_t tensorDTypeSize(TensorDType dtype) {
  switch (dtype) {
  case TensorDType::F16:
  case TensorDType::BF16:
    return 2;
  case TensorDType::F32:
  case TensorDType::I32:
    return 4;
  case TensorDType::I64:
    return 8;
  }
  return 4;
}

bool SafetensorsFile::open(const char *path, std::string &error) {
  entries.clear();
  if (!file.open(path, error))
    return false;
  return parse(file.data(), file.size(), path, error);
}

bool SafetensorsFile::parse(const unsigned char *bytes, size_t size,
                            const char *path, std::string &error) {
  entries.clear();
  Problems problems(path);
  if (size < 8) {
    problems.add("file of " + std::to_string(size) +
                 " bytes is too short for a safetensors file (it starts with "
                 "an 8-byte header length)");
    error = problems.take();
    return false;
  }
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | bytes[i];
  if (headerBytes > size - 8) {
    problems.add("header length " + std::to_string(headerBytes) +
                 " exceeds the file (" + std::to_string(size) +
                 " bytes); the file is truncated or not safetensors");
    error = problems.take();
    return false;
  }
  if (headerBytes > kMaxHeaderBytes) {
    problems.add("header length " + std::to_string(headerBytes) +
                 " exceeds the safetensors limit of " +
                 std::to_string(kMaxHeaderBytes) + " bytes");
    error = problems.take();
    return false;
  }
  llvm::StringRef headerText(reinterpret_cast<const char *>(bytes + 8),
                             size_t(headerBytes));
  if (size_t deep = findDeepJsonNesting(headerText, kMaxJsonDepth);
      deep != llvm::StringRef::npos) {
    problems.add("header nests JSON deeper than " +
                 std::to_string(kMaxJsonDepth) + " levels (at byte " +
                 std::to_string(8 + deep) +
                 "); the file is damaged or not safetensors");
    error = problems.take();
    return false;
  }
  llvm::Expected<llvm::json::Value> header = llvm::json::parse(headerText);
  if (!header) {
    problems.add("header is not valid JSON: " +
                 llvm::toString(header.takeError()));
    error = problems.take();
    return false;
  }
  const llvm::json::Object *tensors = header->getAsObject();
  if (!tensors) {
    problems.add("header is not a JSON object");
    error = problems.take();
    return false;
  }

  const unsigned char *data = bytes + 8 + headerBytes;
  uint64_t dataBytes = size - 8 - headerBytes;
  // Sorted, so that messages come in a stable order (JSON objects are
  // hashed) and lookups are binary searches.
  std::vector<llvm::StringRef> names;
  for (const auto &member : *tensors)
    if (member.first != "__metadata__")
      names.push_back(member.first);
  std::sort(names.begin(), names.end());
  entries.reserve(names.size());
  for (llvm::StringRef name : names) {
    SafetensorsTensor entry;
    if (parseEntry(name, *tensors->get(name), data, dataBytes, entry, problems))
      entries.push_back(std::move(entry));
  }
  if (!problems.empty()) {
    entries.clear();
    error = problems.take();
    return false;
  }
  return true;
}

const SafetensorsTensor *SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(entries.begin(), entries.end(), name,
                             [](const SafetensorsTensor &t,
                                std::string_view n) { return t.name < n; });
  if (it == entries.end() || it->name != name)
    return nullptr;
  return &*it;
}

} // namespace tfm::rt
