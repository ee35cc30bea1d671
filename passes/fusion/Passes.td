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

def AbsorbHeadLayout : Pass<"absorb-head-layout", "mlir::func::FuncOp"> {
  let summary = "Head transposes around attention ops become their layout";
  let description = [{
    Attention layers project to [B, T, H, D] (sequence before heads) and
    transpose to the [B, H, T, D] order of the attention ops, then back for
    the output projection. This pass removes those head transposes (ONNX
    Transpose with perm [0, 2, 1, 3]) and records on the op which operands
    and results it reads and writes in [B, T, H, D] order, in its `bshd`
    attribute. The lowerings (--tile-attention, the reference attention of
    --convert-gated-to-linalg, --convert-linear-attention-to-loops) read
    them in place, strided along T: no transposed copy of the sequence.

    gated.attention: each of query, key, value and gate whose producer is a
    head transpose is read from its source (operands may differ: a KV
    cache may arrive in [B, H, S, D]); the result is written in
    [B, T, H, Dv] when its only user is a head transpose, whose type it
    takes. gated.linear_attention: query, key, value, decay and beta are
    absorbed together (when each is a head transpose), the output as for
    attention. A transpose with other users stays for them.

    The layout is decided here, once, in the `fused` phase, so that no
    lowering matches transposes of its own and pass order inside a phase
    does not change what is read in place.
  }];
  let dependentDialects = ["gatec::gated::GatedDialect"];
}

def FuseLinearAttentionEpilogue
    : Pass<"fuse-linear-attention-epilogue", "mlir::func::FuncOp"> {
  let summary = "The gated RMSNorm after linear attention into its epilogue";
  let description = [{
    Gated DeltaNet (Qwen3-Next) normalises each head's output row and gates
    it, y = RMSNorm(o) ⊙ silu(z), before the output projection. The norm is
    over the head dim Dv, so the linear attention task that computes a
    row can finish it: this pass moves a gated.rms_norm (with or without
    its gate) that reads a gated.linear_attention output into the op's
    norm_weight / norm_gate epilogue. The output is then written once,
    normalised and gated, instead of written, read back by a norm kernel
    and written again.

    The norm must read the output through onnx.Reshape ops only (they keep
    the order of the elements), none of which, nor the output, has another
    reader, and its last dim must be the output's Dv. The gate is passed
    as the norm saw it (its rows are the output's rows in the same order).
    When the weight or the gate is computed after the linear attention,
    the op moves down to the norm (if its final state is read only after
    the norm). The op's location fuses the norm's.
  }];
  let dependentDialects = ["gatec::gated::GatedDialect"];
}

#endif
