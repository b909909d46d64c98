//===- KeySpanCpp.h - a row's keys under a mask, as C++ -----------*- C++
//-*-===//
//
// What the generated C++ of both backends computes from a KeySpan: the
// Highway attention core (each row's key range) and the FLOP count that
// `--bench` divides by (the pairs a window or global tokens leave).
// KeySpan::rowKeys is the same arithmetic in the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LOWERING_KEYSPANCPP_H
#define TFM_LOWERING_KEYSPANCPP_H

#include "tfm/IR/KeySpan.h"
#include "tfm/IR/TfmSizes.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace tfm {

/// The C++ lvalues a row's keys are written to: [0, prefix) and
/// [first, end) (KeySpan::RowKeys). An empty name is a part the caller
/// does not take; the statements then only need what they use.
struct RowKeysNames {
  std::string end, first, prefix;
};

/// Prints the statements that set `names` for query row `row` at `offset`
/// among `keys` keys (C++ int64_t expressions). A span with no begin sets
/// `first` to 0, one without global tokens `prefix` to 0.
void printRowKeys(llvm::raw_ostream &os, const mlir::tfm::KeySpan &span,
                  llvm::StringRef row, llvm::StringRef offset,
                  llvm::StringRef keys, const RowKeysNames &names,
                  llvm::StringRef indent = "");

/// A C++ expression: the pairs of the span's rows (and the random blocks',
/// nominally: KeyPairs), summed over `queries` rows (a lambda called in
/// place).
std::string keyPairsCpp(const mlir::tfm::KeyPairs &pairs,
                        llvm::StringRef queries, llvm::StringRef keys,
                        llvm::StringRef offset);

} // namespace tfm

#endif // TFM_LOWERING_KEYSPANCPP_H
