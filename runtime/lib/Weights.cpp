//===- Weights.cpp - a model's parameters, loaded and checked -------------===//

#include "tfm/runtime/Weights.h"
#include "tfm/runtime/HalfFloat.h"
#include "tfm/runtime/Random.h"
#include "tfm/runtime/Shape.h"
#include "tfm/runtime/ThreadPool.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tfm::rt {

namespace {

std::string shapeOf(const ParamInfo &param) {
  return ShapeText(param.shape, size_t(param.rank)).c_str();
}

bool sameShape(const ParamInfo &param, const std::vector<int64_t> &shape) {
  return shape.size() == size_t(param.rank) &&
         std::equal(shape.begin(), shape.end(), param.shape);
}

/// Bytes of one parameter as float32, rounded up to a cache line so the
/// next one starts aligned.
size_t alignedFloatBytes(uint64_t elements) {
  return (size_t(elements) * sizeof(float) + 63) & ~size_t(63);
}

bool paramElements(const ParamInfo &param, uint64_t &elements) {
  return param.rank >= 0 && param.rank <= kMaxRank &&
         checkedElementCount(param.shape, size_t(param.rank), sizeof(float),
                             UINT64_MAX >> 2, elements);
}

} // namespace

bool Weights::load(const ModelInfo &model, const char *path,
                   std::string &error) {
  ptrs.assign(model.numParams, nullptr);
  if (!file.open(path, error))
    return false;
  return loadParsed(model, path, error);
}

bool Weights::loadImage(const ModelInfo &model, const unsigned char *bytes,
                        size_t size, const char *path, std::string &error) {
  ptrs.assign(model.numParams, nullptr);
  if (!file.parse(bytes, size, path, error))
    return false;
  return loadParsed(model, path, error);
}

bool Weights::loadParsed(const ModelInfo &model, const char *path,
                         std::string &error) {
  std::string problems;
  auto problem = [&](const std::string &what) {
    if (!problems.empty())
      problems += '\n';
    problems += std::string(path) + ": " + what;
  };

  // Pass 1: match every parameter to a tensor and check it; nothing is
  // converted until all of them are known to be good.
  const std::vector<SafetensorsTensor> &tensors = file.tensors();
  std::vector<bool> used(tensors.size(), false);
  std::vector<const SafetensorsTensor *> source(model.numParams, nullptr);
  size_t ownedBytes = 0;
  for (size_t i = 0; i < model.numParams; ++i) {
    const ParamInfo &param = model.params[i];
    uint64_t elements;
    if (!paramElements(param, elements)) {
      problem(std::string("internal error: parameter '") + param.name +
              "' has an invalid shape in the compiled model");
      continue;
    }
    const SafetensorsTensor *tensor = file.find(param.name);
    if (!tensor && param.alias)
      tensor = file.find(param.alias);
    if (!tensor) {
      std::string what =
          std::string("missing tensor '") + param.name + "' " + shapeOf(param);
      if (param.alias)
        what += std::string(" (or its alias '") + param.alias + "')";
      problem(what);
      continue;
    }
    used[size_t(tensor - tensors.data())] = true;
    if (!sameShape(param, tensor->shape)) {
      std::string what = "tensor '" + tensor->name + "'";
      if (tensor->name != param.name)
        what += std::string(" (for '") + param.name + "')";
      problem(what + " has shape " +
              ShapeText(tensor->shape.data(), tensor->shape.size()).c_str() +
              ", expected " + shapeOf(param));
      continue;
    }
    source[i] = tensor;
    // float32 data is used where it lies unless misaligned for a float.
    bool inPlace =
        tensor->dtype == TensorDType::F32 &&
        reinterpret_cast<uintptr_t>(tensor->data) % alignof(float) == 0;
    if (!inPlace)
      ownedBytes += alignedFloatBytes(elements);
  }
  for (size_t t = 0; t < tensors.size(); ++t)
    if (!used[t])
      problem(
          "unexpected tensor '" + tensors[t].name + "' " +
          ShapeText(tensors[t].shape.data(), tensors[t].shape.size()).c_str() +
          " (not a parameter of model '" + model.name + "')");
  if (!problems.empty()) {
    error = std::move(problems);
    return false;
  }

  // Pass 2: convert into one block.
  if (!owned.allocate(ownedBytes)) {
    error = std::string(path) + ": out of memory converting " +
            std::to_string(ownedBytes) + " bytes of weights";
    return false;
  }
  auto *next = static_cast<unsigned char *>(owned.data());
  for (size_t i = 0; i < model.numParams; ++i) {
    const SafetensorsTensor &tensor = *source[i];
    size_t elements = tensor.bytes / tensorDTypeSize(tensor.dtype);
    if (tensor.dtype == TensorDType::F32 &&
        reinterpret_cast<uintptr_t>(tensor.data) % alignof(float) == 0) {
      ptrs[i] = reinterpret_cast<const float *>(tensor.data);
      continue;
    }
    auto *out = reinterpret_cast<float *>(next);
    next += alignedFloatBytes(elements);
    const unsigned char *in = tensor.data;
    // Byte-wise reads: the data may be at any alignment in the file.
    for (size_t e = 0; e < elements; ++e) {
      switch (tensor.dtype) {
      case TensorDType::F32:
        std::memcpy(&out[e], in + 4 * e, 4);
        break;
      case TensorDType::F16:
        out[e] = halfToFloat(uint16_t(in[2 * e] | (in[2 * e + 1] << 8)));
        break;
      case TensorDType::BF16:
        out[e] = bfloat16ToFloat(uint16_t(in[2 * e] | (in[2 * e + 1] << 8)));
        break;
      }
    }
    ptrs[i] = out;
  }
  return true;
}

