//===- ShapeInferenceInterface.td --------------------------*- tablegen -*-===//
#ifndef GATEC_ONNX_SHAPE_INFERENCE_INTERFACE_TD
#define GATEC_ONNX_SHAPE_INFERENCE_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Onnx_ShapeInferenceOpInterface : OpInterface<"ShapeInferenceOpInterface"> {
  let cppNamespace = "::gatec::onnx";
  let description = [{
    Computes the result types of an ONNX op from its operand types and
    attributes (and from the values of constant operands such as a Reshape's
    `shape`), following the shape rules of the op's ONNX specification. A
    dimension that cannot be known is dynamic; a rank that cannot be known
    gives an unranked tensor. Returns failure, with an error at the op's
    location, when the operands are inconsistent (rank or dimension mismatch,
    axis out of range, ...). The op verifier checks that the declared result
    types are compatible with the inferred ones; the `onnx-shape-inference`
    pass refines declared types to the inferred ones.
  }];
  let methods = [
    InterfaceMethod<"Compute one type per result (none for absent optional results).",
                    "::llvm::LogicalResult", "inferResultTypes",
                    (ins "::llvm::SmallVectorImpl<::mlir::Type> &":$resultTypes)>,
  ];
}

#endif
