//===- TfmMask.cpp - #tfm.mask: its syntax, verifier and key span ---------===//
//
// A mask's rules (causal, window, global, block, random) as an attribute
// and inline in the attention ops, and the keys each query row sees
// (MaskAttr::getKeySpan), which the backends, the FLOP count and the
// tiling pass read.
//
//===----------------------------------------------------------------------===//

#include "TfmMaskSyntax.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <string>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A mask's rules as parsed, before the attribute is made.
struct MaskRules {
  bool causal = false;
  std::optional<int64_t> window, globalTokens, block, randomBlocks;

  MaskAttr get(function_ref<InFlightDiagnostic()> emitError,
               MLIRContext *context) const {
    return MaskAttr::getChecked(emitError, context, causal, window,
                                globalTokens, block, randomBlocks);
  }
};

constexpr StringLiteral kExpectedRules =
    "expected 'causal', 'window N', 'global N', 'block N' or 'random N': the "
    "rules of a mask";

/// The rules of a mask, each optional, in any order: `causal`, `window N`,
/// `global N`, `block N`, `random N`. Reads nothing and gives nullopt when
/// the next token is none of them.
OptionalParseResult parseRules(AsmParser &parser, MaskRules &rules,
                               bool separatedByCommas) {
  bool any = false;
  while (true) {
    if (any && separatedByCommas && failed(parser.parseOptionalComma()))
      return success();
    SMLoc at = parser.getCurrentLocation();
    StringRef rule;
    if (any && separatedByCommas) {
      if (parser.parseKeyword(&rule))
        return failure();
    } else if (failed(parser.parseOptionalKeyword(
                   &rule, {"causal", "window", "global", "block", "random"}))) {
      if (!any)
        return std::nullopt;
      return success();
    }
    auto once = [&](bool seen) -> ParseResult {
      if (seen)
        return parser.emitError(at)
               << "the mask rule '" << rule << "' is given twice";
      return success();
    };
    std::optional<int64_t> *value =
        llvm::StringSwitch<std::optional<int64_t> *>(rule)
            .Case("window", &rules.window)
            .Case("global", &rules.globalTokens)
            .Case("block", &rules.block)
            .Case("random", &rules.randomBlocks)
            .Default(nullptr);
    if (rule == "causal") {
      if (once(rules.causal))
        return failure();
      rules.causal = true;
    } else if (value) {
      int64_t n;
      if (once(value->has_value()) || parser.parseInteger(n))
        return failure();
      *value = n;
    } else {
      return parser.emitError(at) << kExpectedRules << ", got '" << rule << "'";
    }
    any = true;
  }
}

void printRules(raw_ostream &os, MaskAttr mask, StringRef separator) {
  SmallVector<std::string> rules;
  if (mask.getCausal())
    rules.push_back("causal");
  if (mask.getBlock())
    rules.push_back("block " + std::to_string(*mask.getBlock()));
  if (mask.getWindow())
    rules.push_back("window " + std::to_string(*mask.getWindow()));
  if (mask.getGlobalTokens())
    rules.push_back("global " + std::to_string(*mask.getGlobalTokens()));
  if (mask.getRandomBlocks())
    rules.push_back("random " + std::to_string(*mask.getRandomBlocks()));
  os << llvm::join(rules, separator);
}

} // namespace

Attribute MaskAttr::parse(AsmParser &parser, Type) {
  // `<` rule (`,` rule)* `>`.
  SMLoc at = parser.getCurrentLocation();
  MaskRules rules;
  if (parser.parseLess())
    return {};
  OptionalParseResult parsed = parseRules(parser, rules, true);
  if (!parsed.has_value()) {
    parser.emitError(parser.getCurrentLocation(), kExpectedRules);
    return {};
  }
  if (failed(*parsed) || parser.parseGreater())
    return {};
  return rules.get([&] { return parser.emitError(at); }, parser.getContext());
}

void MaskAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printRules(printer.getStream(), *this, ", ");
  printer << ">";
}

LogicalResult MaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               bool causal, std::optional<int64_t> window,
                               std::optional<int64_t> globalTokens,
                               std::optional<int64_t> block,
                               std::optional<int64_t> randomBlocks) {
  if (!causal && !window)
    return emitError() << "a mask without rules is no mask: leave it out "
                          "(every key is seen)";
  if (window && *window < 0)
    return emitError() << "a window is at least 0 "
                       << (block ? "blocks" : "keys") << " on each side, got "
                       << *window;
  if (globalTokens && !window)
    return emitError() << "global tokens are part of a sliding window: "
                          "'global' needs 'window'";
  if (globalTokens && *globalTokens < 1)
    return emitError() << "global " << (block ? "blocks" : "tokens")
                       << " are at least 1 (leave 'global' out for none), got "
                       << *globalTokens;
  if (block && *block < 1)
    return emitError() << "a block is at least 1 position, got " << *block;
  if (block && !window)
    return emitError() << "a block-sparse mask needs 'window' (the key blocks "
                          "on each side of a query block, 0 for its own)";
  if (randomBlocks && !block)
    return emitError() << "random key blocks are blocks of a block-sparse "
                          "mask: 'random' needs 'block'";
  if (randomBlocks && *randomBlocks < 1)
    return emitError() << "random key blocks are at least 1 a query block "
                          "(leave 'random' out for none), got "
                       << *randomBlocks;
  // Bounds in positions stay far from int64's limits.
  constexpr int64_t kMaxRule = int64_t(1) << 30;
  for (std::optional<int64_t> n : {window, globalTokens, block, randomBlocks})
    if (n && *n > kMaxRule)
      return emitError() << "a mask rule's count is at most " << kMaxRule
                         << ", got " << *n;
  return success();
}

KeySpan MaskAttr::getKeySpan() const {
  // Positions are offset + i: each bound moves with the row and the offset
  // (block-sparse: by whole blocks of the position).
  KeySpan span;
  KeyBound causalEnd{/*constant=*/1, /*perRow=*/1, /*perOffset=*/1};
  if (getCausal())
    span.end = causalEnd;
  int64_t block = getBlock().value_or(1);
  if (std::optional<int64_t> window = getWindow()) {
    if (getBlock()) {
      span.begin = KeyBound{-*window * block, 0, 0, block, block};
      if (!getCausal())
        span.end = KeyBound{(*window + 1) * block, 0, 0, block, block};
    } else {
      span.begin = KeyBound{-*window, 1, 1};
      if (!getCausal())
        span.end = KeyBound{*window + 1, 1, 1};
    }
  }
  if (std::optional<int64_t> global = getGlobalTokens()) {
    span.globalKeys = *global * block;
    if (getCausal())
      span.globalEnd = causalEnd;
  }
  return span;
}

OptionalParseResult mlir::tfm::parseMaskRuleList(AsmParser &parser,
                                                 MaskAttr &mask) {
  SMLoc at = parser.getCurrentLocation();
  MaskRules rules;
  OptionalParseResult parsed = parseRules(parser, rules, false);
  if (!parsed.has_value() || failed(*parsed))
    return parsed;
  mask = rules.get([&] { return parser.emitError(at); }, parser.getContext());
  return success(bool(mask));
}

void mlir::tfm::printMaskRuleList(raw_ostream &os, MaskAttr mask) {
  printRules(os, mask, " ");
}
