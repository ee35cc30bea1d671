//===- DimSourceInterface.td -------------------------------*- tablegen -*-===//
#ifndef GATEC_DIM_SOURCE_INTERFACE_TD
#define GATEC_DIM_SOURCE_INTERFACE_TD

include "mlir/IR/OpBase.td"

def DimSourceOpInterface : OpInterface<"DimSourceOpInterface"> {
  let cppNamespace = "::gatec";
  let description = [{
    Names, for a dimension of a result, the operand dimension it is a copy
    of: the same size at run time, whatever that size is. The dim analyses
    that prove two sizes equal (onnx::sameDim, the run-time broadcast
    roots) follow it through ops whose operands and results do not share
    one shape, such as the attention ops, whose `bshd` layout swaps the
    head and sequence dims of some operands and results.
  }];
  let methods = [
    InterfaceMethod<[{
        The (operand, dim) that dim `dim` of result `result` copies, or
        (null, -1) when it copies none.
      }],
      "std::pair<::mlir::Value, int64_t>", "getDimSource",
      (ins "unsigned":$result, "int64_t":$dim)>,
  ];
}

#endif
