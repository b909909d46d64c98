//===- Weights.cpp - a model's parameters, loaded and checked -------------===//

#include "tfm/runtime/Weights.h"
#include "tfm/runtime/HalfFloat.h"
#include "tfm/runtime/Random.h"
#include "tfm/runtime/SafetensorsIndex.h"
#include "tfm/runtime/Shape.h"
#include "tfm/runtime/ThreadPool.h"
#include "tfm/runtime/WeightFormat.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
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

/// Element `e` of `tensor` as a float (byte-wise reads: the data may be at
/// any alignment in the file).
float elementAt(const SafetensorsTensor &tensor, size_t e) {
  const unsigned char *in = tensor.data;
  switch (tensor.dtype) {
  case TensorDType::F32: {
    float f;
    std::memcpy(&f, in + 4 * e, 4);
    return f;
  }
  case TensorDType::F16:
    return halfToFloat(uint16_t(in[2 * e] | (in[2 * e + 1] << 8)));
  case TensorDType::BF16:
    return bfloat16ToFloat(uint16_t(in[2 * e] | (in[2 * e + 1] << 8)));
  case TensorDType::I32:
  case TensorDType::I64:
    break; // ids: idAt
  }
  return 0.0f;
}

/// Element `e` of an integer tensor as a key-block id among `rows` blocks:
/// the id as a float, or -1 where it is outside [0, rows).
float idAt(const SafetensorsTensor &tensor, size_t e, int64_t rows) {
  int64_t id = -1;
  if (tensor.dtype == TensorDType::I32) {
    int32_t v;
    std::memcpy(&v, tensor.data + 4 * e, 4);
    id = v;
  } else if (tensor.dtype == TensorDType::I64) {
    std::memcpy(&id, tensor.data + 8 * e, 8);
  }
  return id >= 0 && id < rows ? float(id) : -1.0f;
}

/// Why `tensor` cannot hold `param` by its dtype, or "" when it can: ids
/// are integers, everything else floats.
std::string dtypeProblem(const ParamInfo &param,
                         const SafetensorsTensor &tensor) {
  bool ids = param.blockIds;
  if (ids == !isFloatDType(tensor.dtype))
    return "";
  std::string what = "tensor '" + tensor.name + "'";
  if (tensor.name != param.name)
    what += std::string(" (for '") + param.name + "')";
  return what + " has dtype " + tensorDTypeName(tensor.dtype) +
         (ids ? ", expected I32 or I64 (key-block ids)"
              : ", expected F32, F16 or BF16");
}

/// Whether `tensor`'s bytes can be a weight's floats where they lie:
/// float32, aligned for a float, and kept as they are (`format` F32).
bool usableInPlace(const SafetensorsTensor &tensor, WeightFormat format) {
  return tensor.dtype == TensorDType::F32 &&
         reinterpret_cast<uintptr_t>(tensor.data) % alignof(float) == 0 &&
         format == WeightFormat::F32;
}

/// Rounds `param`'s loaded values `w` to `format`; "" when done, else why
/// not (f16 overflow), naming the weight (its tensors in the file: `from`).
std::string convert(const ParamInfo &param, WeightFormat format, float *w,
                    const std::string &from) {
  int64_t cols = param.rank == 2 ? param.shape[1] : 1;
  size_t at = 0;
  if (convertWeight(w, param.shape[0], cols, format, &at))
    return "";
  std::string what = "tensor " + from;
  if (from != std::string("'") + param.name + "'")
    what += std::string(" (for '") + param.name + "')";
  char value[32];
  std::snprintf(value, sizeof(value), "%g", double(w[at]));
  return what + " has the value " + value + " at [" +
         std::to_string(int64_t(at) / cols) + ", " +
         std::to_string(int64_t(at) % cols) +
         "], beyond float16's largest finite value 65504: the model was "
         "compiled with --weight-dtype=f16 (bf16 or f32 keep it)";
}

