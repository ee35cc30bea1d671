//===- GatedOps.td - ops of the gated dialect --------------*- tablegen -*-===//
#ifndef GATEC_GATED_OPS_TD
#define GATEC_GATED_OPS_TD

include "dialects/gated/GatedDialect.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/interfaces/DimSourceInterface.td"

class Gated_Op<string mnemonic, list<Trait> traits = []>
    : Op<Gated_Dialect, mnemonic, !listconcat(traits, [Pure])> {
  let hasVerifier = 1;
}

def Gated_FloatTensor : TensorOf<[F32, F16, BF16]>;

def Gated_AttentionOp : Gated_Op<"attention", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<DimSourceOpInterface>]> {
  let summary = "softmax attention with an optional output gate (G1)";
  let description = [{
    Scaled dot-product attention over heads, with grouped-query attention,
    an optional mask and an optional query-dependent output gate:

      s[b,h,t,j] = scale · Σ_d query[b,h,t,d] · key[b,h/r,j,d]   (r = Hq/Hkv)
      s = softcap · tanh(s / softcap)        (with softcap, Gemma2; before
                                              the masks)
      s[b,h,t,j] = -inf where causal and j > t, where j < t - left_window
                   (a sliding window: each query sees itself and the
                   left_window keys before it), or where a boolean mask
                   is false; s += mask where the mask is additive (float)
      p = softmax_j(s)                       (in f32; a row whose every
                                              entry is -inf gives p = 0,
                                              so its output is 0; a NaN
                                              score makes its row NaN)
      with sinks (GPT-OSS): p[b,h,t,j] = exp(s_j) / (Σ_j' exp(s_j') +
                            exp(sinks[h])), a learned per-head logit that
                            takes probability mass and reads no value
      y[b,h,t,e] = Σ_j p[b,h,t,j] · value[b,h/r,j,e]
      with a gate g (pre-activation logits) and a = act(g):
        multiply: result = y ⊙ a        add: result = y + a
      (headwise: g[b,h,t,0] broadcast over e)

    Shapes: query [B, Hq, T, D], key [B, Hkv, S, D], value [B, Hkv, S, Dv],
    Hq a multiple of Hkv (query head h reads KV head h / (Hq/Hkv));
    result [B, Hq, T, Dv]. Cross-attention: S may differ from T. The mask
    broadcasts to [B, Hq, T, S] (boolean: true attends, as in ONNX
    Attention-23 and torch SDPA; float: added to the scores). The causal mask
    is aligned top-left (key j is visible to query t iff j <= t), as in ONNX
    Attention-23 `is_causal` and torch SDPA `is_causal`; `left_window` is
    ONNX Attention-25's left_window_size at query position t (a transformers
    sliding window of W keys is left_window = W - 1). The gate is
    [B, Hq, T, Dv] (elementwise) or [B, Hq, T, 1] (headwise); act is
    `gate_activation` (sigmoid, ns_sigmoid = 0.5 + 0.5·σ, silu).

    Layout: `bshd` names the operands (query, key, value, gate) and the
    result held in [B, T, H, D] order instead (sequence before heads, the
    order the projections write and the output projection reads); their
    dims are those above with the middle two swapped. The lowerings read
    and write them in place, strided: no transposed copy. --absorb-head-layout
    sets it from the head transposes around the op.

    Fully masked rows are 0 whichever form the model wrote the attention in:
    ONNX Attention-23/25 defines them so, and torch's TorchScript export of
    SDPA guards them so (`Where(IsNaN(p), 0, p)`); a MatMul-Softmax-MatMul
    pattern raised to this op gets the same zeros where ONNX's Softmax alone
    would give NaN (0/0). Every other NaN (in query, key, value, mask or
    gate) propagates as the maths says.

    Element types f32/f16/bf16; softmax and accumulation in f32.
    Source: Vaswani et al. 2017 (attention), Ainslie et al. 2023 (GQA),
    Qiu et al. 2025, "Gated Attention for LLMs", section 3.1 (G1 gate).
  }];
  let arguments = (ins
    Gated_FloatTensor:$query,
    Gated_FloatTensor:$key,
    Gated_FloatTensor:$value,
    Optional<AnyTensor>:$mask,
    Optional<Gated_FloatTensor>:$gate,
    Optional<Gated_FloatTensor>:$sinks,
    F32Attr:$scale,
    UnitAttr:$causal,
    OptionalAttr<Gated_GateActivation>:$gate_activation,
    OptionalAttr<Gated_GateGranularity>:$gate_granularity,
    OptionalAttr<Gated_GateMode>:$gate_mode,
    OptionalAttr<StrArrayAttr>:$bshd,
    OptionalAttr<I64Attr>:$left_window,
    OptionalAttr<F32Attr>:$softcap);
  let results = (outs Gated_FloatTensor:$result);
  let extraClassDeclaration = [{
    /// The operand or result `name` is in [B, T, H, D] order (see `bshd`).
    bool isBshd(::llvm::StringRef name);
    /// `left_window` and `softcap` as numbers, if set.
    std::optional<int64_t> leftWindowSize();
    std::optional<double> softcapValue();
  }];
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`gate` `(` $gate^ `:` type($gate) `,` $gate_activation `,`
       $gate_granularity `,` $gate_mode `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `->` type($result)
  }];
}

def Gated_GateOp : Gated_Op<"gate", [AllTypesMatch<["x", "result"]>]> {
  let summary = "a gate on a projection other than the attention output (G2-G5)";
  let description = [{
      multiply: result = x ⊙ act(gate)      add: result = x + act(gate)
    x is the gated projection (G2 value, G3 key, G4 query, G5 dense output);
    `gate` holds the logits, computed from the layer input, and broadcasts to
    x (elementwise: same shape; headwise: size 1 in the head-dim). act is
    `activation` (sigmoid, ns_sigmoid, silu). f32/f16/bf16, computed in f32.
    Source: Qiu et al. 2025, "Gated Attention for LLMs", section 3 and Table 1.
  }];
  let arguments = (ins Gated_FloatTensor:$x, Gated_FloatTensor:$gate,
                       Gated_GatePlacement:$placement,
                       Gated_GateActivation:$activation,
                       Gated_GateMode:$mode);
  let results = (outs Gated_FloatTensor:$result);
  let assemblyFormat = [{
    $placement $activation $mode $x `,` $gate attr-dict `:` type($x) `,` type($gate)
  }];
}

def Gated_GluOp : Gated_Op<"glu", [AttrSizedOperandSegments]> {
  let summary = "gated linear unit: act(x·W + b_w) ⊙ (x·V + b_v)";
  let description = [{
      result[..., f] = act(Σ_d x[..., d]·w[d, f] + w_bias[f])
                       · (Σ_d x[..., d]·v[d, f] + v_bias[f])
    x [..., D], w and v [D, F], result [..., F]; the biases [F] are
    optional (each absent one is 0: RecurrentGemma's MLP has both, LLaMA's
    none). act is `activation`:
    sigmoid (GLU), identity (bilinear), relu (ReGLU), gelu (GEGLU, erf),
    gelu_tanh (GEGLU, tanh approximation), silu (SwiGLU). The feed-forward
    layer's down projection reads the result. f32/f16/bf16, accumulation in f32.
    Source: Shazeer 2020, "GLU Variants Improve Transformer", equations 5-6;
    Dauphin et al. 2017 (GLU, bilinear).
  }];
  let arguments = (ins Gated_FloatTensor:$x, Gated_FloatTensor:$w,
                       Gated_FloatTensor:$v,
                       Optional<Gated_FloatTensor>:$w_bias,
                       Optional<Gated_FloatTensor>:$v_bias,
                       Gated_GluActivation:$activation);
  let results = (outs Gated_FloatTensor:$result);
  let assemblyFormat = [{
    $activation $x `,` $w `,` $v
    (`w_bias` `(` $w_bias^ `:` type($w_bias) `)`)?
    (`v_bias` `(` $v_bias^ `:` type($v_bias) `)`)?
    attr-dict `:` type($x) `,` type($w) `,` type($v) `->` type($result)
  }];
}

def Gated_ExpertGluOp : Gated_Op<"expert_glu", [AttrSizedOperandSegments]> {
  let summary = "the GLU of routed experts: each row with its expert's weights";
  let description = [{
      a[r, f] = Σ_d x[r, d]·w[e_r, f, d] (+ w_bias[e_r, f])
      b[r, f] = Σ_d x[r, d]·v[e_r, f, d] (+ v_bias[e_r, f])
      with limit L:  a = clamp(a, -FLT_MAX, L),  b = clamp(b, -L, L)
                     (a's lower bound: ONNX Clip's default min, lowest())
      result[r, f] = act(a) · (b + up_offset)
      e_r = expert[r]            (expert [R]: one expert per row)
      e_r = expert               (expert a scalar: one expert for all rows)
      e_r < 0 counts from the back (e_r + E), as ONNX Gather/GatherND
    The feed-forward GLU of a mixture-of-experts layer's routed experts, as
    the exporters write transformers' experts: the eager loop over the
    experts hit (one expert, the rows routed to it) and batched_mm (every
    (token, k) row with its expert's weights gathered by the router's
    index). x [R, D]; w and v [E, F, D], the E experts' gate and up
    projections in nn.Linear's [out, in] layout; the biases [E, F];
    result [R, F], read by the experts' down projection. act as
    gated.glu's (silu: SwiGLU); with silu, `alpha` scales the sigmoid's
    argument: act(a) = a·σ(alpha·a). GPT-OSS's experts are silu with
    alpha = 1.702, limit = 7 and up_offset = 1; everything else has
    alpha = 1, no limit and up_offset = 0 (then this is gated.glu per
    expert). The weights are read in place through the index: no gathered
    copy of an expert's matrix per row. An expert index outside [-E, E) is
    the run's error (naming the node that read it), never a read out of
    bounds. f32/f16/bf16, accumulation in f32; NaN passes the clamps.
    Source: Shazeer et al. 2017 (experts); Shazeer 2020 (GLU variants);
    transformers' Qwen3-MoE / Qwen3-Next / GPT-OSS experts.
  }];
  let arguments = (ins Gated_FloatTensor:$x, Gated_FloatTensor:$w,
                       Gated_FloatTensor:$v, TensorOf<[I64]>:$expert,
                       Optional<Gated_FloatTensor>:$w_bias,
                       Optional<Gated_FloatTensor>:$v_bias,
                       Gated_GluActivation:$activation,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       OptionalAttr<F32Attr>:$limit,
                       DefaultValuedAttr<F32Attr, "0.0">:$up_offset);
  let results = (outs Gated_FloatTensor:$result);
  let assemblyFormat = [{
    $activation $x `,` $w `,` $v `,` $expert
    (`bias` `(` $w_bias^ `,` $v_bias `:` type($w_bias) `,` type($v_bias) `)`)?
    attr-dict `:` type($x) `,` type($w) `,` type($v) `,` type($expert) `->`
    type($result)
  }];
}

def Gated_RouterOp : Gated_Op<"router"> {
  let summary = "mixture-of-experts router: a top-k gate over experts";
  let description = [{
    Per token (each row of the logits over the E experts, the last
    dimension), the k experts that the token is sent to and the weights of
    their outputs:

      softmax_then_topk:  p = softmax(logits)           (over all E)
                          indices = the k largest p, largest first
                          weights[j] = p[indices[j]]
                          renormalise: weights[j] /= Σ_j' weights[j']
      topk_then_softmax:  indices = the k largest logits, largest first
                          weights = softmax(logits[indices])   (over the k)

    The two orders select the same experts (softmax is strictly increasing):
    the selection compares the logits, equal ones ordered by the lower
    expert index first, as ONNX TopK-24 (largest = 1, sorted = 1) does;
    a NaN logit counts as the largest (as torch.topk), and its row's
    weights are NaN. Every softmax is in f32 with the row's maximum
    subtracted. Renormalised softmax_then_topk and topk_then_softmax are
    the same function (exp(l_i − m) / Σ over the selected exp(l_j − m));
    `renormalise` with topk_then_softmax is rejected, its weights already
    sum to 1.

    Shapes: logits [..., E] (the router projection's x·W_r (+ b): one row
    per token, [N, E] as the exporters flatten it), weights and indices
    [..., k], 1 ≤ k ≤ E (k a static attribute; a dynamic E is checked
    against k at run time). Element types: logits f32/f16/bf16; weights
    f32 or the logits' type (computed in f32 either way, then truncated);
    indices i64, in [0, E). The MoE layer gathers the experts by `indices`
    and scales their outputs by `weights`.

    Source: Shazeer et al. 2017, "Outrageously Large Neural Networks: The
    Sparsely-Gated Mixture-of-Experts Layer", section 2.1 (noisy top-k
    gating: KeepTopK, then softmax); Fedus et al. 2021, "Switch
    Transformers", section 2.1 (softmax, then top-1); Jiang et al. 2024,
    "Mixtral of Experts", section 2.1; transformers' Qwen3-MoE router
    (softmax, top-k, norm_topk_prob) and GPT-OSS router (top-k, softmax);
    ONNX TopK-24 for the order of ties.
  }];
  let arguments = (ins Gated_FloatTensor:$logits, I64Attr:$k,
                       Gated_RouterOrder:$order,
                       Gated_RouterNormalisation:$normalisation);
  let results = (outs Gated_FloatTensor:$weights, TensorOf<[I64]>:$indices);
  let assemblyFormat = [{
    $order $normalisation $logits `,` `k` `=` $k attr-dict `:` type($logits)
    `->` type($weights) `,` type($indices)
  }];
}

def Gated_ResidualOp : Gated_Op<"residual", [AllTypesMatch<["x", "result"]>]> {
  let summary = "a (gated) residual combine of stream x and branch y";
  let description = [{
    x is the residual stream, y the sublayer's output (for sigtanh and gru:
    the candidate's pre-tanh value), g the gate operand:
      add:         x + y
      input:       σ(g) ⊙ x + y                      GTrXL input gate
      output:      x + σ(g) ⊙ y      (g = W_g x − b_g) GTrXL output gate
      highway:     σ(g) ⊙ x + (1 − σ(g)) ⊙ y         (g = W_g x + b_g)
      sigtanh:     x + σ(g) ⊙ tanh(y)                 (g = W_g y − b)
      gru:         (1 − σ(g)) ⊙ x + σ(g) ⊙ tanh(y)    (g = z logits)
      tanh_scalar: x + tanh(g) ⊙ y     (g = α, one scalar)   Flamingo
      rezero:      x + g ⊙ y           (g = α, one scalar)   ReZero
      layerscale:  x + g ⊙ y           (g = γ, a [D] vector) LayerScale
    x, y and the result have the same shape; g broadcasts to x (a scalar or
    [1] for tanh_scalar/rezero, [D] for layerscale). `add` has no gate.
    f32/f16/bf16, computed in f32.
    Source: Parisotto et al. 2019 (GTrXL), section 3.2 and Appendix;
    Srivastava et al. 2015 (highway); Alayrac et al. 2022 (Flamingo,
    eq. 1); Bachlechner et al. 2020 (ReZero); Touvron et al. 2021 (CaiT).
  }];
  let arguments = (ins Gated_FloatTensor:$x, Gated_FloatTensor:$y,
                       Optional<Gated_FloatTensor>:$gate,
                       Gated_ResidualKind:$kind);
  let results = (outs Gated_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $x `,` $y (`gate` `(` $gate^ `:` type($gate) `)`)? attr-dict `:` type($x) `,` type($y)
  }];
}

def Gated_RMSNormOp : Gated_Op<"rms_norm", [AllTypesMatch<["x", "result"]>]> {
  let summary = "RMSNorm over the last dimension, optionally gated";
  let description = [{
      result = x / sqrt(mean_last(x²) + epsilon) ⊙ w        (or ⊙ (1 + w)
                                                             with unit_offset)
    x [..., D], weight [D]; epsilon is read from the graph. Computed in f32.

    With a gate (the gated RMSNorm of Gated DeltaNet and Qwen3-Next,
    FLA's FusedRMSNormGated; an output gate on the normalised row):

      result = x / sqrt(mean_last(x²) + epsilon) ⊙ w ⊙ act(gate)

    gate has x's type (elementwise) and holds the logits; where a dynamic
    size is 1 in one of x and gate and N in the other at run time, they
    broadcast (ONNX rules, as the Mul they were raised from) and so does
    the result. act is
    `gate_activation` (sigmoid, ns_sigmoid, silu). With `gate_first` the
    gate is applied before the norm instead (Mamba2's MambaRMSNormGated,
    FLA's norm_before_gate = False):

      result = x ⊙ act(gate) / sqrt(mean_last((x ⊙ act(gate))²) + epsilon) ⊙ w
    Source: Zhang & Sennrich 2019, "Root Mean Square Layer Normalization";
    ONNX RMSNormalization-23; the (1 + w) form of Gemma / Qwen3-Next; Yang
    et al. 2025, "Gated Delta Networks" (output gate, section 3.3).
  }];
  let arguments = (ins Gated_FloatTensor:$x, Gated_FloatTensor:$weight,
                       Optional<Gated_FloatTensor>:$gate,
                       F32Attr:$epsilon, UnitAttr:$unit_offset,
                       OptionalAttr<Gated_GateActivation>:$gate_activation,
                       UnitAttr:$gate_first);
  let results = (outs Gated_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $weight (`gate` `(` $gate^ `:` type($gate) `,` $gate_activation `)`)?
    attr-dict `:` type($x) `,` type($weight)
  }];
}

def Gated_LayerNormOp : Gated_Op<"layer_norm", [AllTypesMatch<["x", "result"]>]> {
  let summary = "LayerNorm over the last dimension";
  let description = [{
      result = (x − mean) / sqrt(var + epsilon) ⊙ weight + bias
    over the last dimension (biased variance). x [..., D], weight and bias
    [D] (bias optional). epsilon is read from the graph. Computed in f32.
    Source: Ba et al. 2016, "Layer Normalization"; ONNX
    LayerNormalization-17 with axis = -1.
  }];
  let arguments = (ins Gated_FloatTensor:$x, Gated_FloatTensor:$weight,
                       Optional<Gated_FloatTensor>:$bias, F32Attr:$epsilon);
  let results = (outs Gated_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $weight (`,` $bias^ `:` type($bias))? attr-dict `:` type($x) `,` type($weight)
  }];
}

def Gated_ShortConvOp : Gated_Op<"short_conv",
    [AllTypesMatch<["x", "b", "c", "result"]>]> {
  let summary = "gated short convolution: c ⊙ causal_conv(b ⊙ x) (LFM2)";
  let description = [{
    A causal depthwise convolution of K taps between two multiplicative
    gates, the input gate b before it and the output gate c after it:

      result[n, ch, t] = c[n, ch, t] · (bias[ch] +
                           Σ_{k=0}^{K−1} weight[ch, 0, k] · b[n, ch, s] · x[n, ch, s])
                         with s = t − (K − 1) + k; terms with s < 0 are 0

    x, b, c and result [N, C, T] (channels first, as ONNX Conv reads
    them); weight [C, 1, K] (ONNX Conv's depthwise weight, group = C);
    bias [C], optional. The causal conv is ONNX Conv with pads K − 1 and
    the first T outputs kept. f32/f16/bf16, computed in f32.
    Source: Liquid AI 2025, LFM2 (Lfm2ShortConv: B, C, x = in_proj(h),
    y = C ⊙ conv(B ⊙ x)); Poli et al. 2023, "Hyena Hierarchy" (short
    convolutions with multiplicative gating).
  }];
  let arguments = (ins Gated_FloatTensor:$x, Gated_FloatTensor:$b,
                       Gated_FloatTensor:$c, Gated_FloatTensor:$weight,
                       Optional<Gated_FloatTensor>:$bias);
  let results = (outs Gated_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $b `,` $c `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)?
    attr-dict `:` type($x) `,` type($weight)
  }];
}

