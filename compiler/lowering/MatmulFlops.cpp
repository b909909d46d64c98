//===- MatmulFlops.cpp - the FLOP count the runtime reports, from the IR --===//
//
// Both backends' glue defines `matmulFlops(in)`, what `--bench` divides by
// the time: the sum, over the ops of @forward and of every function it
// calls, of each op's MatmulFlopsOpInterface polynomial. Its sizes are
// followed back through SizedResultsOpInterface (and calls) to the
// function's arguments: one C++ function per tfm function, taking its
// arguments' dynamic sizes, as the compiled functions do.
//
//===----------------------------------------------------------------------===//

#include "tfm/IR/TfmOps.h"
#include "tfm/Lowering/KeySpanCpp.h"
#include "tfm/Lowering/ModelGlue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tfm;

namespace tfm {

namespace {

/// The C++ name of dimension `dim` of argument `arg` (or, `dim` -1, of
/// index argument `arg`) inside a function's FLOP count.
std::string argName(unsigned arg, int64_t dim) {
  return dim < 0 ? llvm::formatv("a{0}", arg).str()
                 : llvm::formatv("a{0}_d{1}", arg, dim).str();
}

/// Whether `f`'s FLOP count takes argument `arg`'s size `dim` (dynamic
/// tensor dimensions and index arguments).
bool takes(func::FuncOp f, unsigned arg, int64_t dim) {
  Type type = f.getArgument(arg).getType();
  if (dim < 0)
    return type.isIndex();
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.isDynamicDim(dim);
}

class FlopEmitter {
public:
  explicit FlopEmitter(ModuleOp module) : symbols(module) {}

  /// `static double flops_NAME(sizes...)` for `f` and, first, every
  /// function it calls.
  LogicalResult emitFunction(func::FuncOp f, raw_ostream &os);
  /// `static double matmulFlops(const tfm::rt::InputView *in)` for the
  /// entry point `f`.
  LogicalResult emitEntry(func::FuncOp f, raw_ostream &os);

private:
  /// How a function's argument sizes are named where a size is printed.
  using ArgSizes =
      llvm::function_ref<FailureOr<std::string>(BlockArgument, int64_t)>;
  /// The C++ of `size` inside a function's count, its arguments' sizes
  /// named by `args`.
  FailureOr<std::string> size(const SizeAtom &size, ArgSizes args);
  /// Inside a function's own count: its parameters.
  FailureOr<std::string> size(const SizeAtom &atom) {
    return size(atom, [](BlockArgument arg, int64_t dim) {
      return FailureOr<std::string>(argName(arg.getArgNumber(), dim));
    });
  }
  /// emitFunction of every function `f` calls.
  LogicalResult emitCallees(func::FuncOp f, raw_ostream &os);
  /// `f`'s own terms and its calls, as `flops += ...;` lines.
  LogicalResult emitBody(func::FuncOp f, raw_ostream &os);

