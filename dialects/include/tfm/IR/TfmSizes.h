//===- TfmSizes.h - sizes and FLOPs as polynomials of operand sizes -*- C++
//-*-===//
//
// The values of tfm's op interfaces (TfmInterfaces.td): a run-time size as
// a sum of operand sizes, a FLOP count as a polynomial of them.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_TFMSIZES_H
#define TFM_IR_TFMSIZES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <utility>

namespace mlir::tfm {

/// A size known at run time: dimension `dim` of tensor `value`, or the
/// value of index `value` when `dim` is -1.
struct SizeAtom {
  Value value;
  int64_t dim = -1;
};

/// A sum of sizes (at least one).
using SizeSum = llvm::SmallVector<SizeAtom, 2>;

/// `coefficient` times the product of `factors` (none: a constant).
struct FlopTerm {
  double coefficient = 0;
  llvm::SmallVector<SizeAtom, 4> factors;
};

/// A sum of FlopTerms.
class FlopCount {
public:
  /// Adds `coefficient` times the product of `sizes`; static dimensions
  /// multiply the coefficient, dynamic ones become factors.
  FlopCount &add(double coefficient, llvm::ArrayRef<SizeAtom> sizes) {
    FlopTerm term{coefficient, {}};
    for (const SizeAtom &size : sizes) {
      auto type = size.dim < 0
                      ? RankedTensorType()
                      : llvm::dyn_cast<RankedTensorType>(size.value.getType());
      if (type && !type.isDynamicDim(size.dim))
        term.coefficient *= double(type.getDimSize(size.dim));
      else
        term.factors.push_back(size);
    }
    terms.push_back(std::move(term));
    return *this;
  }
  llvm::ArrayRef<FlopTerm> getTerms() const { return terms; }

private:
  llvm::SmallVector<FlopTerm> terms;
};

} // namespace mlir::tfm

#endif // TFM_IR_TFMSIZES_H
