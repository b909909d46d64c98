//===- Cli.cpp - the compiled executable's command line -------------------===//
//
// Everything the program allocates (inputs, weights, arena, threads, output)
// is allocated before the first forward pass; the timed loop calls only
// the model.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/Cli.h"
#include "tfm/runtime/AttentionWeights.h"
#include "tfm/runtime/Generate.h"
#include "tfm/runtime/Inputs.h"
#include "tfm/runtime/ModelInstance.h"
#include "tfm/runtime/Npy.h"
#include "tfm/runtime/Shape.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <vector>

namespace tfm::rt {

namespace {

constexpr int kMaxThreads = 1024;
constexpr int64_t kMaxRuns = 1'000'000;

struct Options {
  const char *weights = nullptr;
  // Per model input, then per padding mask; null: not given.
  std::vector<const char *> inputFiles;
  const char *output = nullptr;
  int threads = 1;
  int64_t bench = 0;
  int64_t warmup = -1; // -1: 2 with --bench, else 0
  bool help = false;
  // --generate and its sampling flags.
  int64_t generate = 0;
  const char *temperature = nullptr;
  int64_t topK = 0;
  int64_t seed = 0;
  bool samplingFlag = false;
  const char *stepLogits = nullptr;
  const char *dumpAttention = nullptr;
};

/// Prints each line of `message` as "PROG: error: LINE".
void reportError(const char *program, const std::string &message) {
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos)
      end = message.size();
    std::fprintf(stderr, "%s: error: %.*s\n", program, int(end - start),
                 message.data() + start);
    start = end + 1;
  }
}

std::string inputNames(const ModelInfo &model) {
  std::string names;
  for (size_t i = 0; i < model.numInputs; ++i) {
    if (i)
      names += i + 1 == model.numInputs ? " and " : ", ";
    names += model.inputs[i].name;
    if (model.inputs[i].zerosLike >= 0)
      names += std::string(" (optional: zeros like ") +
               model.inputs[model.inputs[i].zerosLike].name + ")";
  }
  for (size_t m = 0; m < model.numMasks; ++m)
    names += std::string(m ? ", " : "; optional padding masks: ") +
             model.masks[m].name;
  return names;
}

bool parseCount(std::string_view flag, const char *text, int64_t min,
                int64_t max, int64_t &value, std::string &error) {
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(text, &end, 10);
  if (!*text || *end != '\0' || errno == ERANGE || parsed < min ||
      parsed > max) {
    error = std::string(flag) + " expects an integer from " +
            std::to_string(min) + " to " + std::to_string(max) + ", not '" +
            text + "'";
    return false;
  }
  value = parsed;
  return true;
}

