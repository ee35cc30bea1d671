// RUN: gatec-opt %s -split-input-file -verify-diagnostics

func.func @gqa(%q: tensor<1x3x8x16xf32>, %k: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op query heads (3) must be a multiple of key/value heads (2)}}
  %o, %s = gated.linear_attention linear recurrent %q, %k, %k {scale = 1.0 : f32} : tensor<1x3x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x3x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @needs_decay(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op update rule 'gated' needs decay operand}}
  %o, %s = gated.linear_attention gated recurrent %q, %q, %q {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @forbids_beta(%q: tensor<1x2x8x16xf32>, %b: tensor<1x2x8x1xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op update rule 'linear' takes no beta operand}}
  %o, %s = gated.linear_attention linear recurrent %q, %q, %q beta(%b : tensor<1x2x8x1xf32>) {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @decay_shape(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x4xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op decay must be [1, 2, 8, 16], got 'tensor<1x2x8x4xf32>'}}
  %o, %s = gated.linear_attention gated recurrent %q, %q, %q decay(%g : tensor<1x2x8x4xf32>) {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @beta_shape(%q: tensor<1x2x8x16xf32>, %b: tensor<1x2x8x2xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op beta must be [1, 2, 8, 1], got 'tensor<1x2x8x2xf32>'}}
  %o, %s = gated.linear_attention delta recurrent %q, %q, %q beta(%b : tensor<1x2x8x2xf32>) {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @state_shape(%q: tensor<1x2x8x16xf32>, %s0: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op initial_state must be [1, 2, 16, 16], got 'tensor<1x2x16x8xf32>'}}
  %o, %s = gated.linear_attention linear recurrent %q, %q, %q state(%s0 : tensor<1x2x16x8xf32>) {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @output_shape(%q: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x4xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op output must be [1, 2, 8, 4], got 'tensor<1x2x8x16xf32>'}}
  %o, %s = gated.linear_attention linear recurrent %q, %q, %v {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x4xf32>
  return
}

// -----

func.func @chunk(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op chunk_size must be positive, got 0}}
  %o, %s = gated.linear_attention linear chunked %q, %q, %q {chunk_size = 0 : i64, scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @dtype(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf16>) {
  // expected-error @+1 {{'gated.linear_attention' op operand element type 'f16' differs from the result's 'f32'}}
  %o, %s = gated.linear_attention linear recurrent %q, %k, %q {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @bshd_partial(%q: tensor<1x8x2x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op bshd names all of query, key, value, decay and beta, or none}}
  %o, %s = gated.linear_attention linear recurrent %q, %q, %v {bshd = ["query", "key"], scale = 1.0 : f32} : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @bshd_state(%q: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op bshd names 'final_state', which is not a sequence operand or result of this op (one in [B, H, T, D] order that is present)}}
  %o, %s = gated.linear_attention linear recurrent %q, %q, %q {bshd = ["query", "key", "value", "final_state"], scale = 1.0 : f32} : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @bshd_absent_decay(%q: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op bshd names 'decay', which is not a sequence operand or result of this op (one in [B, H, T, D] order that is present)}}
  %o, %s = gated.linear_attention linear recurrent %q, %q, %q {bshd = ["query", "key", "value", "decay"], scale = 1.0 : f32} : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @norm_weight_dv(%q: tensor<1x2x8x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op norm_weight must be [Dv], got 'tensor<8xf32>'}}
  %o, %s = gated.linear_attention linear recurrent %q, %q, %q norm(%w : tensor<8xf32>) {norm_epsilon = 1.0e-6 : f32, scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @norm_gate_without_weight(%q: tensor<1x2x8x16xf32>, %z: tensor<16x16xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op norm_gate needs norm_weight (the gate is on the normalised rows)}}
  %o, %s = gated.linear_attention linear recurrent %q, %q, %q norm_gate(%z : tensor<16x16xf32>, silu) {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @norm_gate_rows(%q: tensor<1x2x8x16xf32>, %w: tensor<16xf32>, %z: tensor<8x16xf32>) {
  // expected-error @+1 {{'gated.linear_attention' op norm_gate 'tensor<8x16xf32>' must hold as many elements as the output 'tensor<1x2x8x16xf32>'}}
  %o, %s = gated.linear_attention linear recurrent %q, %q, %q norm(%w : tensor<16xf32>) norm_gate(%z : tensor<8x16xf32>, silu) {norm_epsilon = 1.0e-6 : f32, scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}
