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
#include "llvm/ADT/StringSet.h"

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
  /// DIR/model.safetensors, or DIR/model.safetensors.index.json when only
  /// that (a sharded checkpoint) is there; absolute: what the compiled
  /// model loads when it is given no weights.
  std::string weightsFile;
  /// Tensors a checkpoint may hold that the model does not read (BERT's
  /// pooler, GPT-2's causal-mask buffers, a tied head's copy): exact names,
  /// or prefixes ending in '.'.
  std::vector<std::string> ignoredTensors;
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
/// `tensorNames`: the names the folder's safetensors hold (empty when
/// unknown), which say whether they carry the model class's prefix
/// (`bert.`, `transformer.`: saved from a class with a head) or not (saved
/// from the base model).
std::optional<HuggingFaceCheckpoint>
mapHuggingFaceConfig(llvm::StringRef text, llvm::StringRef dir,
                     std::vector<ConfigDiagnostic> &diags,
                     const llvm::StringSet<> &tensorNames = {});

/// The tensor names of DIR's weights (the header of model.safetensors, or
/// the weight_map of model.safetensors.index.json) into `names`, and the
/// file that lists them into `weightsFile` (DIR/model.safetensors when
/// neither exists). False when that file cannot be read, with `error`
/// saying why.
bool readCheckpointTensorNames(llvm::StringRef dir, llvm::StringSet<> &names,
                               std::string &weightsFile, std::string &error);

/// Records the checkpoint's layout on `module` (built from its
/// description): each tfm.param's `sources`, the inputs' Hugging Face name
/// `input_ids`, and `tfm.weights_file`. Fails, naming it, if a parameter has
/// no source.
mlir::LogicalResult applyCheckpointLayout(mlir::ModuleOp module,
                                          const HuggingFaceCheckpoint &ckpt,
                                          std::string &error);

} // namespace tfm

#endif // TFM_FRONTEND_HUGGINGFACE_H