/// False with `error` set on bad flags.
bool parseOptions(const ModelInfo &model, int argc, char **argv,
                  Options &options, std::string &error) {
  size_t numNamed = model.numInputs + model.numMasks;
  options.inputFiles.assign(numNamed, nullptr);
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view flag = arg;
    const char *inlineValue = nullptr;
    size_t equals = arg.find('=');
    if (arg.substr(0, 2) == "--" && equals != std::string_view::npos) {
      flag = arg.substr(0, equals);
      inlineValue = argv[i] + equals + 1;
    }
    auto value = [&]() -> const char * {
      if (inlineValue)
        return inlineValue;
      if (i + 1 < argc)
        return argv[++i];
      error = std::string(flag) + " expects a value (see --help)";
      return nullptr;
    };
    int64_t number;
    if (flag == "--help" || flag == "-h") {
      options.help = true;
    } else if (flag == "--weights") {
      if (!(options.weights = value()))
        return false;
    } else if (flag == "--output") {
      if (!(options.output = value()))
        return false;
    } else if (flag == "--input") {
      const char *spec = value();
      if (!spec)
        return false;
      const char *split = std::strchr(spec, '=');
      if (!split) {
        error = std::string("--input expects NAME=FILE, not '") + spec +
                "' (this model's inputs: " + inputNames(model) + ")";
        return false;
      }
      std::string_view name(spec, size_t(split - spec));
      size_t index = 0;
      auto nameOf = [&](size_t i) {
        return i < model.numInputs ? model.inputs[i].name
                                   : model.masks[i - model.numInputs].name;
      };
      while (index < numNamed && name != nameOf(index))
        ++index;
      if (index == numNamed) {
        error = "--input " + std::string(spec) + ": unknown input '" +
                std::string(name) +
                "' (this model's inputs: " + inputNames(model) + ")";
        // A mask's name (mask, src_mask, tgt_mask) on a model without
        // masks: say why it has none.
        if (model.masksRefused && name.size() >= 4 &&
            name.substr(name.size() - 4) == "mask")
          error += std::string("; this model takes no padding mask: ") +
                   model.masksRefused;
        return false;
      }
      if (options.inputFiles[index]) {
        error = "--input " + std::string(name) + " is given twice";
        return false;
      }
      options.inputFiles[index] = split + 1;
    } else if (flag == "--threads") {
      const char *text = value();
      if (!text || !parseCount(flag, text, 1, kMaxThreads, number, error))
        return false;
      options.threads = int(number);
    } else if (flag == "--bench") {
      const char *text = value();
      if (!text || !parseCount(flag, text, 1, kMaxRuns, options.bench, error))
        return false;
    } else if (flag == "--warmup") {
      const char *text = value();
      if (!text || !parseCount(flag, text, 0, kMaxRuns, options.warmup, error))
        return false;
    } else if (flag == "--generate") {
      const char *text = value();
      if (!text ||
          !parseCount(flag, text, 1, model.maxSeqLen, options.generate, error))
        return false;
    } else if (flag == "--temperature") {
      if (!(options.temperature = value()))
        return false;
      char *end = nullptr;
      double t = std::strtod(options.temperature, &end);
      if (!*options.temperature || *end != '\0' || !(t >= 0) || t > 1e6) {
        error = std::string("--temperature expects a number >= 0, not '") +
                options.temperature + "'";
        return false;
      }
      options.samplingFlag = true;
    } else if (flag == "--top-k") {
      const char *text = value();
      if (!text || !parseCount(flag, text, 0, INT32_MAX, options.topK, error))
        return false;
      options.samplingFlag = true;
    } else if (flag == "--seed") {
      const char *text = value();
      if (!text || !parseCount(flag, text, 0, INT64_MAX, options.seed, error))
        return false;
      options.samplingFlag = true;
    } else if (flag == "--step-logits") {
      if (!(options.stepLogits = value()))
        return false;
    } else if (flag == "--dump-attention") {
      if (!(options.dumpAttention = value()))
        return false;
    } else if (arg.substr(0, 1) == "-") {
      error = "unknown option '" + std::string(flag) + "' (see --help)";
      return false;
    } else {
      error = "unexpected argument '" + std::string(arg) + "' (see --help)";
      return false;
    }
  }
  if (!options.generate && (options.samplingFlag || options.stepLogits)) {
    error = "--temperature, --top-k, --seed and --step-logits go with "
            "--generate N";
    return false;
  }
  if (options.generate && !canGenerate(model)) {
    error = "this model cannot --generate: generation needs a decoder or "
            "encoder_decoder model with token ids and an LM head";
    return false;
  }
  for (size_t m = 0; options.generate && m < model.numMasks; ++m)
    if (options.inputFiles[model.numInputs + m]) {
      error = std::string("--input ") + model.masks[m].name +
              ": --generate takes no padding mask yet (a prompt of one "
              "length, or one prompt at a time)";
      return false;
    }
  if (options.dumpAttention) {
    struct stat info;
    if (options.generate) {
      error = "--dump-attention writes the weights of a forward pass; it "
              "does not go with --generate";
      return false;
    }
    if (model.attentionMapsUnsupported) {
      error =
          std::string("--dump-attention: ") + model.attentionMapsUnsupported;
      return false;
    }
    if (stat(options.dumpAttention, &info) != 0 || !S_ISDIR(info.st_mode)) {
      error = std::string("--dump-attention ") + options.dumpAttention +
              ": not a directory (it must exist)";
      return false;
    }
  }
  if (options.generate && options.bench) {
    error = "--bench and --generate do not go together (--generate prints "
            "its own tokens/s)";
    return false;
  }
  // A mask counts: it needs its inputs' files.
  bool anyInput =
      std::any_of(options.inputFiles.begin(), options.inputFiles.end(),
                  [](const char *f) { return f != nullptr; });
  for (size_t i = 0; anyInput && i < model.numInputs; ++i)
    if (!options.inputFiles[i] && model.inputs[i].zerosLike < 0) {
      error = std::string("missing --input ") + model.inputs[i].name +
              "=FILE (this model's inputs: " + inputNames(model) +
              "; give all of them, or none for a random input)";
      return false;
    }
  return true;
}