/// "'a' [2, 3], 'b' [4, 3]": the sources of a weight as the file has them.
std::string describeSources(const std::vector<const SafetensorsTensor *> &ts) {
  std::string text;
  for (const SafetensorsTensor *t : ts) {
    if (!text.empty())
      text += ", ";
    text += "'" + t->name + "' " +
            ShapeText(t->shape.data(), t->shape.size()).c_str();
  }
  return text;
}

} // namespace

bool Weights::load(const ModelInfo &model, const char *path,
                   std::string &error) {
  ptrs.assign(model.numParams, nullptr);
  files.clear();
  if (isSafetensorsIndexPath(path)) {
    if (!openShards(path, error))
      return false;
    return loadParsed(model, path, error);
  }
  files.push_back(std::make_unique<SafetensorsFile>());
  if (!files.back()->open(path, error))
    return false;
  return loadParsed(model, path, error);
}

bool Weights::loadImage(const ModelInfo &model, const unsigned char *bytes,
                        size_t size, const char *path, std::string &error) {
  ptrs.assign(model.numParams, nullptr);
  files.clear();
  files.push_back(std::make_unique<SafetensorsFile>());
  if (!files.back()->parse(bytes, size, path, error))
    return false;
  return loadParsed(model, path, error);
}

bool Weights::openShards(const char *path, std::string &error) {
  SafetensorsIndex index;
  if (!readSafetensorsIndex(path, index, error))
    return false;
  std::string problems;
  auto problem = [&](const std::string &what) {
    if (!problems.empty())
      problems += '\n';
    problems += what;
  };
  for (const std::string &shard : index.shards) {
    files.push_back(std::make_unique<SafetensorsFile>());
    std::string shardError;
    if (!files.back()->open(shard.c_str(), shardError))
      problem(shardError);
  }
  if (problems.empty())
    for (const auto &[tensor, shard] : index.tensors)
      if (!files[shard]->find(tensor))
        problem(std::string(path) + ": the index puts tensor '" + tensor +
                "' in '" + index.shards[shard] + "', which has no such tensor");
  if (!problems.empty()) {
    files.clear();
    error = std::move(problems);
    return false;
  }
  return true;
}

namespace {

/// Whether `name` is one of `model`'s ignored tensors (an exact name, or a
/// prefix ending in '.').
bool isIgnored(const ModelInfo &model, const std::string &name) {
  for (size_t i = 0; i < model.numIgnoredTensors; ++i) {
    std::string_view ignored = model.ignoredTensors[i];
    if (ignored.empty())
      continue;
    if (ignored.back() == '.' ? name.compare(0, ignored.size(), ignored) == 0
                              : name == ignored)
      return true;
  }
  return false;
}

} // namespace

