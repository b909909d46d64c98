//===- TransformScript.cpp - run an embedded transform-dialect script -----===//

#include "TransformScript.h"

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;

OwningOpRef<ModuleOp> mlir::tfm::parseTransformScript(MLIRContext *context,
                                                      StringRef script) {
  ParserConfig config(context);
  return parseSourceString<ModuleOp>(script, config, "tfm-transform-script");
}

LogicalResult mlir::tfm::applyTransformScript(Operation *payload,
                                              ModuleOp script) {
  transform::TransformOpInterface entry =
      transform::detail::findTransformEntryPoint(
          payload, script,
          transform::TransformDialect::kTransformEntryPointSymbolName);
  if (!entry)
    return payload->emitError("the transform script has no entry point");
  return transform::applyTransformNamedSequence(payload, entry, script,
                                                transform::TransformOptions());
}