void printHelp(const char *program, const ModelInfo &model) {
  std::printf(
      "usage: %s [--weights W.safetensors] [--input NAME=FILE.npy ...]\n"
      "       %*s [--output OUT.npy] [--threads N] [--bench N] [--warmup N]\n"
      "\n"
      "Runs the compiled model '%s': one forward pass, or --bench N timed "
      "ones.\n"
      "\n"
      "  --weights FILE     safetensors weights (F32, F16 or BF16), or a "
      "sharded checkpoint's\n"
      "                     model.safetensors.index.json; default: %s\n"
      "  --input NAME=FILE  a .npy input (v1.0-3.0, little-endian, C order); "
      "default: a\n"
      "                     deterministic random input of the largest shape\n"
      "  --output FILE      write the float32 output as .npy instead of "
      "printing a summary\n"
      "  --threads N        worker threads, including the main one "
      "(default 1)\n"
      "  --bench N          time N forward passes; a line before the last "
      "says the weights'\n"
      "                     format and bytes; the last line is\n"
      "                     bench: median_ms=... min_ms=... gflops=... "
      "runs=N threads=T\n"
      "  --warmup N         untimed passes before timing (default 2 with "
      "--bench)\n"
      "  --generate N       N new tokens after the prompt (decoder: input; "
      "encoder_decoder:\n"
      "                     tgt continued, over src), with a key/value cache; "
      "--output gets\n"
      "                     their ids (int32); the last line is\n"
      "                     generate: prefill_tok_s=... decode_tok_s=... "
      "new_tokens=N threads=T\n"
      "                     (prefill_tok_s counts every prompt token, src "
      "included)\n"
      "  --temperature T    sample from softmax(logits / T) instead of "
      "greedy (T = 0)\n"
      "  --top-k K          sample among the K most likely tokens only\n"
      "  --seed S           the sampling seed (default 0)\n"
      "  --step-logits FILE with --generate: write each step's logits, "
      "[N, batch, vocab]\n"
      "  --dump-attention DIR  also write each full attention's weights of "
      "the last\n"
      "                     forward pass, [batch, heads, q, k] float32, as "
      "DIR/layer{L}.self.npy\n"
      "                     (and .cross; encoder. / decoder. before them "
      "for encoder_decoder)\n"
      "  --help             print this text\n"
      "\n"
      "Inputs:\n",
      program, int(std::strlen(program)), "", model.name,
      model.defaultWeights ? model.defaultWeights : "deterministic random");
  for (size_t i = 0; i < model.numInputs; ++i) {
    const InputInfo &info = model.inputs[i];
    if (info.kind == InputKind::TokenIds && info.zerosLike >= 0)
      std::printf("  %-18s optional token type ids, int32 or int64, the shape "
                  "of %s, each in\n"
                  "                     [0, %" PRId64 ") (default zeros)\n",
                  info.name, model.inputs[info.zerosLike].name, info.idBound);
    else if (info.kind == InputKind::TokenIds)
      std::printf("  %-18s token ids, int32 or int64, [seq] or [batch, seq], "
                  "each in [0, %" PRId64 ")\n",
                  info.name, info.idBound > 0 ? info.idBound : model.vocabSize);
    else
      std::printf("  %-18s embeddings, float32, [seq, %" PRId64
                  "] or [batch, seq, %" PRId64 "]\n",
                  model.inputs[i].name, model.dModel, model.dModel);
  }
  for (size_t m = 0; m < model.numMasks; ++m)
    std::printf("  %-18s optional padding mask of %s: int32, int64, bool or "
                "float32, its [seq] or [batch, seq], 1 real, 0 padding\n",
                model.masks[m].name, model.inputs[model.masks[m].input].name);
  std::printf("Limits: seq <= %" PRId64 ", batch <= %" PRId64
              " (tfm-compile --max-seq-len, --max-batch)\n"
              "Output: float32 [batch, seq, %" PRId64
              "], without batch if the input has none\n",
              model.maxSeqLen, model.maxBatch, model.outputWidth);
}

