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
    Option `fuse-producers=false` tiles each op alone (for ablations and
    the fusion report's unfused column). Option `fuse-products=false`
    keeps one product (a GEMM: a reduction two inputs read) per loop: a
    producer that is a product, or that reads one only it reads (an FFN's
    activation-multiply under its down projection), is not fused into a
    loop that already computes a product, and gets a loop of its own. The
    CPU pipeline sets it, so that a loop over a few rows can spread its one
    GEMM's columns over the threads (`--matmul-micro-kernel`'s
    `split-columns`); an FFN then writes its gated product once.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "8",
           "tile size of the innermost tiled parallel dimension">,
    Option<"fuseProducers", "fuse-producers", "bool", "true",
           "fuse producers into the loop (false: one loop per op)">,
    Option<"fuseProducts", "fuse-products", "bool", "true",
           "fuse a product (a GEMM) into a loop that already computes one, "
           "with the elementwise ops between them (false: one product per "
           "loop)">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect"
  ];
}

def TileAttention : Pass<"tile-attention", "mlir::func::FuncOp"> {
  let summary = "gated.attention as a tiled online-softmax loop nest with the gate in its epilogue";
  let description = [{
    Rewrites every gated.attention into the flash-attention algorithm
    (Dao et al. 2022, "FlashAttention", Algorithm 1; Milakov & Gimelshein
    2018, online softmax) on tensors, so no [T, S] score matrix exists:

      scf.forall (b, h, query block of `q-tile` rows):
        acc = 0 [bq, Dv], m = -inf [bq], l = 0 [bq]            (f32)
        scf.for over key blocks of `k-tile` keys (causal: only up to
                the block's last query, top-left aligned):
          s = scale · Q Kᵀ (+ mask; -inf where causal j > t)
          m' = max(m, rowmax s);  p = exp(s − m'̂)   (m'̂ = 0 where m' = -inf)
          l = l·exp(m − m'̂) + rowsum p;  acc = acc·exp(m − m'̂) + p V
        epilogue: y = acc / l (0 where l = 0: a fully masked row gives 0;
          a NaN score makes its row NaN),
          then the G1 gate (sigmoid / ns_sigmoid / silu of the gate logits,
          elementwise or headwise, multiply or add), truncated to the
          element type, written once.

    Q Kᵀ reads the key tile transposed to [D, bk], so that the keys are
    the contiguous (vector) dim of the product: by default each block
    transposes its tile (one small kernel per block on the GPU); with
    `transpose-keys-once` the keys are transposed to [B, Hkv, D, S] once
    before the loop and every block and every query head of a GQA group
    reads its tile in place (otherwise a tile is transposed Hq / Hkv
    times per query block, with scattered stores on the CPU). Off by
    default (one more loop nest per attention; on the GPU one more
    launch); the CPU pipeline turns it on (attention alone at T = 2048,
    16/4 heads: 200 -> 183 ms). The copy is tagged "keys transposed once"
    in its location, so that reports tell it from the attention.

    Query head h reads KV head h / (Hq/Hkv) (GQA). Scores, softmax and
    accumulation are f32 whatever the element type. The result equals the
    reference lowering (--convert-gated-to-linalg) up to fp32
    reassociation. Operands and a result held in [B, T, H, D] order (the
    op's `bshd` layout, set by --absorb-head-layout) are sliced and written
    in place, strided. Head counts must be static (an error otherwise). A
    broadcastable dim (batch, a mask's or gate's dims) that is dynamic is
    checked once before the loop (1 or full size, else a run-time error)
    and read at index 0 where it is 1; contraction dims are checked equal.
  }];
  let options = [
    Option<"qTile", "q-tile", "int64_t", "32", "queries per block">,
    Option<"kTile", "k-tile", "int64_t", "64", "keys per inner iteration">,
    Option<"transposeKeysOnce", "transpose-keys-once", "bool", "false",
           "transpose the keys to [B, Hkv, D, S] once before the loop "
           "instead of each key tile in every block">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"
  ];
}

def FuseElementwise : Pass<"fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuse elementwise linalg.generic chains without duplicating work";
  let description = [{
    Upstream elementwise fusion (linalg::populateElementwiseOpsFusionPatterns:
    a producer generic is inlined into its consumer's body) restricted to
    producers with one use and consumers whose iterators are all parallel.
    Unlike `--linalg-fuse-elementwise-ops`, an elementwise producer is never
    fused into a contraction or reduction, where its body would be
    recomputed once per reduced element (a SwiGLU product fused into the
    down projection would evaluate its sigmoid N times). Chains such as
    bias-add → activation → gate-multiply become one loop body; the
    producers of a GEMM are fused by --tile-and-fuse-linalg instead, one
    tile at a time.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def InnermostParallelLoop : Pass<"innermost-parallel-loop", "mlir::func::FuncOp"> {
  let summary = "Put a contraction's contiguous output dimension innermost";
  let description = [{
    Interchanges the loops of a linalg.generic with reductions so that the
    loop indexing the last (contiguous) dimension of its output comes last,
    after the reductions, when an input is contiguous along it too:
    C[i,j] += A[i,k]·B[k,j] runs as (i, k, j). The innermost loop is then
    parallel with unit-stride loads and stores, which LLVM vectorizes
    without reassociating the floating-point reduction (the sum over k keeps
    its order, so results do not change). Contractions whose inputs are
    contiguous only along the reduction (q·kᵀ over the head dim) are left
    as they are.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

#endif
