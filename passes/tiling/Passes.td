//===- Passes.td - the tiled phase -------------------------*- tablegen -*-===//
#ifndef GATEC_PASSES_TILING_PASSES_TD
#define GATEC_PASSES_TILING_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileAndFuseLinalg : Pass<"tile-and-fuse-linalg", "mlir::func::FuncOp"> {
  let summary = "Tile linalg ops into scf.forall row blocks, fusing their producers";
  let description = [{
    Gives every linalg op on tensors outside an scf.forall a parallel
    outer loop: its parallel iteration dimensions except the innermost one
    are tiled (size 1, and `rows` for the last of them), as an scf.forall
    whose iterations are independent tasks (one per core on the CPU, one per
    block on the GPU). Ops are visited from the last to the first; each
    one's producers are fused into its loop body (tile-and-fuse) when the
    producer is a linalg op used only there and the tile needs a proper
    slice of it, so a GEMM and the elementwise epilogue that reads it (a GLU's
    activation-multiply, a gate's sigmoid-multiply, a bias, a residual add)
    run in one loop nest and the GEMM's result is never written whole.

    Reductions are never tiled (the reduction dimensions keep tile size 0),
    so tiling changes no result: every element is computed by the same
    scalar code, only in a different order of independent elements.
    Ops with a single parallel dimension are left alone.

    Option `rows`: the tile size of the last tiled dimension (default 8).
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "8",
           "tile size of the innermost tiled parallel dimension">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect"
  ];
}

#endif
