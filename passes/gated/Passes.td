//===- Passes.td - raising onnx graphs to the gated dialect -*- tablegen -*-===//
#ifndef GATEC_PASSES_GATED_PASSES_TD
#define GATEC_PASSES_GATED_PASSES_TD

include "mlir/Pass/PassBase.td"

// Raising passes recognise a gate construct as exporters write it and
// replace the value it computes by one gated op. Each leaves the graph as it
// is where the semantics would differ (another mask shape, an epsilon that is
// not a constant, a broadcast that changes the shape). The new op's location
// fuses the locations of every node and initializer it replaces, so later
// diagnostics and the weight accounting see where it came from.

def RaiseNorms : Pass<"raise-norms", "mlir::func::FuncOp"> {
  let summary = "RMSNorm and LayerNorm to gated.rms_norm / gated.layer_norm";
  let description = [{
    Recognises ONNX RMSNormalization-23 and LayerNormalization-17 over the
    last axis, and their decompositions as PyTorch exports them:
      x · 1/sqrt(mean(x²) + eps) · w      (Pow or Mul for x², Div(1, ·) or
                                           Reciprocal or Div(x, ·); casts to
                                           the same type are seen through)
      (x − mean(x)) / sqrt(mean((x − mean(x))²) + eps) · w + b
    epsilon must be a constant scalar. A weight of the form (1 + w) gives
    `unit_offset`. An RMSNorm whose only reader multiplies it by act(z),
    z of the norm's shape and act Sigmoid(z), 0.5 + 0.5·Sigmoid(z) or
    z·Sigmoid(z) (SiLU), is the gated RMSNorm of Gated DeltaNet / Qwen3-Next
    (FLA's FusedRMSNormGated): one gated.rms_norm with that gate. An
    RMSNorm of Mul(y, act(z)) that alone reads the product is Mamba2's
    gated norm (MambaRMSNormGated, the gate before the norm): the op with
    that gate and `gate_first`. The norm may also be computed on a reshape
    that keeps the last dim and reshaped back before the weight (Mamba2's
    n_groups = 1 view [B, T, 1, D]).
  }];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def RaiseGlu : Pass<"raise-glu", "mlir::func::FuncOp"> {
  let summary = "GLU feed-forward gates to gated.glu";
  let description = [{
    Recognises act(x·W) ⊙ (x·V) with constant 2-D W and V (onnx.MatMul of
    one x), act one of: Sigmoid (GLU), none (bilinear), Relu (ReGLU), Gelu or
    its erf decomposition 0.5·a·(1 + erf(a/√2)) (GEGLU), the tanh
    decomposition 0.5·a·(1 + tanh(√(2/π)(a + 0.044715·a³))) (GEGLU tanh), and
    SiLU as a·Sigmoid(a) (SwiGLU), and ONNX SwiGLU-28 with alpha = 1 over
    two such projections. Products are matched as a multiset of factors, so
    any association of the Muls is found.

    A projection may carry nn.Linear's bias (an Add of a constant [N]
    after the MatMul, or Gemm's C with beta 1): the op takes it as w_bias
    or v_bias (RecurrentGemma's MLP). A projection times itself (p·p, the
    square in a GELU's cube) is no bilinear gate.

    The same products over a routed expert's projections become
    gated.expert_glu: with W the experts' constant [E, N, K] (nn.Linear's
    layout per expert), either MatMul(x, Transpose(Gather(W, e, axis 0)))
    with e a scalar (one step of transformers' eager experts loop, as the
    TorchScript exporter unrolls it) or Squeeze(MatMul(GatherND(W, idx),
    Unsqueeze(x, 2)), 2) with idx [R, 1] and batch_dims 0 (batched_mm, as
    the dynamo exporter writes it); the gate and up projections are column
    ranges of one such product (Slice or Split) or two, with the same x and
    the same index. The op reads the experts' rows through the index, so
    the [R, N, K] gathered copy of batched_mm is no longer made.
  }];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def RaiseRouter : Pass<"raise-router", "mlir::func::FuncOp"> {
  let summary = "mixture-of-experts routers to gated.router";
  let description = [{
    Recognises the router of a mixture-of-experts layer, the gate over
    experts, at its onnx.TopK (largest = 1, over the last axis, k a
    constant in [1, E], E static), in the two orders exporters write:
      TopK(Softmax(z)), optionally renormalised by
        Div(values, ReduceSum(values, last axis, keepdims = 1))
        when those two are all the uses of the values (Qwen-MoE with
        norm_topk_prob): softmax_then_topk, none or renormalise;
      Softmax(TopK(z).values) with that Softmax the values' only use
        (GPT-OSS, Mixtral): topk_then_softmax.
    z must be a projection's logits [..., E]: MatMul of a constant 2-D
    weight, or Gemm with a constant B and a constant or no C (nn.Linear as
    the dynamo exporter writes it, GPT-OSS's with its bias), plus an
    optional constant bias; casts to the same type, a cast of f16/bf16 to
    f32 (the softmax in f32) and reshapes that keep the last dim are seen
    through. Both softmaxes must be over the last axis. The TopK's indices
    and the (renormalised) weights are replaced; a Softmax over all experts
    with other users stays for them. Anything else is left alone: a TopK
    over another axis, the smallest k, k not a constant, a softmax over
    another axis, a TopK of values that are no projection's (a sampler
    over vocabulary logits computed at run time), a sigmoid router.
  }];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def RaiseAttention : Pass<"raise-attention", "mlir::func::FuncOp"> {
  let summary = "softmax attention and its G1 output gate to gated.attention";
  let description = [{
    Recognises MatMul(Softmax(mask(scale · MatMul(Q, Kᵀ))), V) on [B, H, T, D]
    tensors: the scale as Div or Mul by a constant (also split between Q and
    Kᵀ, as torch exports SDPA), a mask given by Where(mask, -inf, s),
    Where(mask, s, -inf) or Add(s, m) (a constant causal pattern becomes the
    `causal` flag), GQA through repeat_kv (Unsqueeze/Expand/Reshape); and the
    ONNX Attention-23/24 op without a KV cache or softcap. Then the G1 gate:
    y ⊙ act(g) or y + act(g) applied to the attention output in the
    [B, T, H, D] or [B, T, H·D] layout, act one of Sigmoid, 0.5 + 0.5·Sigmoid,
    SiLU, elementwise or headwise ([B, T, H, 1]).
  }];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def RaiseGates : Pass<"raise-gates", "mlir::func::FuncOp"> {
  let summary = "gates on value, key, query and dense output (G2-G5) to gated.gate";
  let description = [{
    Recognises p ⊙ σ(g) (and NS-sigmoid, SiLU) where p is the value (G2),
    key (G3) or query (G4) projection feeding a gated.attention, or the
    output projection of a gated.attention (G5), and g is computed from the
    layer input by a MatMul. Runs after raise-attention.
  }];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def RaiseSharedExpertGates
    : Pass<"raise-shared-expert-gates", "mlir::func::FuncOp"> {
  let summary = "the sigmoid gate of an MoE layer's shared expert to gated.gate";
  let description = [{
    Qwen2-MoE and Qwen3-Next add to the routed experts' sum a shared expert,
    an FFN every token runs, scaled per token by its own gate:

      σ(x·w_g) ⊙ down(GLU(x))      w_g [d, 1]: one gate value per token

    Recognised at the onnx.Mul of the activated logits (Sigmoid,
    0.5 + 0.5·Sigmoid or SiLU, as gated.gate takes them) and the shared
    expert's output, when: the logits are a linear layer of x with one
    output (MatMul of a constant [d, 1], or Gemm with a constant B, as
    nn.Linear exports, plus an optional constant bias); the other factor is
    a linear layer of a gated.glu of the same x (so --raise-glu runs
    first); and a gated.router (so --raise-router runs first) routes the
    same x: the gate belongs to an MoE layer. Casts to the same type or to
    f32 and reshapes that keep the last dim are seen through on x. The Mul
    becomes gated.gate shared_expert <act> multiply; the lowering is
    gated.gate's (the [N, 1] gate broadcast over the expert's output).
    Anything else is left alone: a gate of another width, a gate of a
    branch that is no GLU of the same tokens, a layer without a router.
  }];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def RaiseShortConv : Pass<"raise-short-conv", "mlir::func::FuncOp"> {
  let summary = "LFM2's gated short convolution to gated.short_conv";
  let description = [{
    Recognises c ⊙ causal_conv(b ⊙ x), the two multiplicative gates around
    a causal depthwise convolution of LFM2's short-conv block (b, c and x
    are chunks of one input projection), as torch exports it: onnx.Mul(c,
    Slice(Conv(Mul(b, x), W))) with Conv depthwise (group = C, W [C, 1, K]
    constant, pads K − 1 on the left, stride and dilation 1, a constant
    bias or none) and the Slice keeping the first T outputs along the
    sequence (starts 0, ends the input's length as a constant or read with
    Shape from a tensor whose dim is provably the same, axis 2, step 1);
    casts to the same type are seen through. All three of b, x, c must be
    [N, C, T] of the result's type.
  }];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def RaiseResidualGates : Pass<"raise-residual-gates", "mlir::func::FuncOp"> {
  let summary = "gated residual combines to gated.residual";
  let description = [{
    Recognises the GTrXL gating layers (input, output with its −b_g, highway,
    sigtanh, GRU-type), Flamingo's x + tanh(α)·y, ReZero's x + α·y and
    LayerScale's x + γ⊙y, where α/γ are constants (the trained parameters).
  }];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def RaiseLinearAttention : Pass<"raise-linear-attention", "mlir::func::FuncOp"> {
  let summary = "ONNX LinearAttention-27 to gated.linear_attention";
  let description = [{
    Rewrites every onnx.LinearAttention (opset 27) into one
    gated.linear_attention in recurrent form: the packed [B, T, H·D] query,
    key, value, decay ([B, T, Hkv·Dk] per key channel or [B, T, Hkv] per
    head) and beta ([B, T, Hkv] or [B, T, 1]) are split into heads
    ([B, H, T, D], onnx.Reshape + onnx.Transpose, as the operator does
    internally), the output is packed back, past_state/present_state are
    the op's initial/final state, scale 0 becomes 1/sqrt(Dk), and the
    chunk_size hint is kept. Decay is in log space in both (ONNX: S_t =
    exp(g_t)·S_{t-1} + …). A node that violates the operator's contract
    (unknown update_rule, decay or beta missing or forbidden by the rule,
    shapes that do not split into the given heads, dynamic H·D) is reported
    with its location and fails the pass.

    Also the quadratic (parallel) form of scalar-decay linear attention as
    RetNet / Mamba2-SSD write it, on [B, H, T, D] tensors:
      o = ((scale · Q Kᵀ) ⊙ D) V,  D = Trilu_lower(Exp(Trilu_lower(G − Gᵀ))),
      G = CumSum over T of g [B, H, T, 1]
    (the inner Trilu optional; scale a Mul or Div by a constant, or none)
    becomes one gated.linear_attention `gated` with decay g, so that its
    O(T²) scores and decay matrix become the chunked form's O(T·C).
  }];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def ChunkLinearAttention : Pass<"chunk-linear-attention", "mlir::func::FuncOp"> {
  let summary = "decay recurrences into the chunked log-space form";
  let description = [{
    Sets every gated.linear_attention to `form = chunked` with the given
    chunk size; --convert-linear-attention-to-loops then spells out the
    chunkwise-parallel algorithm (see the op's description): per chunk the
    inclusive cumulative sum G of the log-decays in f32, intra-chunk
    products with factors exp(G_i − G_j) for i ≥ j only, the delta rule by
    forward substitution of the UT system, and the state passed between
    chunks. Every exponent it forms is ≤ 0 when the log-decays are ≤ 0,
    so decays down to exp(−30) per token neither underflow into NaN nor
    overflow (a product of decays is never formed).

    Growth: ONNX LinearAttention-27 allows any real log-decay; a run-time
    decay is taken as given (its exponents may then be positive, exact
    until exp overflows), but a decay that is a compile-time constant
    with a positive entry is reported as an error at the op's location,
    since a decay gate above 1 is almost certainly a sign error of the
    exporter (log-decays are −exp(A)·softplus(·) ≤ 0 in Mamba2 and Gated
    DeltaNet, log σ(·) ≤ 0 in GLA).
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", "16",
           "Tokens per chunk (16, 32, 64, ...); on the CPU the default 16 "
           "is the fastest of 16, 32, 64 (per token 2·D² + 2·C·D "
           "multiply-adds and C exps)">,
  ];
  let dependentDialects = ["::gatec::gated::GatedDialect"];
}

def CheckWeights : Pass<"check-weights", "mlir::ModuleOp"> {
  let summary = "every initializer that fed an output still does";
  let description = [{
    Records, the first time it runs on a module, the initializers whose
    values reach a result of @main_graph (through the locations of the live
    ops that use them: constants folded or absorbed into attributes keep
    their initializer in their location), and the node that consumed each.
    Every later run fails with an error naming each initializer that no
    longer contributes and the node that used it. gatec runs it after every
    graph-level phase, onnx to linalg (`--check-weights`, on by default):
    it follows values through SSA use-def chains on tensors, which
    bufferized IR no longer has. A converter that silently drops
    an output-gate projection gives fluent but degraded text (seed 004,
    "Failure modes").
  }];
  let options = [
    Option<"phase", "phase", "std::string", "\"\"",
           "Name of the phase just run (for the message)">,
  ];
}

#endif
