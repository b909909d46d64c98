//===- ModelMemory.cpp - what a model needs in memory ---------------------===//
//
// The weight count mirrors ModelBuilder (one float32 per element of every
// tfm.param it declares); the activation count is a lower bound that holds
// for any lowering, since every forward pass materialises at least these
// [batch, seq, width] tensors.
//
//===----------------------------------------------------------------------===//

#include "tfm/Frontend/ModelMemory.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unistd.h>

using namespace llvm;
using namespace mlir::tfm;

namespace tfm {

namespace {

constexpr double kFloat = 4.0;

/// Elements of one attention block's weights (contract section 3).
double attentionElements(const ModelConfig &c) {
  double d = double(c.dModel), h = double(c.numHeads), dk = d / h;
  double inRows = (h + 2 * double(c.numKVHeads)) * dk; // Q, K, V
  double n = inRows * d + d * d;                       // in_proj, out_proj
  if (c.bias)
    n += inRows + d;
  if (c.score == ScoreKind::Bilinear)
    n += h * dk * dk;
  else if (c.score == ScoreKind::Additive)
    n += 2 * h * double(c.additiveDim) * dk + h * double(c.additiveDim);
  return n;
}

/// Elements of one norm's weights: a weight, and a bias for a layer norm.
double normElements(const ModelConfig &c) {
  return double(c.dModel) * (c.normType == NormType::LayerNorm ? 2 : 1);
}

/// Elements of one layer's weights, of kinds `k`; `cross`: it has
/// cross-attention.
double layerElements(const ModelConfig &c, const LayerKinds &k, bool cross) {
  double d = double(c.dModel), ff = double(c.dFF);
  if (k.mamba) {
    // The norm, in_proj, conv weight and bias, x_proj, dt_proj and its
    // bias, A_log, D, out_proj.
    const MambaSizes &m = *c.mamba;
    double ch = double(c.mambaChannels()), n = double(m.stateSize);
    return normElements(c) + 2 * ch * d + ch * double(m.convWidth + 1) +
           double(m.dtRank + 2 * m.stateSize) * ch + ch * double(m.dtRank + 1) +
           ch * (n + 1) + d * ch;
  }
  double firstRows = c.ffnGated ? 2 * ff : ff; // a gated FFN's gate and up
  double n = attentionElements(c) * (cross ? 2 : 1);
  if (k.linformerK) // a self-attention's proj_e and proj_f
    n += 2 * double(*k.linformerK) * double(c.maxSeqLen);
  if (k.performerFeatures) // a self-attention's features [h, M, dk]
    n += double(*k.performerFeatures) * double(c.dModel);
  if (k.block) // a self-attention's block_pattern [blocks, R]
    n += double((c.maxSeqLen + *k.block - 1) / *k.block) *
         double(k.randomBlocks);
  // linear1, linear2 (of each expert, and the router)
  double ffn = firstRows * d + d * ff + (c.bias ? firstRows + d : 0);
  n += k.experts ? double(k.experts->experts) * (ffn + d) : ffn;
  n += normElements(c) * (cross ? 3 : 2);
  return n;
}

} // namespace

MemoryEstimate estimateModelMemory(const ModelConfig &c,
                                   const CompileLimits &limits) {
  MemoryEstimate m;
  bool encDec = c.architecture == Architecture::EncoderDecoder;
  double d = double(c.dModel);
  int stacks = encDec ? 2 : 1;
  if (c.vocabSize) {
    double tables = stacks + (c.lmHead && !c.tieEmbeddings ? 1 : 0);
    m.embeddingBytes = tables * double(*c.vocabSize) * d * kFloat;
  }
  if (c.positional == Positional::Learned)
    m.positionBytes = stacks * double(c.maxSeqLen) * d * kFloat;
  // Weights layer by layer, and the most experts a layer routes a token to.
  double layers = 0;
  int64_t topK = 0;
  for (bool decoder : {false, true}) {
    int64_t count = decoder ? c.numDecoderLayers : c.numEncoderLayers;
    for (int64_t i = 0; i < count; ++i) {
      const LayerKinds &k = c.layerKinds(decoder, i);
      layers += layerElements(c, k, /*cross=*/decoder && encDec);
      topK = std::max(topK, k.experts ? k.experts->topK : int64_t(0));
    }
  }
  if (c.finalNorm)
    layers += stacks * normElements(c);
  m.layerBytes = layers * kFloat;
  m.weightBytes = m.embeddingBytes + m.positionBytes + m.layerBytes;

  double tokens = double(limits.maxBatch) * double(limits.maxSeqLen);
  double width = d + 3 * d + double(c.dFF); // x, Q/K/V, FFN hidden
  if (c.mamba) // u and z, their conv, the scan's dt, B, C and output
    width =
        std::max(width, d + 5 * double(c.mambaChannels()) +
                            double(c.mamba->dtRank + 2 * c.mamba->stateSize));
  // Each token's rows gathered for its top_k experts.
  width += double(topK) * (d + 2 * double(c.dFF));
  if (encDec)
    width += d; // the encoder's output, read by every decoder layer
  width += c.lmHead ? double(*c.vocabSize) : d;
  m.activationBytes = tokens * width * kFloat;
  // As ModelBuilder: generation needs token ids and an LM head.
  if (c.vocabSize && c.lmHead && c.numDecoderLayers > 0) {
    double kvWidth = double(c.numKVHeads) * double(c.headDim());
    double positions = 2 * tokens * kvWidth;
    // A sliding window's cache keeps its global tokens and window only.
    auto selfPositions = [&](const LayerKinds &k) {
      if (!k.cachesWindowOnly(limits.maxSeqLen))
        return positions;
      return 2 * double(limits.maxBatch) * double(*k.window + k.globalTokens) *
             kvWidth;
    };
    // Performer's self-attention keeps feature sums, not positions.
    double selfCaches = 0;
    bool gathers = false;
    for (int64_t i = 0; i < c.numDecoderLayers; ++i) {
      const LayerKinds &k = c.layerKinds(true, i);
      gathers |= !k.mamba && k.cachesWindowOnly(limits.maxSeqLen);
      if (k.mamba) // the conv window and the scan state
        selfCaches += double(limits.maxBatch) * double(c.mambaChannels()) *
                      double(c.mamba->convWidth - 1 + c.mamba->stateSize);
      else
        selfCaches += k.performerFeatures
                          ? double(limits.maxBatch) * double(c.numHeads) *
                                double(*k.performerFeatures) *
                                double(c.headDim() + 1)
                          : selfPositions(k);
    }
    m.cacheBytes =
        (selfCaches + (encDec ? double(c.numDecoderLayers) * positions : 0.0)) *
        kFloat;
    // A windowed cache's call gathers the keys and values it attends (one
    // layer at a time): up to every position's.
    if (gathers)
      m.activationBytes += positions * kFloat;
  }
  return m;
}

std::string formatBytes(double bytes) {
  static const char *const units[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
  if (bytes < 1000)
    return formatv("{0} bytes", uint64_t(bytes)).str();
  int unit = -1;
  while (bytes >= 999.95 && unit + 1 < int(std::size(units))) {
    bytes /= 1000;
    ++unit;
  }
  // Three significant digits: "1.2 TB", "24 GB", "512 KB".
  const char *format = bytes < 9.95 ? "{0:f1} {1}" : "{0:f0} {1}";
  return formatv(format, bytes, units[unit]).str();
}

std::optional<MemoryBudget> memoryBudget(std::string &error) {
  MemoryBudget budget;
  if (const char *env = std::getenv("TFM_MEMORY_LIMIT"); env && *env) {
    StringRef text = StringRef(env).trim();
    uint64_t scale = 1;
    if (!text.empty()) {
      switch (toUpper(text.back())) {
      case 'K':
        scale = 1000;
        break;
      case 'M':
        scale = 1000 * 1000;
        break;
      case 'G':
        scale = 1000 * 1000 * 1000;
        break;
      case 'T':
        scale = uint64_t(1000) * 1000 * 1000 * 1000;
        break;
      }
      if (scale != 1)
        text = text.drop_back();
    }
    uint64_t n = 0;
    if (text.getAsInteger(10, n) || n == 0 ||
        __builtin_mul_overflow(n, scale, &budget.bytes)) {
      error = formatv("TFM_MEMORY_LIMIT='{0}' is not a positive byte count "
                      "(e.g. 64G, 512M, 1T)",
                      env)
                  .str();
      return std::nullopt;
    }
    budget.what =
        "the " + formatBytes(double(budget.bytes)) + " of TFM_MEMORY_LIMIT";
    return budget;
  }
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0) {
    // Unknown: do not refuse anything.
    budget.bytes = UINT64_MAX;
    budget.what = "this machine's memory";
    return budget;
  }
  budget.bytes = uint64_t(pages) * uint64_t(pageSize);
  budget.what = "this machine's " + formatBytes(double(budget.bytes));
  return budget;
}

std::optional<ConfigDiagnostic>
checkModelMemory(const ModelConfig &c, const CompileLimits &limits,
                 const ConfigPositions &positions, const MemoryBudget &budget) {
  MemoryEstimate m = estimateModelMemory(c, limits);
  if (m.total() <= double(budget.bytes))
    return std::nullopt;

  // The parts of the weights, largest first, each with the sizes that make
  // it; the key of the largest is where the message points.
  struct Part {
    double bytes;
    std::string what;
    StringRef key;
  };
  SmallVector<Part> parts;
  bool encDec = c.architecture == Architecture::EncoderDecoder;
  if (m.embeddingBytes > 0) {
    int tables = (encDec ? 2 : 1) + (c.lmHead && !c.tieEmbeddings ? 1 : 0);
    parts.push_back({m.embeddingBytes,
                     formatv("{0}vocab_size {1} x d_model {2}",
                             tables > 1 ? formatv("{0} x ", tables).str() : "",
                             *c.vocabSize, c.dModel),
                     "vocab_size"});
  }
  if (m.positionBytes > 0)
    parts.push_back({m.positionBytes,
                     formatv("learned positions max_seq_len {0} x d_model {1}",
                             c.maxSeqLen, c.dModel),
                     "max_seq_len"});
  std::string layers =
      encDec
          ? formatv("{0} + {1} layers", c.numEncoderLayers, c.numDecoderLayers)
                .str()
          : formatv("{0} layers", c.numEncoderLayers + c.numDecoderLayers)
                .str();
  parts.push_back(
      {m.layerBytes,
       formatv("{0} of d_model {1}, d_ff {2}", layers, c.dModel, c.dFF),
       c.dFF > c.dModel ? "d_ff" : "d_model"});
  // Largest first; equal ones in the order above (std::stable_sort warns
  // with this libstdc++).
  for (size_t i = 1; i < parts.size(); ++i)
    for (size_t j = i; j > 0 && parts[j].bytes > parts[j - 1].bytes; --j)
      std::swap(parts[j], parts[j - 1]);

  std::string detail;
  for (const Part &p : parts)
    detail +=
        (detail.empty() ? "" : "; ") + p.what + ": " + formatBytes(p.bytes);
  StringRef key = parts.front().key;
  if (m.activationBytes > m.weightBytes)
    key = "max_seq_len";
  auto [line, column] = positions.of(key);
  std::string cache = m.cacheBytes > 0 ? " and " + formatBytes(m.cacheBytes) +
                                             " of key/value cache"
                                       : "";
  std::string message =
      formatv("this model needs {0} of memory, more than {1}: {2} of weights "
              "({3}) and at least {4} of activations{5} at batch {6}, seq {7}",
              formatBytes(m.total()), budget.what, formatBytes(m.weightBytes),
              detail, formatBytes(m.activationBytes), cache, limits.maxBatch,
              limits.maxSeqLen)
          .str();
  return ConfigDiagnostic{ConfigDiagnostic::Kind::Error, line, column,
                          std::move(message)};
}

} // namespace tfm
