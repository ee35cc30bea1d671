//===- OnnxOps.td - ops of the onnx import dialect ---------*- tablegen -*-===//
#ifndef GATEC_ONNX_OPS_TD
#define GATEC_ONNX_OPS_TD

include "dialects/onnx/OnnxDialect.td"
include "dialects/onnx/ShapeInferenceInterface.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

// Every onnx op is pure (ONNX graphs have no side effects; Dropout is
// inference-mode) and is verified by comparing its declared result types
// with the ones its shape inference computes.
class Onnx_Op<string mnemonic, list<Trait> traits = []>
    : Op<Onnx_Dialect, mnemonic, !listconcat(traits, [Pure])> {
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return ::gatec::onnx::verifyInferredResultTypes(getOperation());
    }
  }];
}

def Onnx_ConstantOp : Op<Onnx_Dialect, "Constant", [ConstantLike, Pure]> {
  let summary = "ONNX Constant-13 / a graph initializer";
  let description = [{
    A constant tensor: an ONNX `Constant` node or a graph initializer. The
    importer normalises every form of ONNX's Constant (`value`, `value_float`,
    `value_floats`, `value_int`, `value_ints`) to `value`. Large tensors are
    `dense_resource` blobs (weights are not uniqued into the context); small
    ones (shape tensors, scalars) are dense elements so they fold.
    Source: ONNX operator specification, Constant-13, and the ONNX IR
    specification (GraphProto.initializer).
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyTensor:$output);
  let hasFolder = 1;
  let hasVerifier = 1;
  let hasCustomAssemblyFormat = 1;
  let builders = [
    OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
      build($_builder, $_state, ::llvm::cast<::mlir::TensorType>(value.getType()), value);
    }]>,
  ];
}

def Onnx_NoValueOp : Op<Onnx_Dialect, "NoValue", [ConstantLike, Pure]> {
  let summary = "the absent optional input";
  let description = [{
    Produces the `none` value that stands for an optional ONNX input left
    empty (an empty input name in the NodeProto).
  }];
  let results = (outs NoneType:$none);
  let assemblyFormat = "attr-dict";
  let builders = [
    OpBuilder<(ins), [{ build($_builder, $_state, $_builder.getNoneType()); }]>,
  ];
  let hasFolder = 1;
}

def Onnx_YieldOp : Op<Onnx_Dialect, "Yield", [Pure, Terminator,
                                              ParentOneOf<["ScanOp"]>]> {
  let summary = "returns the outputs of a subgraph (Scan body)";
  let description = [{
    Terminates the body of a subgraph-carrying op (Scan): its operands are the
    body graph's outputs in order (updated states, then scan output slices).
  }];
  let arguments = (ins Variadic<AnyTensor>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
}

include "dialects/onnx/OnnxOps.gen.td"

#endif
