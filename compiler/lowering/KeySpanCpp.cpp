//===- KeySpanCpp.cpp - a row's keys under a mask, as C++ -----------------===//

#include "tfm/Lowering/KeySpanCpp.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir::tfm;

namespace tfm {

namespace {

/// constant + perRow row + perOffset offset, its zero terms left out.
std::string bound(const KeyBound &b, llvm::StringRef row,
                  llvm::StringRef offset) {
  llvm::SmallVector<std::string> terms;
  auto term = [&](int64_t c, llvm::StringRef x) {
    if (c)
      terms.push_back(c == 1 ? x.str() : std::to_string(c) + " * " + x.str());
  };
  if (offset != "0")
    term(b.perOffset, offset);
  term(b.perRow, row);
  if (b.perBlock) {
    // Whole blocks of the position (never negative).
    std::string position = offset == "0"
                               ? row.str()
                               : "(" + offset.str() + " + " + row.str() + ")";
    term(b.perBlock, "(" + position + " / " + std::to_string(b.block) + ")");
  }
  std::string text = llvm::join(terms, " + ");
  if (b.constant || terms.empty())
    text += text.empty()     ? std::to_string(b.constant)
            : b.constant < 0 ? " - " + std::to_string(-b.constant)
                             : " + " + std::to_string(b.constant);
  return text;
}

} // namespace

void printRowKeys(llvm::raw_ostream &os, const KeySpan &span,
                  llvm::StringRef row, llvm::StringRef offset,
                  llvm::StringRef keys, const RowKeysNames &names,
                  llvm::StringRef indent) {
  std::string end = span.end ? "std::min<int64_t>(" + keys.str() + ", " +
                                   bound(*span.end, row, offset) + ")"
                             : keys.str();
  std::string first = span.hasBegin() ? "std::max<int64_t>(0, " +
                                            bound(span.begin, row, offset) + ")"
                                      : "0";
  if (!span.globalKeys) {
    if (!names.end.empty())
      os << indent << names.end << " = " << end << ";\n";
    if (!names.first.empty())
      os << indent << names.first << " = " << first << ";\n";
    if (!names.prefix.empty())
      os << indent << names.prefix << " = 0;\n";
    return;
  }
  // A row at a global position sees every key (causal: up to its own);
  // the others the global keys, then their band past them.
  std::string global = std::to_string(span.globalKeys);
  std::string position =
      offset == "0" ? row.str() : offset.str() + " + " + row.str();
  std::string globalEnd = span.globalEnd
                              ? "std::min<int64_t>(" + keys.str() + ", " +
                                    bound(*span.globalEnd, row, offset) + ")"
                              : keys.str();
  os << indent << "{\n";
  os << indent << "  const bool globalRow = " << position << " < " << global
     << ";\n";
  // Causal: a global row ends where every row does.
  if (globalEnd == end)
    os << indent << "  const int64_t rowEnd = " << end << ";\n";
  else
    os << indent << "  const int64_t rowEnd = globalRow ? " << globalEnd
       << " : " << end << ";\n";
  os << indent
     << "  const int64_t rowPrefix = globalRow ? 0 : std::min<int64_t>("
     << global << ", rowEnd);\n";
  if (!names.end.empty())
    os << indent << "  " << names.end << " = rowEnd;\n";
  if (!names.prefix.empty())
    os << indent << "  " << names.prefix << " = rowPrefix;\n";
  if (!names.first.empty())
    os << indent << "  " << names.first
       << " = globalRow ? 0 : std::max<int64_t>(rowPrefix, " << first << ");\n";
  os << indent << "}\n";
}

std::string keyPairsCpp(const KeyPairs &pairs, llvm::StringRef queries,
                        llvm::StringRef keys, llvm::StringRef offset) {
  const KeySpan &span = pairs.span;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[&] {\n";
  os << "    double pairs = 0;\n";
  os << "    const int64_t sq = " << queries << ", sk = " << keys << ";\n";
  if (offset != "0")
    os << "    const int64_t offset = " << offset << ";\n";
  os << "    for (int64_t i = 0; i < sq; ++i) {\n";
  os << "      int64_t end, first, prefix;\n";
  printRowKeys(os, span, "i", offset == "0" ? "0" : "offset", "sk",
               {"end", "first", "prefix"}, "      ");
  os << "      int64_t count = prefix + std::max<int64_t>(0, end - first);\n";
  if (pairs.randomKeys) {
    std::string position = offset == "0" ? "i" : "offset + i";
    std::string queryBlock = (offset == "0" ? position : "(" + position + ")") +
                             " / " + std::to_string(pairs.block);
    os << "      if (" << position << " >= " << span.globalKeys << " && "
       << queryBlock << " < " << pairs.patternRows << ")\n";
    os << "        count = std::min<int64_t>("
       << (pairs.causal ? "std::min<int64_t>(sk, " + position + " + 1)"
                        : std::string("sk"))
       << ", count + " << pairs.randomKeys << ");\n";
  }
  os << "      pairs += double(count);\n";
  os << "    }\n";
  os << "    return pairs;\n";
  os << "  }()";
  return text;
}

} // namespace tfm