  SymbolTable symbols;
  llvm::StringSet<> done;
};

FailureOr<std::string> FlopEmitter::size(const SizeAtom &atom, ArgSizes args) {
  Value v = atom.value;
  if (atom.dim >= 0) {
    auto type = cast<RankedTensorType>(v.getType());
    if (!type.isDynamicDim(atom.dim))
      return std::to_string(type.getDimSize(atom.dim));
  }
  if (auto arg = dyn_cast<BlockArgument>(v))
    return args(arg, atom.dim);
  Operation *def = v.getDefiningOp();
  if (auto constant = dyn_cast<arith::ConstantIndexOp>(def))
    return std::to_string(constant.value());
  if (auto dim = dyn_cast<tensor::DimOp>(def)) {
    if (std::optional<int64_t> index = dim.getConstantIndex())
      return size({dim.getSource(), *index}, args);
  }
  if (auto add = dyn_cast<arith::AddIOp>(def)) {
    FailureOr<std::string> lhs = size({add.getLhs(), -1}, args),
                           rhs = size({add.getRhs(), -1}, args);
    if (failed(lhs) || failed(rhs))
      return failure();
    return "(" + *lhs + " + " + *rhs + ")";
  }
  if (auto sized = dyn_cast<SizedResultsOpInterface>(def)) {
    SmallVector<std::string> parts;
    for (const SizeAtom &part :
         sized.getResultSize(cast<OpResult>(v).getResultNumber(), atom.dim)) {
      FailureOr<std::string> p = size(part, args);
      if (failed(p))
        return failure();
      parts.push_back(*p);
    }
    return parts.size() == 1 ? parts[0] : "(" + llvm::join(parts, " + ") + ")";
  }
  if (auto call = dyn_cast<func::CallOp>(def)) {
    // The callee's result size, its arguments' sizes the caller's.
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal())
      return def->emitError("the FLOP count cannot follow a call of '")
             << call.getCallee() << "'";
    auto ret = cast<func::ReturnOp>(callee.getBody().front().getTerminator());
    Value inner = ret.getOperand(cast<OpResult>(v).getResultNumber());
    return size({inner, atom.dim}, [&](BlockArgument arg, int64_t dim) {
      return size({call.getOperand(arg.getArgNumber()), dim}, args);
    });
  }
  return def->emitError("the FLOP count cannot tell the size of a result of '")
         << def->getName() << "'";
}

LogicalResult FlopEmitter::emitBody(func::FuncOp f, raw_ostream &os) {
  os << "  double flops = 0;\n";
  WalkResult walk = f.walk([&](Operation *op) -> WalkResult {
    if (auto counted = dyn_cast<MatmulFlopsOpInterface>(op)) {
      FlopCount flops = counted.getMatmulFlops();
      for (const FlopTerm &term : flops.getTerms()) {
        std::string text;
        llvm::raw_string_ostream(text)
            << llvm::format("%.17g", term.coefficient);
        for (const SizeAtom &factor : term.factors) {
          FailureOr<std::string> s = size(factor);
          if (failed(s))
            return WalkResult::interrupt();
          text += " * double(" + *s + ")";
        }
        if (const std::optional<KeyPairs> &pairs = term.pairs) {
          FailureOr<std::string> sq = size(pairs->queries),
                                 sk = size(pairs->keys);
          FailureOr<std::string> offset =
              pairs->offset ? size(*pairs->offset) : std::string("0");
          if (failed(sq) || failed(sk) || failed(offset))
            return WalkResult::interrupt();
          text += " * " + keyPairsCpp(*pairs, *sq, *sk, *offset);
        }
        os << "  flops += " << text << ";\n";
      }
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal()) {
        call.emitError("the FLOP count cannot follow a call of '")
            << call.getCallee() << "'";
        return WalkResult::interrupt();
      }
      SmallVector<std::string> args;
      for (unsigned i = 0, e = callee.getNumArguments(); i < e; ++i) {
        int64_t rank = 0;
        if (auto t = dyn_cast<RankedTensorType>(callee.getArgumentTypes()[i]))
          rank = t.getRank();
        for (int64_t d = -1; d < rank; ++d) {
          if (!takes(callee, i, d))
            continue;
          FailureOr<std::string> s = size({call.getOperand(i), d});
          if (failed(s))
            return WalkResult::interrupt();
          args.push_back("int64_t(" + *s + ")");
        }
      }
      os << "  flops += flops_" << callee.getSymName() << "("
         << llvm::join(args, ", ") << ");\n";
    }
    return WalkResult::advance();
  });
  os << "  return flops;\n";
  return failure(walk.wasInterrupted());
}

LogicalResult FlopEmitter::emitCallees(func::FuncOp f, raw_ostream &os) {
  // Callees first: C++ declares before use.
  WalkResult walk = f.walk([&](func::CallOp call) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (callee && !callee.isExternal() && failed(emitFunction(callee, os)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult FlopEmitter::emitFunction(func::FuncOp f, raw_ostream &os) {
  if (!done.insert(f.getSymName()).second)
    return success();
  if (failed(emitCallees(f, os)))
    return failure();
  SmallVector<std::string> params;
  for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
    int64_t rank = 0;
    if (auto t = dyn_cast<RankedTensorType>(f.getArgumentTypes()[i]))
      rank = t.getRank();
    for (int64_t d = -1; d < rank; ++d)
      if (takes(f, i, d))
        params.push_back("[[maybe_unused]] int64_t " + argName(i, d));
  }
  os << "static double flops_" << f.getSymName() << "("
     << llvm::join(params, ", ") << ") {\n";
  if (failed(emitBody(f, os)))
    return failure();
  os << "}\n\n";
  return success();
}

LogicalResult FlopEmitter::emitEntry(func::FuncOp f, raw_ostream &os) {
  if (failed(emitCallees(f, os)))
    return failure();
  os << "static double matmulFlops([[maybe_unused]] const tfm::rt::InputView "
        "*in) {\n";
  // The runtime's inputs are the arguments marked tfm.input, in order:
  // their batch and sequence sizes.
  unsigned input = 0;
  for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
    if (!f.getArgAttr(i, "tfm.input"))
      continue;
    auto type = dyn_cast<RankedTensorType>(f.getArgumentTypes()[i]);
    for (int64_t d = 0; type && d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d))
        continue;
      if (d > 1)
        return f.emitError("input ")
               << i << " has a dynamic dimension " << d
               << "; only batch (0) and sequence (1) may be dynamic";
      os << "  [[maybe_unused]] const int64_t " << argName(i, d) << " = in["
         << input << "]." << (d == 0 ? "batch" : "seq") << ";\n";
    }
    ++input;
  }
  if (failed(emitBody(f, os)))
    return failure();
  os << "}\n\n";
  return success();
}

} // namespace

FailureOr<std::string> emitMatmulFlops(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal())
    return module.emitError("the module has no @forward function");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// The matrix products' FLOPs of one forward pass, for its inputs' "
        "sizes.\n";
  FlopEmitter emitter(module);
  if (failed(emitter.emitEntry(forward, os)))
    return failure();
  return text;
}

std::string cIdentifier(StringRef name) {
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) ? c : '_';
  if (id.empty() || llvm::isDigit(id[0]))
    id = "_" + id;
  return id;
}

} // namespace tfm
