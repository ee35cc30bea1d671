//===- Passes.td - passes over the onnx dialect ------------*- tablegen -*-===//
#ifndef GATEC_PASSES_ONNX_PASSES_TD
#define GATEC_PASSES_ONNX_PASSES_TD

include "mlir/Pass/PassBase.td"

def OnnxShapeInference : Pass<"onnx-shape-inference", "mlir::func::FuncOp"> {
  let summary = "Infer result shapes and fold constant shape chains";
  let description = [{
    Refines the result type of every onnx op (and the function's result
    types) to the type its ONNX shape rules give, and folds ops whose operands
    are small constants. Iterated to a fixed point, this folds the
    Shape/Gather/Unsqueeze/Concat chains that PyTorch exports before every
    Reshape when the dimensions they read are static; where a dimension is
    dynamic (an ONNX `dim_param`) the chain stays and the Reshape's result
    keeps that dimension dynamic while every statically known one becomes
    static.

    Fails, with an error at the ONNX node's location, when an op's operands
    are inconsistent (rank or dimension mismatch, axis out of range).
  }];
  let dependentDialects = ["::gatec::onnx::OnnxDialect"];
  let options = [
    Option<"maxIterations", "max-iterations", "unsigned", "8",
           "Upper bound on refine-then-fold rounds">,
  ];
}

#endif
