//===- TfmInterfaces.td - tfm op interfaces -----------------*- tablegen -*-===//
//
// What passes and backends ask of every op the same way: the sizes of its
// results in terms of its operands', and the FLOPs of its matrix products.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_INTERFACES_TD
#define TFM_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Tfm_SizedResultsOpInterface : OpInterface<"SizedResultsOpInterface"> {
  let cppNamespace = "::mlir::tfm";
  let description = [{
    Where an op's dynamic sizes come from: each dynamic dimension of a
    tensor result (and the value of an index result) as a sum of its
    operands' dimensions and index operands (`SizeSum`). A backend or the
    FLOP count follows them back to a function's arguments to say how large
    a value is at run time.
  }];
  let methods = [
    InterfaceMethod<[{
        Dimension `dim` of result `result` (which is dynamic), or the value
        of index result `result` when `dim` is -1, as a sum of operand
        sizes. By default: dimension `dim` of operand 0 (ops whose results
        are shaped like their first operand, or keep its leading
        dimensions).
      }], "::mlir::tfm::SizeSum", "getResultSize",
      (ins "unsigned":$result, "int64_t":$dim), [{}], [{
        return {{$_op->getOperand(0), dim}};
      }]>,
  ];
}

def Tfm_MatmulFlopsOpInterface : OpInterface<"MatmulFlopsOpInterface"> {
  let cppNamespace = "::mlir::tfm";
  let description = [{
    The floating-point operations of an op's matrix products (2 per
    multiply-add), what `--bench` reports GFLOP/s of: a polynomial of its
    operands' dynamic sizes, the static ones folded into the coefficients.
  }];
  let methods = [
    InterfaceMethod<"The FLOPs of one execution of the op.",
      "::mlir::tfm::FlopCount", "getMatmulFlops">,
  ];
}

def Tfm_StateBufferTypeInterface : TypeInterface<"StateBufferTypeInterface"> {
  let cppNamespace = "::mlir::tfm";
  let description = [{
    A buffer a model keeps from call to call (a `tfm.kv_cache`
    declaration's type): a key/value cache, or a Mamba mixer's conv window
    and scan state. The runtime allocates `getFloats()` floats for each
    declaration, once with the model; the type defines the layout every
    backend reads.
  }];
  let methods = [
    InterfaceMethod<"Floats of the whole buffer.", "int64_t", "getFloats">,
  ];
}

#endif // TFM_INTERFACES_TD
