//===- TfmMaskSyntax.h - #tfm.mask's rules inside an attention op -*- C++
//-*-===//
//
// The rules of a mask as the attention ops print them inline (`causal
// window 4 global 1`), for the ops' custom directives in TfmOps.cpp; the
// attribute's own syntax (`#tfm.mask<causal, window 4>`) is MaskAttr's.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LIB_IR_TFMMASKSYNTAX_H
#define TFM_LIB_IR_TFMMASKSYNTAX_H

#include "tfm/IR/TfmOps.h"

#include "mlir/IR/OpImplementation.h"

namespace mlir::tfm {

/// The rules separated by spaces, each optional, in any order; nullopt
/// (nothing read) when the next token is no rule.
OptionalParseResult parseMaskRuleList(AsmParser &parser, MaskAttr &mask);

/// The rules separated by spaces.
void printMaskRuleList(raw_ostream &os, MaskAttr mask);

} // namespace mlir::tfm

#endif // TFM_LIB_IR_TFMMASKSYNTAX_H