/// Shape, first values and checksums: enough to compare runs by eye.
void printSummary(const float *data, const OutputShape &shape) {
  size_t count = shape.elements();
  std::printf("output: float32 %s\n",
              ShapeText(shape.shape, size_t(shape.rank)).c_str());
  std::printf("first:");
  for (size_t i = 0; i < std::min<size_t>(count, 8); ++i)
    std::printf(" %.6g", double(data[i]));
  std::printf("\n");
  double sum = 0, absSum = 0;
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto *bytes = reinterpret_cast<const unsigned char *>(data);
  for (size_t i = 0; i < count; ++i) {
    sum += double(data[i]);
    absSum += std::fabs(double(data[i]));
  }
  for (size_t i = 0; i < count * sizeof(float); ++i)
    hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  std::printf("checksum: sum=%.9g abs_sum=%.9g fnv1a=%016" PRIx64 "\n", sum,
              absSum, hash);
}

/// What --bench says of the weights before its line: the format the GEMM
/// weights are kept in and the bytes the model holds, its f32 tensors (as
/// loaded or converted) and its packed GEMM panels.
void printWeightsSummary(const ModelInfo &model) {
  bool formats[4] = {};
  double values = 0, gemmValues = 0, packedBytes = 0;
  for (size_t i = 0; i < model.numParams; ++i) {
    const ParamInfo &p = model.params[i];
    double elements = 1;
    for (int d = 0; d < p.rank; ++d)
      elements *= double(p.shape[d]);
    values += elements;
    if (p.format != WeightFormat::F32) {
      formats[int(p.format)] = true;
      gemmValues += elements;
    }
  }
  for (size_t j = 0; j < model.numPacked; ++j)
    packedBytes += double(floatsTo64Bytes(model.packedFloats[j])) * 4;
  static const char *const names[] = {"f32", "bf16", "f16", "int8"};
  std::string kept;
  for (int f = 1; f < 4; ++f)
    if (formats[f])
      kept += std::string(kept.empty() ? "" : "+") + names[f];
  std::printf("weights: %.2fM values held as f32 (%.2f MB); ", values * 1e-6,
              values * 4e-6);
  if (kept.empty())
    std::printf("GEMM weights f32");
  else
    std::printf("%.2fM GEMM weight values kept as %s", gemmValues * 1e-6,
                kept.c_str());
  std::printf(", packed into %.2f MB of panels\n", packedBytes * 1e-6);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// --generate: the prompt is `views` (the last one grows); `batched` says
/// whether the inputs had a batch dimension (and so the ids written).
int runGenerate(const char *program, const ModelInfo &model,
                ModelInstance &instance, const Options &options,
                const InputView *views, bool batched) {
  GenerateOptions generateOptions;
  generateOptions.newTokens = options.generate;
  generateOptions.temperature =
      options.temperature ? std::strtod(options.temperature, nullptr) : 0.0;
  generateOptions.topK = options.topK;
  generateOptions.seed = uint64_t(options.seed);
  GenerateResult result;
  std::string error;
  if (!generate(instance, views, generateOptions, options.stepLogits != nullptr,
                result, error)) {
    reportError(program, error);
    return 1;
  }
  int64_t n = options.generate, batch = views[0].batch;
  if (options.output) {
    int64_t shape[2] = {batch, n};
    TensorRef ids = {DType::I32, batched ? 2 : 1, batched ? shape : shape + 1,
                     result.ids.data()};
    if (!writeNpy(options.output, ids, error)) {
      reportError(program, error);
      return 1;
    }
  } else {
    for (int64_t b = 0; b < batch; ++b) {
      std::printf("ids:");
      for (int64_t t = 0; t < n; ++t)
        std::printf(" %d", result.ids[size_t(b * n + t)]);
      std::printf("\n");
    }
  }
  if (options.stepLogits) {
    int64_t shape[3] = {n, batch, model.outputWidth};
    TensorRef logits = {DType::F32, 3, shape, result.stepLogits.data()};
    if (!writeNpy(options.stepLogits, logits, error)) {
      reportError(program, error);
      return 1;
    }
  }
  // Prefill runs every prompt token: the source's too for encoder_decoder.
  int64_t promptTokens = 0;
  for (size_t i = 0; i < model.numInputs; ++i)
    promptTokens += batch * views[i].seq;
  double prefillRate = result.prefillSeconds > 0
                           ? double(promptTokens) / result.prefillSeconds
                           : 0.0;
  double decodeRate = n > 1 && result.decodeSeconds > 0
                          ? double(batch * (n - 1)) / result.decodeSeconds
                          : 0.0;
  std::printf(
      "generate: prefill_tok_s=%.1f decode_tok_s=%.1f new_tokens=%" PRId64
      " threads=%d\n",
      prefillRate, decodeRate, n, instance.threads());
  std::fflush(stdout);
  return 0;
}

} // namespace

