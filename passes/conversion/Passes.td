//===- Passes.td - lowering out of the gated dialect -------*- tablegen -*-===//
#ifndef GATEC_PASSES_CONVERSION_PASSES_TD
#define GATEC_PASSES_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGatedToLinalg : Pass<"convert-gated-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Lower gated ops to linalg on tensors (the reference form)";
  let description = [{
    Rewrites every gated op into linalg.generic / linalg.fill on tensors
    with arith and math bodies, computing in f32 whatever the element type
    (inputs extended, results truncated). This is the target-independent,
    untiled form of each op's documented maths: attention materialises the
    [B, H, T, S] scores (with the query head h reading KV head h / (Hq/Hkv)
    through the indexing map, the causal mask from linalg.index, a fully
    masked row giving zeros) and applies its gate in the epilogue; the GLU
    computes x·W and x·V in one contraction with two outputs, then
    act(a)·b; the norms reduce over the last dimension in f32. The fused,
    tiled algorithms (online softmax, GEMM epilogues) are later phases and
    are checked against this form.

    Dynamic dimensions are taken with tensor.dim; gated.attention needs
    static head counts (the KV head of a query head is an affine floordiv by
    Hq/Hkv) and reports an error otherwise.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"
  ];
}

#endif
