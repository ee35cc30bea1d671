//===- Passes.td - the fused phase -------------------------*- tablegen -*-===//
#ifndef GATEC_PASSES_FUSION_PASSES_TD
#define GATEC_PASSES_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def WidenProjections : Pass<"widen-projections", "mlir::func::FuncOp"> {
  let summary = "One GEMM for the projections of one input (QKV + gate)";
  let description = [{
    Projections that read the same activation x with constant weights -
    the q, k, v and gate projections of an attention layer (G1's gate
    projection, or the G2-G5 gate logits), a GLU's gate and up projections
    when they are separate MatMuls - become one onnx.MatMul over the weights
    concatenated at compile time along the output dimension,
    [K, N1] ... [K, Nn] -> [K, N1 + ... + Nn], followed by one onnx.Slice
    per projection (a view of the wide result: after bufferization a
    subview, not a copy). x is read once instead of n times, and the GEMM
    is wide enough to keep every core busy at short sequence lengths.

    A projection whose only user adds a constant bias of N elements keeps
    it: the biases are concatenated likewise (zeros for projections without
    one) and added to the wide result, the GEMM's epilogue.

    Each output column is the same dot product in the same order, so the
    results are bit-identical. The new weight's location fuses the
    originals', so weight accounting (--check-weights) still names them.
    Only 2-D constant weights of one element type with raw data (dense or
    resource) are concatenated; splat and other weights are left alone.
  }];
}

#endif
