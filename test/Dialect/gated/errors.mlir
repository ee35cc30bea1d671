// RUN: gatec-opt %s -split-input-file -verify-diagnostics

func.func @gqa(%q: tensor<1x3x8x16xf32>, %k: tensor<1x2x8x16xf32>) -> tensor<1x3x8x16xf32> {
  // expected-error @+1 {{'gated.attention' op query heads (3) must be a multiple of key/value heads (2)}}
  %a = gated.attention %q, %k, %k {scale = 0.25 : f32} : tensor<1x3x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x3x8x16xf32>
  return %a : tensor<1x3x8x16xf32>
}

// -----

func.func @headwise(%q: tensor<1x4x8x16xf32>, %g: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'gated.attention' op headwise gate must be [1, 4, 8, 1], got 'tensor<1x4x8x16xf32>'}}
  %a = gated.attention %q, %q, %q gate(%g : tensor<1x4x8x16xf32>, sigmoid, headwise, multiply) {scale = 0.25 : f32} : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @mask(%q: tensor<1x4x8x16xf32>, %m: tensor<8x9xi1>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'gated.attention' op mask does not broadcast to the scores [1, 4, 8, 8]}}
  %a = gated.attention %q, %q, %q mask(%m : tensor<8x9xi1>) {scale = 0.25 : f32} : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @glu(%x: tensor<2x32xf32>, %w: tensor<16x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'gated.glu' op x's last dimension must be w's first (16)}}
  %f = gated.glu silu %x, %w, %w : tensor<2x32xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<2x64xf32>
  return %f : tensor<2x64xf32>
}

// -----

func.func @rezero(%x: tensor<2x32xf32>, %a: tensor<32xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'gated.residual' op 'rezero' gate must be one scalar, got 'tensor<32xf32>'}}
  %r = gated.residual rezero %x, %x gate(%a : tensor<32xf32>) : tensor<2x32xf32>, tensor<2x32xf32>
  return %r : tensor<2x32xf32>
}

// -----

func.func @residual_gate(%x: tensor<2x32xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'gated.residual' op 'highway' needs a gate operand}}
  %r = gated.residual highway %x, %x : tensor<2x32xf32>, tensor<2x32xf32>
  return %r : tensor<2x32xf32>
}

// -----

func.func @norm(%x: tensor<2x32xf32>, %w: tensor<16xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'gated.rms_norm' op weight and bias must be [D] with D = x's last dimension, got 'tensor<16xf32>'}}
  %r = gated.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : tensor<2x32xf32>, tensor<16xf32>
  return %r : tensor<2x32xf32>
}

// -----

func.func @bshd_unknown(%q: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{'gated.attention' op bshd names 'mask', which is not a sequence operand or result of this op (one in [B, H, T, D] order that is present)}}
  %r = gated.attention %q, %q, %q {bshd = ["query", "key", "value", "mask"], scale = 0.25 : f32} : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32> -> tensor<2x8x4x16xf32>
  return %r : tensor<2x8x4x16xf32>
}

// -----

func.func @bshd_twice(%q: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{'gated.attention' op bshd names 'key' twice}}
  %r = gated.attention %q, %q, %q {bshd = ["query", "key", "key", "value", "result"], scale = 0.25 : f32} : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32> -> tensor<2x8x4x16xf32>
  return %r : tensor<2x8x4x16xf32>
}

// -----

// The dims of a `bshd` operand are read with H and T swapped: a [B, T, H, D]
// key of 8 tokens and 4 heads against a [B, H, S, D] value of 4 heads and
// 8 tokens is consistent only when the key is named.
func.func @bshd_dims(%q: tensor<2x4x8x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'gated.attention' op key and value differ in heads or sequence}}
  %r = gated.attention %q, %k, %v {scale = 0.25 : f32} : tensor<2x4x8x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}

// -----

func.func @bshd_absent_gate(%q: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{'gated.attention' op bshd names 'gate', which is not a sequence operand or result of this op (one in [B, H, T, D] order that is present)}}
  %r = gated.attention %q, %q, %q {bshd = ["query", "key", "value", "gate", "result"], scale = 0.25 : f32} : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32> -> tensor<2x8x4x16xf32>
  return %r : tensor<2x8x4x16xf32>
}

