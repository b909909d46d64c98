//===- ModelConfig.h - a validated model description ------------*- C++ -*-===//
//
// The model description of contract section 2, parsed from JSON and checked
// key by key. Every problem is reported with the line and column of the value
// (or key) that causes it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_MODELCONFIG_H
#define TFM_FRONTEND_MODELCONFIG_H

#include "tfm/IR/TfmOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfm {

enum class Architecture { Encoder, Decoder, EncoderDecoder };
enum class Positional { Sinusoidal, Learned, Rope, None };
enum class NormPlacement { Post, Pre };
enum class EmbeddingScale { None, SqrtDModel };
enum class NormType { LayerNorm, RmsNorm };

/// The most layers a stack may have (num_layers and its Hugging Face
/// names).
constexpr int64_t kMaxModelLayers = 4096;

/// The most experts an MoE FFN may have (`experts`, and Mixtral's
/// num_local_experts).
constexpr int64_t kMaxExperts = 1024;

/// An FFN of `experts` experts, each token routed to `topK` of them
/// (`ffn` kind moe).
struct MixtureOfExperts {
  int64_t experts = 0, topK = 0;
};

/// The sizes of a model's Mamba mixers (contract section 7, `mamba`), with
/// dt_rank "auto" resolved.
struct MambaSizes {
  int64_t stateSize = 16, convWidth = 4, expand = 2, dtRank = 0;
};

/// The kinds of a layer's blocks (contract section 7): its self-attention's
/// (`attention`) and its FFN's (`ffn`); or a Mamba mixer instead of both
/// (`layers` entry "mamba").
struct LayerKinds {
  /// A mamba layer: x + Mixer(Norm(x)), no attention, no FFN.
  bool mamba = false;
  /// `attention` kind sliding_window (Longformer): keys within `window`
  /// positions of the query, and the first `globalTokens` positions
  /// attending and attended both ways, in the self-attention. No window: full
  /// attention.
  std::optional<int64_t> window;
  int64_t globalTokens = 0;
  /// `attention` kind linformer: the self-attention's keys and values
  /// projected along the sequence to this many rows (proj_e, proj_f).
  std::optional<int64_t> linformerK;
  /// `attention` kind performer (FAVOR+): the self-attention's queries
  /// and keys mapped to this many positive random features (the weight
  /// `features`, [num_heads, M, dk]), softmax attention approximated by
  /// their products.
  std::optional<int64_t> performerFeatures;
  /// `attention` kind block_sparse (BigBird): positions in blocks of this
  /// many; each query block sees the key blocks within `windowBlocks`, the
  /// first `globalBlocks` blocks (whose rows see every key), and the
  /// `randomBlocks` ids of its row of the weight `block_pattern`.
  std::optional<int64_t> block;
  int64_t windowBlocks = 1, globalBlocks = 1, randomBlocks = 0;
  /// `ffn` kind moe: the FFN a mixture of experts. None: dense.
  std::optional<MixtureOfExperts> experts;

  /// Whether the self-attention is `full` (the kind whose weights a dump
  /// writes).
  bool fullAttention() const {
    return !mamba && !window && !linformerK && !performerFeatures && !block;
  }
  /// Whether a decoder's self-attention cache of this kind keeps only the
  /// positions its sliding window can attend later (the global tokens and
  /// the last `window`: a ring), as it does where those are fewer than the
  /// `maxSeqLen` positions it would keep otherwise (and at least one).
  bool cachesWindowOnly(int64_t maxSeqLen) const {
    return window && !block && *window + globalTokens > 0 &&
           *window + globalTokens < maxSeqLen;
  }
  bool operator==(const LayerKinds &o) const;
  bool operator!=(const LayerKinds &o) const { return !(*this == o); }
};

