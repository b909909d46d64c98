//===- HuggingFace.h - Hugging Face checkpoint folders ----------*- C++ -*-===//
//
// `tfm-compile DIR`, where DIR holds a Hugging Face `config.json` (contract
// section 11): the config mapped to a model description, and where the
// folder's safetensors keep each of the model's weights (Hugging Face's own
// names and layouts), recorded on the IR's tfm.param ops.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_HUGGINGFACE_H
#define TFM_FRONTEND_HUGGINGFACE_H

#include "tfm/Frontend/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace tfm {

/// Where a checkpoint keeps one weight: its tensors, stacked along the first
/// dimension (each stored [in, out], transposed, for GPT-2's Conv1D).
struct WeightSource {
  std::vector<std::string> tensors;
  bool transposed = false;
};

struct HuggingFaceCheckpoint {
  std::string modelType;
  /// The model description (contract sections 2 and 11) it maps to, JSON.
  std::string description;
  /// By the model's parameter (tfm.param) names.
  llvm::StringMap<WeightSource> weights;
  /// DIR/model.safetensors, absolute: what the compiled model loads when it
  /// is given no weights.
  std::string weightsFile;
  /// Mistral's sliding window when it caps the sequence length (within it
  /// the attention is full; beyond, it would not be): 0 when none.
  int64_t slidingWindow = 0;
  /// config.json keys read and ignored because they do not change the
  /// maths (training, tokenizer and storage settings), for -v.
  std::vector<std::string> ignoredKeys;
};

/// The model types `tfm-compile DIR` maps, for messages.
llvm::StringRef supportedHuggingFaceModelTypes();

/// Reads DIR/config.json. An unsupported model_type, or a config value that
/// changes the maths and is not supported, is an error in `diags` at its
/// position in config.json (`configPath` is set for the messages).
std::optional<HuggingFaceCheckpoint>
readHuggingFaceFolder(llvm::StringRef dir, std::string &configPath,
                      std::vector<ConfigDiagnostic> &diags);

/// readHuggingFaceFolder's mapping of config.json's `text` (no files read
/// but the weights file's name, DIR/model.safetensors).
std::optional<HuggingFaceCheckpoint>
mapHuggingFaceConfig(llvm::StringRef text, llvm::StringRef dir,
                     std::vector<ConfigDiagnostic> &diags);

/// Records the checkpoint's layout on `module` (built from its
/// description): each tfm.param's `sources`, the inputs' Hugging Face name
/// `input_ids`, and `tfm.weights_file`. Fails, naming it, if a parameter has
/// no source.
mlir::LogicalResult applyCheckpointLayout(mlir::ModuleOp module,
                                          const HuggingFaceCheckpoint &ckpt,
                                          std::string &error);

} // namespace tfm

#endif // TFM_FRONTEND_HUGGINGFACE_H