// -----

// A `bshd` result is expected in its own order: [B, T, H, Dv].
func.func @bshd_result_order(%q: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'gated.attention' op result must be [2, 8, 4, 16]}}
  %r = gated.attention %q, %q, %q {bshd = ["result"], scale = 0.25 : f32} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}

// -----

func.func @router_k(%l: tensor<?x4xf32>) -> (tensor<?x5xf32>, tensor<?x5xi64>) {
  // expected-error @+1 {{'gated.router' op k = 5 exceeds the 4 experts of the logits}}
  %w, %i = gated.router softmax_then_topk none %l, k = 5 : tensor<?x4xf32> -> tensor<?x5xf32>, tensor<?x5xi64>
  return %w, %i : tensor<?x5xf32>, tensor<?x5xi64>
}

// -----

func.func @router_k_zero(%l: tensor<?x4xf32>) -> (tensor<?x0xf32>, tensor<?x0xi64>) {
  // expected-error @+1 {{'gated.router' op k must be at least 1, got 0}}
  %w, %i = gated.router softmax_then_topk none %l, k = 0 : tensor<?x4xf32> -> tensor<?x0xf32>, tensor<?x0xi64>
  return %w, %i : tensor<?x0xf32>, tensor<?x0xi64>
}

// -----

func.func @router_rank(%l: tensor<3x4xf32>) -> (tensor<2xf32>, tensor<3x2xi64>) {
  // expected-error @+1 {{'gated.router' op weights must be [3, 2] (the logits' shape with k last), got 'tensor<2xf32>'}}
  %w, %i = gated.router softmax_then_topk none %l, k = 2 : tensor<3x4xf32> -> tensor<2xf32>, tensor<3x2xi64>
  return %w, %i : tensor<2xf32>, tensor<3x2xi64>
}

// -----

func.func @router_rows(%l: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<5x2xi64>) {
  // expected-error @+1 {{'gated.router' op indices must be [3, 2] (the logits' shape with k last), got 'tensor<5x2xi64>'}}
  %w, %i = gated.router topk_then_softmax none %l, k = 2 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<5x2xi64>
  return %w, %i : tensor<3x2xf32>, tensor<5x2xi64>
}

// -----

func.func @router_type(%l: tensor<3x4xf16>) -> (tensor<3x2xbf16>, tensor<3x2xi64>) {
  // expected-error @+1 {{'gated.router' op weights must be f32 or the logits' element type 'f16', got 'bf16'}}
  %w, %i = gated.router softmax_then_topk none %l, k = 2 : tensor<3x4xf16> -> tensor<3x2xbf16>, tensor<3x2xi64>
  return %w, %i : tensor<3x2xbf16>, tensor<3x2xi64>
}

// -----

func.func @router_indices(%l: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi32>) {
  // expected-error @+1 {{'gated.router' op result #1 must be tensor of 64-bit signless integer values}}
  %w, %i = gated.router softmax_then_topk none %l, k = 2 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xi32>
  return %w, %i : tensor<3x2xf32>, tensor<3x2xi32>
}

// -----

func.func @router_scalar(%l: tensor<f32>) -> (tensor<f32>, tensor<i64>) {
  // expected-error @+1 {{'gated.router' op logits must be [..., E] (rank 1 or more), got 'tensor<f32>'}}
  %w, %i = gated.router softmax_then_topk none %l, k = 1 : tensor<f32> -> tensor<f32>, tensor<i64>
  return %w, %i : tensor<f32>, tensor<i64>
}

// -----

func.func @router_renormalise(%l: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  // expected-error @+1 {{'gated.router' op renormalise after topk_then_softmax: its weights already sum to 1 (use none)}}
  %w, %i = gated.router topk_then_softmax renormalise %l, k = 2 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
  return %w, %i : tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

func.func @negative_window(%q: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'gated.attention' op left_window must be >= 0 (got -1)}}
  %r = gated.attention %q, %q, %q {causal, left_window = -1 : i64, scale = 0.25 : f32} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}

// -----