struct ModelConfig {
  std::string name;
  Architecture architecture = Architecture::Encoder;
  int64_t dModel = 0, numHeads = 0, dFF = 0;
  /// Layers of the encoder stack (encoder, encoder_decoder) and of the decoder
  /// stack (decoder, encoder_decoder); zero where the stack does not exist.
  int64_t numEncoderLayers = 0, numDecoderLayers = 0;
  std::optional<int64_t> vocabSize;
  int64_t maxSeqLen = 0;
  Positional positional = Positional::Sinusoidal;
  mlir::tfm::RopeStyle ropeStyle = mlir::tfm::RopeStyle::Half;
  double ropeBase = 10000.0;
  EmbeddingScale embeddingScale = EmbeddingScale::None;
  NormPlacement norm = NormPlacement::Post;
  NormType normType = NormType::LayerNorm;
  double normEps = 1e-5;
  bool finalNorm = false;
  mlir::tfm::Activation activation = mlir::tfm::Activation::Relu;
  mlir::tfm::ScoreKind score = mlir::tfm::ScoreKind::ScaledDot;
  int64_t additiveDim = 0;
  /// Heads of keys and values (grouped-query attention when fewer than
  /// numHeads).
  int64_t numKVHeads = 0;
  /// A gated FFN (SwiGLU, GeGLU): linear1 makes the gate and the up rows.
  bool ffnGated = false;
  /// Whether linears (attention projections, FFN) have biases.
  bool bias = true;
  bool causal = false;
  /// The model-level `attention` and `ffn`: every layer's kinds, unless
  /// `layers` gives a decoder layer its own.
  LayerKinds kinds;
  /// `layers` (decoder only): each decoder layer's kinds, in order; empty
  /// without the key.
  std::vector<LayerKinds> decoderLayerKinds;
  bool lmHead = false;
  bool tieEmbeddings = true;
  /// BERT's token types: a second table (`type_embed.weight`,
  /// [typeVocabSize, d_model]) indexed by the input `token_type_ids` (zeros
  /// when not given), added to the token embeddings. Encoder only.
  std::optional<int64_t> typeVocabSize;
  /// A norm of the embeddings (tokens, token types and positions summed)
  /// before the first layer (`embed_norm`: BERT's embeddings.LayerNorm).
  bool embeddingNorm = false;

  /// The Mamba mixers' sizes, when some layer is a mamba layer.
  std::optional<MambaSizes> mamba;

  int64_t headDim() const { return dModel / numHeads; }
  /// A Mamba mixer's channels (d_inner = expand x d_model).
  int64_t mambaChannels() const { return mamba->expand * dModel; }
  /// The kinds of layer `layer` of the decoder stack (`decoder`) or of the
  /// encoder stack.
  const LayerKinds &layerKinds(bool decoder, int64_t layer) const {
    return decoder && !decoderLayerKinds.empty() ? decoderLayerKinds[layer]
                                                 : kinds;
  }
  /// Whether some layer of some stack has kinds that `pred` holds for.
  bool anyLayer(llvm::function_ref<bool(const LayerKinds &)> pred) const;
};

/// A message about the description, at a 1-based line and column.
struct ConfigDiagnostic {
  enum class Kind { Error, Warning } kind;
  unsigned line, column;
  std::string message;
};

/// Where the JSON value of each top-level key starts, for the checks that
/// involve the compile options.
struct ConfigPositions {
  unsigned objectLine = 1, objectColumn = 1;
  std::vector<std::pair<std::string, std::pair<unsigned, unsigned>>> values;
  /// The position of `key`'s value, or of the object when it is absent.
  std::pair<unsigned, unsigned> of(llvm::StringRef key) const;
};

/// Parses and validates `text`, the contents of the file `path`. Appends
/// every error and warning to `diags`; returns nullopt if there was an error.
std::optional<ModelConfig>
parseModelConfig(llvm::StringRef path, llvm::StringRef text,
                 std::vector<ConfigDiagnostic> &diags,
                 ConfigPositions *positions = nullptr);

/// Where each top-level key's value starts in `text`, a JSON object that
/// llvm::json has accepted.
ConfigPositions jsonValuePositions(llvm::StringRef text);
/// The offset of the first '[' or '{' (outside strings) of `text` nested
/// deeper than `maxDepth`, or npos: llvm::json recurses per level.
size_t findDeepJsonNesting(llvm::StringRef text, unsigned maxDepth);
/// The 1-based line and column of byte `offset` of `text`.
std::pair<unsigned, unsigned> jsonPositionOf(llvm::StringRef text,
                                             size_t offset);

llvm::StringRef stringifyArchitecture(Architecture arch);
llvm::StringRef stringifyPositional(Positional positional);

} // namespace tfm

#endif // TFM_FRONTEND_MODELCONFIG_H
