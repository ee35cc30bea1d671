//===- GatedDialect.td - the gated domain dialect ----------*- tablegen -*-===//
#ifndef GATEC_GATED_DIALECT_TD
#define GATEC_GATED_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Gated_Dialect : Dialect {
  let name = "gated";
  let cppNamespace = "::gatec::gated";
  let summary = "gates of gated transformers, raised from graph-level ops";
  let description = [{
    The domain dialect of gatec (phase `gated`). Each op is one gate construct
    of the seed documents, with the maths written in its description:
    softmax attention with an optional output gate (G1), gates on other
    projections (G2 value, G3 key, G4 query, G5 dense output), GLU feed-forward
    gates, gated residual combines (GTrXL variants, Flamingo tanh scalar,
    ReZero, LayerScale), the mixture-of-experts router (a gate over experts),
    and the norms these models use. Ops work on builtin
    tensors of f32, f16 or bf16 and accumulate in f32. Ops take gate
    pre-activations (logits), so a later pass can move the activation into
    the epilogue of the kernel that produces them.

    Sources: Qiu et al., "Gated Attention for Large Language Models" (NeurIPS
    2025) for G1-G5; Parisotto et al., "Stabilizing Transformers for
    Reinforcement Learning" (GTrXL, 2019); Shazeer, "GLU Variants Improve
    Transformer" (2020); Alayrac et al., Flamingo (2022); Bachlechner et al.,
    ReZero (2020); Touvron et al., CaiT/LayerScale (2021); Shazeer et al.,
    "Outrageously Large Neural Networks: The Sparsely-Gated
    Mixture-of-Experts Layer" (2017) for the router.
  }];
}

def Gated_GateActivation : I32EnumAttr<"GateActivation",
    "activation of a gate's logits", [
  I32EnumAttrCase<"sigmoid", 0>,
  I32EnumAttrCase<"ns_sigmoid", 1>,
  I32EnumAttrCase<"silu", 2>,
]> {
  let cppNamespace = "::gatec::gated";
  let description = [{
    sigmoid: σ(g) = 1/(1+e^-g); ns_sigmoid: 0.5 + 0.5·σ(g) (the
    non-sparse variant of the Gated Attention paper, gate in (0.5, 1));
    silu: g·σ(g).
  }];
}

def Gated_GateGranularity : I32EnumAttr<"GateGranularity",
    "how many gate values a head has", [
  I32EnumAttrCase<"elementwise", 0>,
  I32EnumAttrCase<"headwise", 1>,
]> {
  let cppNamespace = "::gatec::gated";
}

def Gated_GateMode : I32EnumAttr<"GateMode", "how a gate combines", [
  I32EnumAttrCase<"multiply", 0>,
  I32EnumAttrCase<"add", 1>,
]> {
  let cppNamespace = "::gatec::gated";
}

def Gated_GatePlacement : I32EnumAttr<"GatePlacement",
    "which projection a gated.gate gates (Gated Attention paper, Table 1)", [
  I32EnumAttrCase<"G2", 2>,
  I32EnumAttrCase<"G3", 3>,
  I32EnumAttrCase<"G4", 4>,
  I32EnumAttrCase<"G5", 5>,
  I32EnumAttrCase<"shared_expert", 6>,
]> {
  let cppNamespace = "::gatec::gated";
  let description = [{
    G2: the value projection; G3: the key projection; G4: the query
    projection; G5: the dense output (after the output projection). G1, the
    attention output, is the gate operand of gated.attention.
    shared_expert: the output of a mixture-of-experts layer's shared expert,
    one gate value per token (Qwen2-MoE, Qwen3-Next: σ(x·w_g), w_g [d, 1]).
  }];
}

