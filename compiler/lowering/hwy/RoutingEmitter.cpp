//===- RoutingEmitter.cpp - mixture-of-experts routing -> Highway C++ -----===//
//
// The routing part of FunctionEmitter: tfm.route_experts (each token's
// top-k experts, the pairs grouped by expert) and tfm.gather_rows (the
// grouped pairs' rows); the experts' GEMMs are GemmEmitter's.
//
//===----------------------------------------------------------------------===//

#include "FunctionEmitter.h"

using namespace mlir;
using namespace mlir::tfm;

namespace tfm::hwy {

LogicalResult FunctionEmitter::emitRouteExperts(RouteExpertsOp op) {
  Buffer logits = buffers[op.getLogits()];
  int64_t experts = op.getLogits().getType().getShape().back();
  int64_t topK = op.getTopK();
  ArrayRef<Dim> tokenDims = ArrayRef<Dim>(logits.dims).drop_back();
  Dims slotDims(tokenDims.begin(), tokenDims.end());
  slotDims.push_back(staticDim(topK));
  Buffer tokens = allocate(op.getTokens(), slotDims);
  Buffer weights = allocate(op.getWeights(), slotDims);
  Buffer starts = allocate(op.getStarts(), {staticDim(experts + 1)});
  os << "{ // top-" << topK << " of " << experts
     << " experts per token, the (token, slot) pairs grouped by expert\n";
  os.indent();
  os << "const int64_t tokens = " << product(tokenDims) << ";\n";
  os << "int32_t *tokenOf = reinterpret_cast<int32_t *>(" << tokens.ptr
     << ");\n";
  os << "int32_t *starts = reinterpret_cast<int32_t *>(" << starts.ptr
     << ");\n";
  os << "int32_t chosen[" << topK << "];\n";
  os << "float weight[" << topK << "];\n";
  // A counting sort, stable in token order: the order of the pairs (and of
  // every sum over them) does not depend on the threads. starts[e + 1]
  // first counts expert e - 1's pairs, then is expert e's next free pair.
  os << "std::fill_n(starts, " << experts + 1 << ", 0);\n";
  os << "for (int64_t t = 0; t < tokens; ++t) {\n";
  os << "  k::TopKSoftmax(" << logits.ptr << " + t * " << experts << ", "
     << experts << ", " << topK << ", chosen, weight);\n";
  os << "  for (int64_t s = 0; s < " << topK << "; ++s)\n";
  os << "    if (chosen[s] + 2 <= " << experts << ")\n";
  os << "      ++starts[chosen[s] + 2];\n";
  os << "}\n";
  os << "for (int64_t e = 2; e <= " << experts << "; ++e)\n";
  os << "  starts[e] += starts[e - 1];\n";
  os << "// Placed, starts[e + 1] ends expert e's group: the next one's "
        "start.\n";
  os << "for (int64_t t = 0; t < tokens; ++t) {\n";
  os << "  k::TopKSoftmax(" << logits.ptr << " + t * " << experts << ", "
     << experts << ", " << topK << ", chosen, weight);\n";
  os << "  for (int64_t s = 0; s < " << topK << "; ++s) {\n";
  os << "    const int32_t pair = starts[chosen[s] + 1]++;\n";
  os << "    tokenOf[pair] = int32_t(t);\n";
  os << "    " << weights.ptr << "[pair] = weight[s];\n";
  os << "  }\n";
  os << "}\n";
  os.unindent();
  os << "}\n";
  remark(op, "top-" + std::to_string(topK) +
                 " routing per token, then a counting sort of the (token, "
                 "slot) pairs by expert, stable in token order");
  return success();
}

LogicalResult FunctionEmitter::emitGatherRows(GatherRowsOp op) {
  Buffer x = buffers[op.getInput()];
  Buffer tokens = buffers[op.getTokens()];
  int64_t d = op.getInput().getType().getShape().back();
  Dims dims = tokens.dims;
  dims.push_back(staticDim(d));
  Buffer out = allocate(op.getResult(), dims);
  os << "{\n";
  os.indent();
  os << "const int32_t *tokenOf = reinterpret_cast<const int32_t *>("
     << tokens.ptr << ");\n";
  os << "pool.parallelFor(" << product(tokens.dims) << ", [&](int64_t r) {\n";
  os << "  std::copy_n(" << x.ptr << " + int64_t(tokenOf[r]) * " << d << ", "
     << d << ", " << out.ptr << " + r * " << d << ");\n";
  os << "});\n";
  os.unindent();
  os << "}\n";
  return success();
}

} // namespace tfm::hwy
