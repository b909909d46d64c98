//===- ModelBuilder.h - ModelConfig -> tfm IR -------------------*- C++ -*-===//

#ifndef TFM_FRONTEND_MODELBUILDER_H
#define TFM_FRONTEND_MODELBUILDER_H

#include "tfm/Frontend/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace tfm {

/// The largest shapes the compiled artifact accepts.
struct CompileLimits {
  int64_t maxSeqLen = 0;
  int64_t maxBatch = 1;
};

/// Builds the module for `config`: one `tfm.param` per weight (named as in
/// contract section 3), one private function per kind of layer, and the
/// entry point `forward`. Batch and sequence dimensions are dynamic; `limits`
/// are recorded as module attributes `tfm.max_batch` and `tfm.max_seq_len`.
mlir::OwningOpRef<mlir::ModuleOp> buildModel(mlir::MLIRContext &context,
                                             const ModelConfig &config,
                                             const CompileLimits &limits,
                                             llvm::StringRef sourcePath);

} // namespace tfm

#endif // TFM_FRONTEND_MODELBUILDER_H
