//===- TfmSizes.h - sizes and FLOPs as polynomials of operand sizes -*- C++
//-*-===//
//
// The values of tfm's op interfaces (TfmInterfaces.td): a run-time size as
// a sum of operand sizes, a FLOP count as a polynomial of them.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_TFMSIZES_H
#define TFM_IR_TFMSIZES_H

#include "tfm/IR/KeySpan.h"

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

/// The (query, key) pairs an attention's mask allows: the sum over query
/// rows i < `queries` of span.rowKeys(i, offset, keys).count(), for masks
/// whose count is no polynomial (a window, global tokens: clamped bounds).
struct KeyPairs {
  KeySpan span;
  SizeAtom queries, keys;
  /// The queries' position among the keys (none: 0).
  std::optional<SizeAtom> offset;
  /// BigBird's random key blocks, counted nominally: a row past the global
  /// ones whose query block (its position / block) has a row of the
  /// pattern (< patternRows) sees `randomKeys` more keys (R whole blocks,
  /// as if each id named a block no other rule reaches), up to its end
  /// (causal: its own position + 1; otherwise every key).
  int64_t randomKeys = 0, block = 1, patternRows = 0;
  bool causal = false;
};

/// `coefficient` times the product of `factors` (none: a constant), times
/// the pairs of `pairs` when there are.
struct FlopTerm {
  double coefficient = 0;
  llvm::SmallVector<SizeAtom, 4> factors;
  std::optional<KeyPairs> pairs;
};

/// A sum of FlopTerms.
class FlopCount {
public:
  /// Adds `coefficient` times the product of `sizes`; static dimensions
  /// multiply the coefficient, dynamic ones become factors.
  FlopCount &add(double coefficient, llvm::ArrayRef<SizeAtom> sizes) {
    FlopTerm term{coefficient, {}, std::nullopt};
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
  /// Adds `coefficient` times the product of `sizes` times `pairs`.
  FlopCount &add(double coefficient, llvm::ArrayRef<SizeAtom> sizes,
                 KeyPairs pairs) {
    add(coefficient, sizes);
    terms.back().pairs = std::move(pairs);
    return *this;
  }
  llvm::ArrayRef<FlopTerm> getTerms() const { return terms; }

private:
  llvm::SmallVector<FlopTerm, 2> terms;
};

} // namespace mlir::tfm

#endif // TFM_IR_TFMSIZES_H