def Gated_LinearAttentionOp : Gated_Op<"linear_attention",
    [AttrSizedOperandSegments, DeclareOpInterfaceMethods<DimSourceOpInterface>]> {
  let summary = "decay-gated linear attention (GLA, Mamba2/RetNet decay, "
                "DeltaNet, Gated DeltaNet) in recurrent semantics";
  let description = [{
    For every batch b and key/value head h, a state S [Dk, Dv] (zero, or
    `initial_state[b, h]`) runs over the tokens t = 0 … T−1:

      a_t = exp(g_t)          (g = `decay`, the log-decay; [Dk] per key
                               channel, or one scalar broadcast over Dk)
      linear:      S = S + k_t v_tᵀ
      gated:       S = diag(a_t) S + k_t v_tᵀ
      delta:       u_t = β_t (v_t − Sᵀ k_t);         S = S + k_t u_tᵀ
      gated_delta: S' = diag(a_t) S; u_t = β_t (v_t − S'ᵀ k_t); S = S' + k_t u_tᵀ
      output[b, hq, t] = scale · Sᵀ q_t[hq]   for each query head hq of the
                         group of h (hq / (Hq/Hkv) = h, GQA)

    and `final_state[b, h]` is S after the last token.

    Shapes: query [B, Hq, T, Dk], key [B, Hkv, T, Dk], value [B, Hkv, T, Dv],
    Hq a multiple of Hkv; decay [B, Hkv, T, Dk] (per key channel, GLA,
    KDA) or [B, Hkv, T, 1] (scalar per head, Mamba2, RetNet, Gated
    DeltaNet), present exactly for gated and gated_delta; beta
    [B, Hkv, T, 1] or [B, 1, T, 1] (broadcast over heads), present exactly
    for delta and gated_delta; initial_state and final_state
    [B, Hkv, Dk, Dv]. output [B, Hq, T, Dv]. `bshd` names the operands and
    results held in [B, T, H, D] order instead (the middle two dims
    swapped): either none or all of query, key, value, decay and beta, and
    optionally output; the lowering reads and writes them in place
    (--absorb-head-layout sets it). query, key, value, decay, beta
    and output share one element type (f32/f16/bf16); the states share
    theirs (the query's when there is no initial state). All arithmetic is
    in f32.

    `form` selects the algorithm, not the result: recurrent (token by
    token) or chunked (chunks of `chunk_size` tokens: inclusive cumulative
    sums G of the log-decays in f32 per chunk, intra-chunk products with
    exp(G_i − G_j) for i ≥ j only, the delta rule as the forward
    substitution of the UT system (I + strict_tril(diag(β)(K Kᵀ ⊙ Γ))) U =
    diag(β)(V − (K ⊙ exp(G)) S), and the state passed between chunks).
    With non-positive log-decays every exponent formed is ≤ 0. The ONNX op
    allows any real decay; a positive one (growth) is computed as written
    (see --chunk-linear-attention for the compile-time check).

    Epilogue (the gated RMSNorm of Gated DeltaNet / Qwen3-Next, moved
    into the op by --fuse-linear-attention-epilogue): with `norm_weight` w
    [Dv], each output row o = output[b, hq, t, :] is written as

      o / sqrt(mean(o²) + norm_epsilon) ⊙ w  (⊙ (1 + w) with
                                              norm_unit_offset)
      ⊙ act(z)          with `norm_gate` (act: `norm_gate_activation`)

    where z is the output row's row of `norm_gate`: a tensor of the
    output's elements with last dim Dv ([B·Hq·T, Dv], or the output's own
    shape), its rows in the order of the output's rows as the output is
    laid out (so [B, T, Hq] order when `bshd` names the output). The norm
    is over the head dim only, so each task applies it to the rows it has
    just computed, before they are stored.

    Source: ONNX LinearAttention-27 (onnx 1.22, operator specification and
    reference implementation); Yang et al. 2024, "Gated Linear Attention
    Transformers with Hardware-Efficient Training" (chunkwise form,
    section 4); Dao & Gu 2024, Mamba2 / SSD (scalar decay); Yang et al.
    2024/2025, "Parallelizing Linear Transformers with the Delta Rule over
    Sequence Length" (UT transform) and "Gated Delta Networks".
  }];
  let arguments = (ins
    Gated_FloatTensor:$query,
    Gated_FloatTensor:$key,
    Gated_FloatTensor:$value,
    Optional<Gated_FloatTensor>:$decay,
    Optional<Gated_FloatTensor>:$beta,
    Optional<Gated_FloatTensor>:$initial_state,
    Gated_LinearAttentionRule:$update_rule,
    Gated_LinearAttentionForm:$form,
    F32Attr:$scale,
    DefaultValuedAttr<I64Attr, "64">:$chunk_size,
    OptionalAttr<StrArrayAttr>:$bshd,
    Optional<Gated_FloatTensor>:$norm_weight,
    Optional<Gated_FloatTensor>:$norm_gate,
    OptionalAttr<F32Attr>:$norm_epsilon,
    UnitAttr:$norm_unit_offset,
    OptionalAttr<Gated_GateActivation>:$norm_gate_activation);
  let results = (outs Gated_FloatTensor:$output,
                      Gated_FloatTensor:$final_state);
  let extraClassDeclaration = [{
    /// The operand or result `name` is in [B, T, H, D] order (see `bshd`).
    bool isBshd(::llvm::StringRef name);
    ::mlir::LogicalResult verifyNormEpilogue();
  }];
  let assemblyFormat = [{
    $update_rule $form $query `,` $key `,` $value
    (`decay` `(` $decay^ `:` type($decay) `)`)?
    (`beta` `(` $beta^ `:` type($beta) `)`)?
    (`state` `(` $initial_state^ `:` type($initial_state) `)`)?
    (`norm` `(` $norm_weight^ `:` type($norm_weight) `)`)?
    (`norm_gate` `(` $norm_gate^ `:` type($norm_gate) `,`
       $norm_gate_activation `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `->`
    type($output) `,` type($final_state)
  }];
}

#endif