def Gated_GluActivation : I32EnumAttr<"GluActivation",
    "activation of a GLU's gate branch (Shazeer 2020)", [
  I32EnumAttrCase<"sigmoid", 0>,
  I32EnumAttrCase<"identity", 1>,
  I32EnumAttrCase<"relu", 2>,
  I32EnumAttrCase<"gelu", 3>,
  I32EnumAttrCase<"gelu_tanh", 4>,
  I32EnumAttrCase<"silu", 5>,
]> {
  let cppNamespace = "::gatec::gated";
  let description = [{
    sigmoid: GLU; identity: bilinear; relu: ReGLU; gelu: GEGLU with the erf
    GELU x·Φ(x); gelu_tanh: GEGLU with 0.5·x·(1+tanh(√(2/π)(x+0.044715x³)));
    silu: SwiGLU (Swish_1 = x·σ(x)).
  }];
}

def Gated_ResidualKind : I32EnumAttr<"ResidualKind",
    "the residual combine of gated.residual", [
  I32EnumAttrCase<"add", 0>,
  I32EnumAttrCase<"input", 1>,
  I32EnumAttrCase<"output", 2>,
  I32EnumAttrCase<"highway", 3>,
  I32EnumAttrCase<"sigtanh", 4>,
  I32EnumAttrCase<"gru", 5>,
  I32EnumAttrCase<"tanh_scalar", 6>,
  I32EnumAttrCase<"rezero", 7>,
  I32EnumAttrCase<"layerscale", 8>,
]> {
  let cppNamespace = "::gatec::gated";
}

def Gated_LinearAttentionRule : I32EnumAttr<"LinearAttentionRule",
    "state update of gated.linear_attention", [
  I32EnumAttrCase<"linear", 0>,
  I32EnumAttrCase<"gated", 1>,
  I32EnumAttrCase<"delta", 2>,
  I32EnumAttrCase<"gated_delta", 3>,
]> {
  let cppNamespace = "::gatec::gated";
  let description = [{
    linear: S_t = S_{t-1} + k_t v_tᵀ; gated: S_t = diag(exp(g_t)) S_{t-1} +
    k_t v_tᵀ (per-key-channel decay as in GLA, or one scalar per head as in
    Mamba2/RetNet, chosen by the decay operand's shape); delta: the delta
    rule S_t = S_{t-1} + β_t k_t (v_t − S_{t-1}ᵀ k_t)ᵀ; gated_delta: decay
    first, then the delta rule on the decayed state (Gated DeltaNet).
  }];
}

def Gated_LinearAttentionForm : I32EnumAttr<"LinearAttentionForm",
    "algorithm of gated.linear_attention", [
  I32EnumAttrCase<"recurrent", 0>,
  I32EnumAttrCase<"chunked", 1>,
]> {
  let cppNamespace = "::gatec::gated";
  let description = [{
    recurrent: one token after the other (the reference form); chunked: the
    chunkwise-parallel form with cumulative log-decays in f32 (set by
    --chunk-linear-attention). Both compute the same maths.
  }];
}

def Gated_RouterOrder : I32EnumAttr<"RouterOrder",
    "where gated.router's softmax is taken", [
  I32EnumAttrCase<"softmax_then_topk", 0>,
  I32EnumAttrCase<"topk_then_softmax", 1>,
]> {
  let cppNamespace = "::gatec::gated";
  let description = [{
    softmax_then_topk: the softmax over all E experts, then the k largest
    probabilities (Switch Transformer, Qwen-MoE); topk_then_softmax: the k
    largest logits, then the softmax over those k (Shazeer et al. 2017's
    KeepTopK, Mixtral, GPT-OSS).
  }];
}

def Gated_RouterNormalisation : I32EnumAttr<"RouterNormalisation",
    "whether gated.router rescales its top-k weights", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"renormalise", 1>,
]> {
  let cppNamespace = "::gatec::gated";
  let description = [{
    none: the weights as the order gives them; renormalise: the k selected
    probabilities divided by their sum, so that they sum to 1 (Qwen's
    norm_topk_prob). The weights of topk_then_softmax already sum to 1.
  }];
}

#endif