bool Weights::initRandom(const ModelInfo &model, std::string &error,
                         ThreadPool *pool) {
  ptrs.assign(model.numParams, nullptr);
  size_t total = 0;
  for (size_t i = 0; i < model.numParams; ++i) {
    uint64_t elements;
    if (!paramElements(model.params[i], elements)) {
      error = std::string("internal error: parameter '") +
              model.params[i].name +
              "' has an invalid shape in the compiled model";
      return false;
    }
    total += alignedFloatBytes(elements);
  }
  if (!owned.allocate(total)) {
    error = "out of memory allocating " + std::to_string(total) +
            " bytes of weights";
    return false;
  }

  // The work in chunks of at most kChunk elements. Each element's value
  // depends only on its tensor's name and its index, so neither the
  // chunking nor the thread that fills a chunk changes the numbers.
  constexpr uint64_t kChunk = uint64_t(1) << 16;
  struct Chunk {
    float *out;
    uint32_t param;
    uint64_t first, count;
  };
  std::vector<Chunk> chunks;
  std::vector<uint64_t> seeds(model.numParams);
  auto *next = static_cast<unsigned char *>(owned.data());
  for (size_t i = 0; i < model.numParams; ++i) {
    uint64_t elements = 1;
    paramElements(model.params[i], elements);
    auto *out = reinterpret_cast<float *>(next);
    next += alignedFloatBytes(elements);
    ptrs[i] = out;
    seeds[i] = seedForName(model.params[i].name);
    for (uint64_t first = 0; first < elements; first += kChunk)
      chunks.push_back({out + first, uint32_t(i), first,
                        std::min(kChunk, elements - first)});
  }

  auto fillChunk = [&](const Chunk &chunk) {
    const ParamInfo &param = model.params[chunk.param];
    float *out = chunk.out;
    size_t count = size_t(chunk.count);
    uint64_t seed = seeds[chunk.param];
    switch (param.init) {
    case ParamInit::Zeros:
      std::fill(out, out + count, 0.0f);
      break;
    case ParamInit::Ones:
      std::fill(out, out + count, 1.0f);
      break;
    case ParamInit::Uniform:
      fillUniform(out, count, param.bound, seed, chunk.first);
      break;
    case ParamInit::Normal:
      fillNormal(out, count, param.bound, seed, chunk.first);
      break;
    }
  };
  int64_t n = int64_t(chunks.size());
  if (!pool || pool->size() == 1 || n < 2) {
    for (const Chunk &chunk : chunks)
      fillChunk(chunk);
    return true;
  }
  // The pool gives each thread a contiguous range of indices; a stride
  // coprime to n (near n / golden ratio) spreads every range over all the
  // tensors, so that no thread gets all of the slower Normal ones.
  int64_t stride = std::max<int64_t>(1, int64_t(double(n) * 0.618034));
  while (std::gcd(stride, n) != 1)
    ++stride;
  pool->parallelFor(
      n, [&](int64_t i) { fillChunk(chunks[size_t(i * stride % n)]); });
  return true;
}

} // namespace tfm::rt
