//===- ModelMemory.h - what a model needs in memory -------------*- C++ -*-===//
//
// A description whose sizes are each within bounds can still add up to more
// memory than any machine has (vocab_size 2^24 x d_model 2^24 is 1 PB of
// embeddings). The compiler refuses such a model up front, with the sizes
// that make it big, instead of producing an executable that fails (or
// thrashes) when it allocates.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_MODELMEMORY_H
#define TFM_FRONTEND_MODELMEMORY_H

#include "tfm/Frontend/ModelBuilder.h"
#include "tfm/Frontend/ModelConfig.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tfm {

/// Bytes as doubles: the products of capped sizes can exceed 2^64 (the
/// attention of batch 2^16 at seq 2^24), and only the order matters.
struct MemoryEstimate {
  /// Every parameter the model declares, as float32 (what the executable
  /// holds with random weights or converted F16/BF16 ones).
  double weightBytes = 0;
  /// Token tables (and the untied LM head), learned position tables, and
  /// the layers' weights: the three parts of weightBytes.
  double embeddingBytes = 0, positionBytes = 0, layerBytes = 0;
  /// A lower bound on the activations of one forward pass at the compile
  /// limits: the hidden state, Q/K/V, the feed-forward's hidden layer and
  /// the output, each [batch, seq, width] float32.
  double activationBytes = 0;
  /// The key/value caches of generation (models with @prefill/@decode),
  /// allocated with the model: keys and values of every decoder layer's
  /// self-attention (and cross-attention) at the compile limits.
  double cacheBytes = 0;

  double total() const { return weightBytes + activationBytes + cacheBytes; }
};

MemoryEstimate estimateModelMemory(const ModelConfig &config,
                                   const CompileLimits &limits);

/// How much memory a compiled model may need: $TFM_MEMORY_LIMIT if set (a
/// byte count with an optional K, M, G or T suffix, powers of 1000 like the
/// messages; for compiling on a machine smaller than the one the model runs
/// on), else the physical memory of this machine. `what` describes the source
/// for messages ("this machine's 24 GB").
struct MemoryBudget {
  uint64_t bytes = 0;
  std::string what;
};
/// Fails (and says why in `error`) only on a malformed $TFM_MEMORY_LIMIT.
std::optional<MemoryBudget> memoryBudget(std::string &error);

/// An error when `config` at `limits` needs more than `budget`, pointing at
/// the key whose size dominates; nullopt when it fits.
std::optional<ConfigDiagnostic>
checkModelMemory(const ModelConfig &config, const CompileLimits &limits,
                 const ConfigPositions &positions, const MemoryBudget &budget);

/// "1.2 TB", "24 GB", "512 KB", "12 bytes": decimal units, as `df -h --si`
/// and memory vendors print them.
std::string formatBytes(double bytes);

} // namespace tfm

#endif // TFM_FRONTEND_MODELMEMORY_H
