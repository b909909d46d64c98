//===- Model.h - what generated code tells the runtime ----------*- C++ -*-===//
//
// The one interface between a compiled model and the runtime. tfm-compile
// generates a C++ file that defines `tfm::rt::kModel`; the runtime's main(),
// C API, weight loader and input reader work from it alone.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_MODEL_H
#define TFM_RUNTIME_MODEL_H

#include <cstddef>
#include <cstdint>

namespace tfm::rt {

class Arena;
class ThreadPool;

/// How a weight is filled when no weights file is given: PyTorch's default
/// initialisation for the module that owns it, from a fixed seed.
enum class ParamInit : uint8_t {
  Zeros,    // biases of nn.MultiheadAttention, LayerNorm bias
  Ones,     // LayerNorm weight
  Uniform,  // U(-bound, bound): nn.Linear (bound 1/sqrt(in)), xavier_uniform
  Normal,   // N(0, bound^2): nn.Embedding (bound 1)
  BlockIds, // random whole numbers in [0, shape[0]): key-block ids
};

constexpr int kMaxRank = 4;

/// The values a GEMM weight is kept as (tfm-compile --weight-dtype,
/// contract section 10): converted once, at load, from the file's floats.
enum class WeightFormat : uint8_t {
  F32,  // as the file holds it
  BF16, // rounded to bfloat16, nearest even
  F16,  // rounded to binary16, nearest even; beyond 65504 a load error
  Int8, // blocks of 32 columns of a row: q = rint(w / s), s = max|w| / 127
};

/// The columns of a row that share one int8 scale (WeightFormat::Int8).
constexpr int64_t kInt8Block = 32;

/// The floats a tensor of `floats` takes in a block where each tensor
/// starts on a 64-byte boundary (the packed weights, the caches).
constexpr size_t floatsTo64Bytes(size_t floats) {
  return (floats + 15) / 16 * 16;
}

struct ParamInfo {
  const char *name;  // state_dict name, e.g. "layers.0.linear1.weight"
  const char *alias; // another name a weights file may use instead, or null
  int rank;
  int64_t shape[kMaxRank];
  ParamInit init;
  float bound;
  /// A checkpoint in another layout (a Hugging Face folder): the file's
  /// tensors that hold this one, stacked along the first dimension in this
  /// order (each stored [cols, rows] when `transposed`); the weight's own
  /// name is then not looked up. Null when there are none.
  const char *const *sources;
  int numSources;
  bool transposed;
  /// Key-block ids (BigBird's block_pattern [rows, R]): int32 or int64 in a
  /// weights file, kept as floats, every id outside [0, rows) as -1.
  bool blockIds = false;
  /// How its values are kept: a rank-2 GEMM weight [out, in] may be
  /// converted (every other weight is F32).
  WeightFormat format = WeightFormat::F32;
};

enum class InputKind : uint8_t {
  TokenIds,   // int32 [batch, seq] in the forward pass (int32/int64 in files)
  Embeddings, // float32 [batch, seq, d_model]
};

struct InputInfo {
  const char *name; // "input", or "src" and "tgt"; "token_type_ids"
  InputKind kind;
  /// Token ids lie in [0, idBound): the vocabulary of the table they index
  /// (vocab_size, or type_vocab_size for token types); 0 for embeddings.
  int64_t idBound = 0;
  /// -1, or the input whose shape this one has: then it is optional, and
  /// all zeros where none is given (BERT's token_type_ids).
  int zerosLike = -1;
};

/// A padding mask the forward pass takes (contract section 8): `name`
/// ("mask", or "src_mask" and "tgt_mask") of input `input`'s positions.
struct MaskInfo {
  const char *name;
  size_t input;
};

/// One input as the forward pass reads it. Token ids are int32 and already
/// checked to be in [0, vocab_size); a padding mask is float32 [batch, seq]
/// of 1 (a real token) and 0 (padding), its input's batch and seq.
struct InputView {
  const void *data;
  int64_t batch, seq;
};

struct ModelInfo {
  const char *name;
  const ParamInfo *params;
  size_t numParams;
  const InputInfo *inputs;
  size_t numInputs;
  int64_t dModel;
  int64_t vocabSize;   // 0 when inputs are float embeddings
  int64_t outputWidth; // vocab_size for logits, d_model for hidden states
  int64_t maxSeqLen;   // every input's seq must be <= this
  int64_t maxBatch;    // every input's batch must be <= this (all equal)
  /// Bytes of activation memory one forward pass needs at the maxima; the
  /// runtime allocates them once, 64-byte aligned.
  size_t arenaBytes;
  /// The matmul FLOPs one forward pass needs for these inputs (for
  /// --bench's gflops).
  double (*matmulFlops)(const InputView *inputs);
  /// Runs the model: `weights[i]` is params[i] (float32, C order), then
  /// `weights[numParams + j]` is packed tensor j; `inputs` are the
  /// numInputs inputs, then the numMasks masks (all ones where none was
  /// given); `output` is [batch, seq of the last input, outputWidth],
  /// float32. Allocates nothing on the heap;
  /// results do not depend on the number of threads in `pool`.
  void (*forward)(const float *const *weights, const InputView *inputs,
                  float *output, Arena &arena, ThreadPool &pool);
  /// Weights rearranged once after loading into the layouts the generated
  /// kernels read (GEMM panels): `packedFloats[j]` floats each, 64-byte
  /// aligned, filled by `pack(params, packed)`.
  size_t numPacked;
  const size_t *packedFloats;
  void (*pack)(const float *const *params, float *const *packed);