bool Weights::loadParsed(const ModelInfo &model, const char *path,
                         std::string &error) {
  std::string problems;
  auto problem = [&](const std::string &what) {
    if (!problems.empty())
      problems += '\n';
    problems += std::string(path) + ": " + what;
  };

  // Every file's tensors, sorted by name; a name in two shards is an error.
  std::vector<const SafetensorsTensor *> tensors;
  for (const auto &file : files)
    for (const SafetensorsTensor &t : file->tensors())
      tensors.push_back(&t);
  std::sort(tensors.begin(), tensors.end(),
            [](const SafetensorsTensor *a, const SafetensorsTensor *b) {
              return a->name < b->name;
            });
  std::vector<bool> used(tensors.size(), false);
  for (size_t t = 1; t < tensors.size(); ++t)
    if (tensors[t]->name == tensors[t - 1]->name) {
      problem("tensor '" + tensors[t]->name + "' is in more than one shard");
      used[t] = true; // said once
    }
  auto find = [&](std::string_view name) -> const SafetensorsTensor * {
    auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                               [](const SafetensorsTensor *t,
                                  std::string_view n) { return t->name < n; });
    return it != tensors.end() && (*it)->name == name ? *it : nullptr;
  };
  auto indexOf = [&](const SafetensorsTensor *t) {
    return size_t(
        std::lower_bound(tensors.begin(), tensors.end(), t->name,
                         [](const SafetensorsTensor *a, const std::string &n) {
                           return a->name < n;
                         }) -
        tensors.begin());
  };

  // Pass 1: match every parameter to a tensor and check it; nothing is
  // converted until all of them are known to be good.
  std::vector<const SafetensorsTensor *> source(model.numParams, nullptr);
  // Weights a checkpoint stores in parts (param.sources): the parts.
  std::vector<std::vector<const SafetensorsTensor *>> parts(model.numParams);
  size_t ownedBytes = 0;
  for (size_t i = 0; i < model.numParams; ++i) {
    const ParamInfo &param = model.params[i];
    uint64_t elements;
    if (!paramElements(param, elements)) {
      problem(std::string("internal error: parameter '") + param.name +
              "' has an invalid shape in the compiled model");
      continue;
    }
    if (param.numSources > 0) {
      // Stacked along the first dimension; each part [rows, rest...], or
      // [cols, rows] when stored transposed.
      bool ok = true;
      int64_t rows = 0;
      for (int s = 0; s < param.numSources; ++s) {
        const SafetensorsTensor *part = find(param.sources[s]);
        if (!part) {
          std::string part = param.numSources == 1
                                 ? std::string("for '")
                                 : "part " + std::to_string(s + 1) + " of " +
                                       std::to_string(param.numSources) +
                                       " of '";
          problem(std::string("missing tensor '") + param.sources[s] + "' (" +
                  part + param.name + "' " + shapeOf(param) + ")");
          ok = false;
          continue;
        }
        used[indexOf(part)] = true;
        parts[i].push_back(part);
        if (std::string bad = dtypeProblem(param, *part); !bad.empty()) {
          problem(bad);
          ok = false;
          continue;
        }
        const std::vector<int64_t> &shape = part->shape;
        bool fits = shape.size() == size_t(param.rank) && param.rank >= 1;
        if (fits && param.transposed)
          fits = param.rank == 2 && shape[0] == param.shape[1];
        else if (fits)
          fits = std::equal(shape.begin() + 1, shape.end(), param.shape + 1);
        if (fits)
          rows += shape[param.transposed ? 1 : 0];
        ok = ok && fits;
      }
      if (ok && rows != param.shape[0])
        ok = false;
      if (!ok && parts[i].size() == size_t(param.numSources))
        problem("tensors " + describeSources(parts[i]) + " do not make '" +
                param.name + "' " + shapeOf(param) +
                (param.transposed ? " (each stored transposed, stacked by "
                                    "columns)"
                                  : " (stacked along the first dimension)"));
      if (ok)
        ownedBytes += alignedFloatBytes(elements);
      continue;
    }
    const SafetensorsTensor *tensor = find(param.name);
    if (!tensor && param.alias)
      tensor = find(param.alias);
    if (!tensor) {
      std::string what =
          std::string("missing tensor '") + param.name + "' " + shapeOf(param);
      if (param.alias)
        what += std::string(" (or its alias '") + param.alias + "')";
      problem(what);
      continue;
    }
    used[indexOf(tensor)] = true;
    if (!sameShape(param, tensor->shape)) {
      std::string what = "tensor '" + tensor->name + "'";
      if (tensor->name != param.name)
        what += std::string(" (for '") + param.name + "')";
      problem(what + " has shape " +
              ShapeText(tensor->shape.data(), tensor->shape.size()).c_str() +
              ", expected " + shapeOf(param));
      continue;
    }
    if (std::string bad = dtypeProblem(param, *tensor); !bad.empty()) {
      problem(bad);
      continue;
    }
    source[i] = tensor;
  }
  // The format each weight is kept in. Two weights read from one tensor (an
  // encoder_decoder's src and tgt tables as one shared embed.weight) are
  // one table: converted for both when either is (a tied head's table is,
  // and every lookup then reads its converted rows).
  std::vector<WeightFormat> format(model.numParams);
  std::map<const SafetensorsTensor *, WeightFormat> tensorFormat;
  for (size_t i = 0; i < model.numParams; ++i) {
    format[i] = model.params[i].format;
    if (source[i] && format[i] != WeightFormat::F32)
      tensorFormat[source[i]] = format[i];
  }
  for (size_t i = 0; i < model.numParams; ++i) {
    if (!source[i])
      continue;
    if (auto it = tensorFormat.find(source[i]); it != tensorFormat.end())
      format[i] = it->second;
    if (!usableInPlace(*source[i], format[i]))
      ownedBytes += alignedFloatBytes(source[i]->bytes /
                                      tensorDTypeSize(source[i]->dtype));
  }
  for (size_t t = 0; t < tensors.size(); ++t)
    if (!used[t] && !isIgnored(model, tensors[t]->name))
      problem("unexpected tensor '" + tensors[t]->name + "' " +
              ShapeText(tensors[t]->shape.data(), tensors[t]->shape.size())
                  .c_str() +
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
    const ParamInfo &param = model.params[i];
    if (param.numSources > 0) {
      auto *out = reinterpret_cast<float *>(next);
      uint64_t elements = 1;
      paramElements(param, elements);
      next += alignedFloatBytes(elements);
      int64_t cols = int64_t(elements) / param.shape[0], row0 = 0;
      for (const SafetensorsTensor *part : parts[i]) {
        int64_t rows = part->shape[param.transposed ? 1 : 0];
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            out[(row0 + r) * cols + c] = elementAt(
                *part, size_t(param.transposed ? c * rows + r : r * cols + c));
        row0 += rows;
      }
      ptrs[i] = out;
      if (std::string bad =
              convert(param, format[i], out, describeSources(parts[i]));
          !bad.empty()) {
        error = std::string(path) + ": " + bad;
        return false;
      }
      continue;
    }
    const SafetensorsTensor &tensor = *source[i];
    size_t elements = tensor.bytes / tensorDTypeSize(tensor.dtype);
    if (usableInPlace(tensor, format[i])) {
      ptrs[i] = reinterpret_cast<const float *>(tensor.data);
      continue;
    }
    auto *out = reinterpret_cast<float *>(next);
    next += alignedFloatBytes(elements);
    // Byte-wise reads: the data may be at any alignment in the file.
    if (param.blockIds)
      for (size_t e = 0; e < elements; ++e)
        out[e] = idAt(tensor, e, param.shape[0]);
    else
      for (size_t e = 0; e < elements; ++e)
        out[e] = elementAt(tensor, e);
    ptrs[i] = out;
    if (std::string bad =
            convert(param, format[i], out, "'" + tensor.name + "'");
        !bad.empty()) {
      error = std::string(path) + ": " + bad;
      return false;
    }
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
    case ParamInit::BlockIds:
      // Uniform in [0, rows): whole numbers, each an id.
      fillUniform(out, count, 0.5f, seed, chunk.first);
      for (size_t e = 0; e < count; ++e)
        out[e] = std::min(std::floor((out[e] + 0.5f) * float(param.shape[0])),
                          float(param.shape[0] - 1));
      break;
    }
  };
  int64_t n = int64_t(chunks.size());
  if (!pool || pool->size() == 1 || n < 2) {
    for (const Chunk &chunk : chunks)
      fillChunk(chunk);
  } else {
    // The pool gives each thread a contiguous range of indices; a stride
    // coprime to n (near n / golden ratio) spreads every range over all the
    // tensors, so that no thread gets all of the slower Normal ones.
    int64_t stride = std::max<int64_t>(1, int64_t(double(n) * 0.618034));
    while (std::gcd(stride, n) != 1)
      ++stride;
    pool->parallelFor(
        n, [&](int64_t i) { fillChunk(chunks[size_t(i * stride % n)]); });
  }
  // Random weights are kept as the compiled format keeps a file's (they
  // lie in `owned`, which these weights may write).
  for (size_t i = 0; i < model.numParams; ++i)
    if (std::string bad =
            convert(model.params[i], model.params[i].format,
                    const_cast<float *>(ptrs[i]),
                    std::string("'") + model.params[i].name + "'");
        !bad.empty()) {
      error = "random weights: " + bad;
      return false;
    }
  return true;
}

} // namespace tfm::rt