func.func @expert_glu_width(%x: tensor<5x16xf32>, %w: tensor<4x12x8xf32>, %e: tensor<5xi64>) -> tensor<5x12xf32> {
  // expected-error @+1 {{'gated.expert_glu' op x's last dimension must be w's last (8)}}
  %y = gated.expert_glu silu %x, %w, %w, %e : tensor<5x16xf32>, tensor<4x12x8xf32>, tensor<4x12x8xf32>, tensor<5xi64> -> tensor<5x12xf32>
  return %y : tensor<5x12xf32>
}

// -----

func.func @expert_glu_rows(%x: tensor<5x8xf32>, %w: tensor<4x12x8xf32>, %e: tensor<3xi64>) -> tensor<5x12xf32> {
  // expected-error @+1 {{'gated.expert_glu' op expert must be a scalar or one index per row of x}}
  %y = gated.expert_glu silu %x, %w, %w, %e : tensor<5x8xf32>, tensor<4x12x8xf32>, tensor<4x12x8xf32>, tensor<3xi64> -> tensor<5x12xf32>
  return %y : tensor<5x12xf32>
}

// -----

func.func @expert_glu_result(%x: tensor<5x8xf32>, %w: tensor<4x12x8xf32>, %e: tensor<i64>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'gated.expert_glu' op result must be [R, F] = [5, 12]}}
  %y = gated.expert_glu silu %x, %w, %w, %e : tensor<5x8xf32>, tensor<4x12x8xf32>, tensor<4x12x8xf32>, tensor<i64> -> tensor<5x8xf32>
  return %y : tensor<5x8xf32>
}

// -----

func.func @expert_glu_one_bias(%x: tensor<5x8xf32>, %w: tensor<4x12x8xf32>, %e: tensor<i64>, %b: tensor<4x12xf32>) -> tensor<5x12xf32> {
  // expected-error @+1 {{'gated.expert_glu' op biases must be [E, F] = [4, 12]}}
  %y = gated.expert_glu silu %x, %w, %w, %e bias(%b, %w : tensor<4x12xf32>, tensor<4x12x8xf32>) : tensor<5x8xf32>, tensor<4x12x8xf32>, tensor<4x12x8xf32>, tensor<i64> -> tensor<5x12xf32>
  return %y : tensor<5x12xf32>
}

// -----

func.func @expert_glu_alpha(%x: tensor<5x8xf32>, %w: tensor<4x12x8xf32>, %e: tensor<i64>) -> tensor<5x12xf32> {
  // expected-error @+1 {{'gated.expert_glu' op alpha scales only silu's sigmoid}}
  %y = gated.expert_glu gelu %x, %w, %w, %e {alpha = 2.0 : f32} : tensor<5x8xf32>, tensor<4x12x8xf32>, tensor<4x12x8xf32>, tensor<i64> -> tensor<5x12xf32>
  return %y : tensor<5x12xf32>
}

// -----

func.func @gated_norm_shape(%x: tensor<2x32xf32>, %w: tensor<32xf32>, %z: tensor<1x32xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'gated.rms_norm' op gate must have x's shape 'tensor<2x32xf32>', got 'tensor<1x32xf32>'}}
  %r = gated.rms_norm %x, %w gate(%z : tensor<1x32xf32>, silu) {epsilon = 1.0e-6 : f32} : tensor<2x32xf32>, tensor<32xf32>
  return %r : tensor<2x32xf32>
}

// -----

func.func @short_conv_weight(%x: tensor<2x4x8xf32>, %w: tensor<4x2x3xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'gated.short_conv' op weight must be [C, 1, K] with C = 4 and a static K >= 1, got 'tensor<4x2x3xf32>'}}
  %r = gated.short_conv %x, %x, %x, %w : tensor<2x4x8xf32>, tensor<4x2x3xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

func.func @gate_first_without_gate(%x: tensor<2x32xf32>, %w: tensor<32xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'gated.rms_norm' op gate_first needs a gate}}
  %r = gated.rms_norm %x, %w {epsilon = 1.0e-6 : f32, gate_first} : tensor<2x32xf32>, tensor<32xf32>
  return %r : tensor<2x32xf32>
}