  /// Incremental decoding, for decoder and encoder_decoder models with token
  /// ids and an LM head (else 0 and null): `numCaches` key/value caches of
  /// `cacheFloats[i]` floats each, kept by the runtime across calls.
  /// `prefill` takes the inputs of `forward` (the target's token ids at
  /// positions 0..seq-1, then the masks, all ones: generation takes none
  /// yet; `position` and `memoryLength` are ignored) and
  /// writes the logits of the last position, [batch, 1, vocab]; an
  /// encoder_decoder's prefill also runs the encoder once and keeps its
  /// keys and values. `decode` takes only the last input's new tokens
  /// (`inputs[0]`, at positions position..) and writes their logits
  /// [batch, seq, vocab]; an encoder_decoder's also takes `memoryLength`,
  /// the source length of the prefill. Both write the new positions' keys
  /// and values into the caches and attend over everything there (a
  /// sliding window's cache: what its window keeps, so `position` must be
  /// where the call before ended). position + seq <= maxSeqLen.
  using StepFn = void (*)(const float *const *weights, float *const *caches,
                          const InputView *inputs, int64_t position,
                          int64_t memoryLength, float *output, Arena &arena,
                          ThreadPool &pool);
  size_t numCaches;
  const size_t *cacheFloats;
  StepFn prefill;
  StepFn decode;

  /// The weights file loaded when none is given (a Hugging Face folder's
  /// model.safetensors, fixed at compile time), or null: then the weights
  /// are pseudo-random.
  const char *defaultWeights;

  /// Caps the SIMD target the code dispatches to at `isa` ("avx512",
  /// "avx2" or "sse4": the TFM_SIMD environment variable, read when a
  /// model is created, before anything is dispatched); null on success,
  /// else why not. Null for code with no targets to choose from (the LLVM
  /// backend's).
  const char *(*limitSimd)(const char *isa);

  /// The padding masks `forward` takes after the inputs (none for models
  /// whose attention has no keys a mask could hide: linformer, performer;
  /// `masksRefused` then says why).
  const MaskInfo *masks;
  size_t numMasks;

  /// The attention maps a forward pass writes when asked
  /// (AttentionWeights.h): slot i is named attentionMaps[i] ("layer0.self",
  /// "decoder.layer1.cross", ...). Null names with a non-null
  /// `attentionMapsUnsupported`: this code writes none, for that reason.
  const char *const *attentionMaps;
  size_t numAttentionMaps;
  const char *attentionMapsUnsupported;
  /// Why the model takes no padding mask (the frontend's reason), or null.
  const char *masksRefused;
  /// Tensors a weights file may hold that the model does not read (a
  /// checkpoint's pooler, buffers, a tied head's copy): exact names, or
  /// prefixes ending in '.'. Any other tensor no parameter reads is an
  /// error.
  const char *const *ignoredTensors = nullptr;
  size_t numIgnoredTensors = 0;
  /// Generation without a decode step (prefill and decode null): each step
  /// runs `forward` over the whole sequence so far, inputs and generated
  /// tokens, and keeps the last position's logits. The compiler's choice
  /// for a model no cache can serve (linformer: its projected keys mix
  /// every position).
  bool regenerates = false;
};

/// Whether `model` can --generate (and its C API prefill/decode): with a
/// key/value cache, or by running forward again at each step.
inline bool canGenerate(const ModelInfo &model) {
  return (model.prefill && model.decode) || model.regenerates;
}

/// Defined by the generated code of each compiled model.
extern const ModelInfo kModel;

} // namespace tfm::rt

#endif // TFM_RUNTIME_MODEL_H