int runModelMain(const ModelInfo &model, int argc, char **argv) {
  const char *program = argc > 0 && argv[0] ? argv[0] : "model";
  if (const char *slash = std::strrchr(program, '/'))
    program = slash + 1;

  Options options;
  std::string error;
  if (!parseOptions(model, argc, argv, options, error)) {
    reportError(program, error);
    return 1;
  }
  if (options.help) {
    printHelp(program, model);
    return 0;
  }

  // Inputs first: they are cheap to check, weights may be gigabytes.
  size_t numInputs = model.numInputs;
  std::vector<NpyArray> files(numInputs);
  std::vector<DefaultInput> defaults(numInputs);
  std::vector<TensorRef> tensors(numInputs);
  std::vector<const char *> sources(numInputs);
  std::vector<std::vector<int32_t>> narrowed(numInputs);
  std::vector<int32_t *> scratch(numInputs);
  for (size_t i = 0; i < numInputs; ++i) {
    if (const char *file = options.inputFiles[i]) {
      if (!readNpy(file, files[i], error)) {
        reportError(program, error);
        return 1;
      }
      tensors[i] = files[i].ref();
      sources[i] = file;
    } else if (model.inputs[i].zerosLike >= 0) {
      // Optional: prepareInputs writes the zeros.
      tensors[i] = TensorRef{};
      sources[i] = model.inputs[i].name;
    } else {
      defaults[i] = makeDefaultInput(model, i);
      if (options.generate && i + 1 == numInputs) {
        // Room for the new tokens: a prompt of maxSeqLen - N positions.
        DefaultInput &d = defaults[i];
        int64_t length = std::max<int64_t>(1, d.shape[1] - options.generate);
        std::vector<int32_t> prompt;
        for (int64_t b = 0; b < d.shape[0]; ++b)
          prompt.insert(prompt.end(), d.ids.begin() + b * d.shape[1],
                        d.ids.begin() + b * d.shape[1] + length);
        d.ids = std::move(prompt);
        d.shape[1] = length;
      }
      tensors[i] = defaults[i].ref();
      sources[i] = model.inputs[i].name;
    }
    narrowed[i].resize(size_t(model.maxBatch * model.maxSeqLen));
    scratch[i] = narrowed[i].data();
  }
  std::vector<InputView> views(numInputs + model.numMasks);
  OutputShape outputShape;
  char message[1024];
  if (!prepareInputs(model, tensors.data(), sources.data(), scratch.data(),
                     views.data(), outputShape, message, sizeof(message))) {
    reportError(program, message);
    return 1;
  }
  // The masks, as float 1/0 (all ones where none is given).
  std::vector<NpyArray> maskFiles(model.numMasks);
  std::vector<TensorRef> masks(model.numMasks, TensorRef{});
  std::vector<const char *> maskSources(model.numMasks);
  std::vector<std::vector<float>> maskFloats(model.numMasks);
  std::vector<float *> maskScratch(model.numMasks);
  for (size_t m = 0; m < model.numMasks; ++m) {
    maskSources[m] = model.masks[m].name;
    if (const char *file = options.inputFiles[numInputs + m]) {
      if (!readNpy(file, maskFiles[m], error)) {
        reportError(program, error);
        return 1;
      }
      masks[m] = maskFiles[m].ref();
      maskSources[m] = file;
    }
    maskFloats[m].resize(size_t(model.maxBatch * model.maxSeqLen));
    maskScratch[m] = maskFloats[m].data();
  }
  if (!prepareMasks(model, tensors.data(), masks.data(), maskSources.data(),
                    maskScratch.data(), views.data(), message,
                    sizeof(message))) {
    reportError(program, message);
    return 1;
  }

  ModelInstance instance;
  if (!instance.init(model, options.weights, options.threads, error)) {
    reportError(program, error);
    return 1;
  }
  if (instance.threads() != options.threads)
    std::fprintf(stderr,
                 "%s: warning: the system gave %d of the %d threads asked "
                 "for\n",
                 program, instance.threads(), options.threads);

  if (options.generate)
    return runGenerate(program, model, instance, options, views.data(),
                       outputShape.rank == 3);

  int64_t warmup =
      options.warmup >= 0 ? options.warmup : (options.bench > 0 ? 2 : 0);
  for (int64_t i = 0; i < warmup; ++i)
    instance.forward(views.data(), nullptr);
  std::vector<double> times;
  int64_t runs = std::max<int64_t>(options.bench, 1);
  times.reserve(size_t(runs));
  // The attention weights of the last pass (outside its timing).
  std::vector<AttentionMap> maps(model.numAttentionMaps);
  for (int64_t i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    instance.forward(views.data(), nullptr);
    auto stop = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double>(stop - start).count());
  }
  if (options.dumpAttention) {
    collectAttentionWeights(&maps);
    instance.forward(views.data(), nullptr);
    collectAttentionWeights(nullptr);
    for (size_t m = 0; m < maps.size(); ++m) {
      if (!maps[m].written)
        continue;
      std::string path = std::string(options.dumpAttention) + "/" +
                         model.attentionMaps[m] + ".npy";
      TensorRef weights = {DType::F32, 4, maps[m].shape, maps[m].values.data()};
      if (!writeNpy(path.c_str(), weights, error)) {
        reportError(program, error);
        return 1;
      }
    }
  }

  TensorRef output = {DType::F32, outputShape.rank, outputShape.shape,
                      instance.outputBuffer()};
  if (options.output) {
    if (!writeNpy(options.output, output, error)) {
      reportError(program, error);
      return 1;
    }
  } else {
    printSummary(instance.outputBuffer(), outputShape);
  }

  if (options.bench > 0) {
    printWeightsSummary(model);
    double medianSeconds = median(times);
    double fastest = *std::min_element(times.begin(), times.end());
    double flops = model.matmulFlops ? model.matmulFlops(views.data()) : 0.0;
    double gflops = medianSeconds > 0 ? flops / medianSeconds * 1e-9 : 0.0;
    std::printf("bench: median_ms=%.2f min_ms=%.2f gflops=%.1f runs=%" PRId64
                " threads=%d\n",
                medianSeconds * 1e3, fastest * 1e3, gflops, options.bench,
                instance.threads());
  }
  std::fflush(stdout);
  return 0;
}

} // namespace tfm::rt
