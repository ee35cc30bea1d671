// RUN: gatec-opt %s --raise-linear-attention -split-input-file -verify-diagnostics | FileCheck %s

// gated_delta with a per-head decay, beta per head, GQA, past_state: the
// packed [B, T, H·D] inputs are split into heads, the output packed back,
// present_state is the final state; scale 0 becomes 1/sqrt(Dk).
// CHECK-LABEL: func.func @gated_delta
// CHECK-DAG: %[[Q:.*]] = "onnx.Transpose"({{.*}}) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x?x4x8xf32>) -> tensor<2x4x?x8xf32>
// CHECK-DAG: %[[G:.*]] = "onnx.Transpose"({{.*}}) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x?x2x1xf32>) -> tensor<2x2x?x1xf32>
// CHECK: %[[O:.*]], %[[S:.*]] = gated.linear_attention gated_delta recurrent %[[Q]], %{{.*}}, %{{.*}} decay(%[[G]] : tensor<2x2x?x1xf32>) beta(%{{.*}} : tensor<2x2x?x1xf32>) state(%arg3 : tensor<2x2x8x4xf32>) {scale = 0.353553385 : f32} : tensor<2x4x?x8xf32>, tensor<2x2x?x8xf32>, tensor<2x2x?x4xf32> -> tensor<2x4x?x4xf32>, tensor<2x2x8x4xf32>
// CHECK: %[[OT:.*]] = "onnx.Transpose"(%[[O]]) <{perm = array<i64: 0, 2, 1, 3>}>
// CHECK: %[[R:.*]] = "onnx.Reshape"(%[[OT]], %{{.*}}) {{.*}} -> tensor<2x?x16xf32>
// CHECK: return %[[R]], %[[S]]
// CHECK-NOT: onnx.LinearAttention
func.func @gated_delta(%q: tensor<2x?x32xf32>, %k: tensor<2x?x16xf32>, %v: tensor<2x?x8xf32>, %s: tensor<2x2x8x4xf32>, %g: tensor<2x?x2xf32>, %b: tensor<2x?x2xf32>) -> (tensor<2x?x16xf32>, tensor<2x2x8x4xf32>) {
  %o, %ps = "onnx.LinearAttention"(%q, %k, %v, %s, %g, %b) {q_num_heads = 4 : i64, kv_num_heads = 2 : i64, update_rule = "gated_delta"} : (tensor<2x?x32xf32>, tensor<2x?x16xf32>, tensor<2x?x8xf32>, tensor<2x2x8x4xf32>, tensor<2x?x2xf32>, tensor<2x?x2xf32>) -> (tensor<2x?x16xf32>, tensor<2x2x8x4xf32>)
  return %o, %ps : tensor<2x?x16xf32>, tensor<2x2x8x4xf32>
}

// -----

// GLA: per-key-channel decay [B, T, Hkv·Dk], no state, explicit scale.
// CHECK-LABEL: func.func @gla
// CHECK: gated.linear_attention gated recurrent %{{.*}}, %{{.*}}, %{{.*}} decay(%{{.*}} : tensor<1x2x5x8xf32>) {chunk_size = 32 : i64, scale = 5.000000e-01 : f32} : tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32> -> tensor<1x2x5x8xf32>, tensor<1x2x8x8xf32>
func.func @gla(%q: tensor<1x5x16xf32>, %g: tensor<1x5x16xf32>) -> tensor<1x5x16xf32> {
  %n = onnx.NoValue
  %o, %ps = "onnx.LinearAttention"(%q, %q, %q, %n, %g, %n) {q_num_heads = 2 : i64, kv_num_heads = 2 : i64, update_rule = "gated", scale = 0.5 : f32, chunk_size = 32 : i64} : (tensor<1x5x16xf32>, tensor<1x5x16xf32>, tensor<1x5x16xf32>, none, tensor<1x5x16xf32>, none) -> (tensor<1x5x16xf32>, tensor<1x2x8x8xf32>)
  return %o : tensor<1x5x16xf32>
}

// -----

// linear and delta with beta [B, T, 1] shared by the heads.
// CHECK-LABEL: func.func @delta
// CHECK: gated.linear_attention delta recurrent %{{.*}}, %{{.*}}, %{{.*}} beta(%{{.*}} : tensor<1x1x5x1xf32>)
func.func @delta(%q: tensor<1x5x16xf32>, %b: tensor<1x5x1xf32>) -> tensor<1x5x16xf32> {
  %n = onnx.NoValue
  %o, %ps = "onnx.LinearAttention"(%q, %q, %q, %n, %n, %b) {q_num_heads = 2 : i64, kv_num_heads = 2 : i64, update_rule = "delta"} : (tensor<1x5x16xf32>, tensor<1x5x16xf32>, tensor<1x5x16xf32>, none, none, tensor<1x5x1xf32>) -> (tensor<1x5x16xf32>, tensor<1x2x8x8xf32>)
  return %o : tensor<1x5x16xf32>
}

// -----

func.func @forbidden_decay(%q: tensor<1x5x16xf32>, %g: tensor<1x5x2xf32>) -> tensor<1x5x16xf32> {
  %n = onnx.NoValue
  // expected-error @+1 {{LinearAttention: update_rule 'linear' forbids the decay input}}
  %o, %ps = "onnx.LinearAttention"(%q, %q, %q, %n, %g, %n) {q_num_heads = 2 : i64, kv_num_heads = 2 : i64, update_rule = "linear"} : (tensor<1x5x16xf32>, tensor<1x5x16xf32>, tensor<1x5x16xf32>, none, tensor<1x5x2xf32>, none) -> (tensor<1x5x16xf32>, tensor<1x2x8x8xf32>)
  return %o : tensor<1x5x16xf32>
}

// -----

func.func @decay_width(%q: tensor<1x5x16xf32>, %g: tensor<1x5x3xf32>, %b: tensor<1x5x2xf32>) -> tensor<1x5x16xf32> {
  %n = onnx.NoValue
  // expected-error @+1 {{LinearAttention: decay must be [B, T, kv_num_heads] or [B, T, kv_num_heads*d_k] = [B, T, 16]}}
  %o, %ps = "onnx.LinearAttention"(%q, %q, %q, %n, %g, %b) {q_num_heads = 2 : i64, kv_num_heads = 2 : i64} : (tensor<1x5x16xf32>, tensor<1x5x16xf32>, tensor<1x5x16xf32>, none, tensor<1x5x3xf32>, tensor<1x5x2xf32>) -> (tensor<1x5x16xf32>, tensor<1x2x8x8xf32>)
  return %o : tensor<1x5x16xf32>
}

// -----

// The quadratic form ((scale·Q Kᵀ) ⊙ tril(exp(tril(G − Gᵀ)))) V with
// G = CumSum_T(g): one gated.linear_attention with the log-decays g.
// CHECK-LABEL: func.func @quadratic
// CHECK: %[[O:.*]], %{{.*}} = gated.linear_attention gated recurrent %arg0, %arg1, %arg2 decay(%arg3 : tensor<1x2x?x1xf32>) {scale = 2.500000e-01 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x4xf32> -> tensor<1x2x?x4xf32>, tensor<1x2x8x4xf32>
// CHECK: return %[[O]]
func.func @quadratic(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x4xf32>, %g: tensor<1x2x?x1xf32>) -> tensor<1x2x?x4xf32> {
  %scale = onnx.Constant dense<0.25> : tensor<f32>
  %axis = onnx.Constant dense<2> : tensor<i64>
  %n = onnx.NoValue
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x8xf32>) -> tensor<1x2x8x?xf32>
  %s0 = "onnx.MatMul"(%q, %kt) : (tensor<1x2x?x8xf32>, tensor<1x2x8x?xf32>) -> tensor<1x2x?x?xf32>
  %s = "onnx.Mul"(%s0, %scale) : (tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %G = "onnx.CumSum"(%g, %axis) : (tensor<1x2x?x1xf32>, tensor<i64>) -> tensor<1x2x?x1xf32>
  %Gt = "onnx.Transpose"(%G) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x1xf32>) -> tensor<1x2x1x?xf32>
  %d = "onnx.Sub"(%G, %Gt) : (tensor<1x2x?x1xf32>, tensor<1x2x1x?xf32>) -> tensor<1x2x?x?xf32>
  %dl = "onnx.Trilu"(%d, %n) {upper = 0 : i64} : (tensor<1x2x?x?xf32>, none) -> tensor<1x2x?x?xf32>
  %e = "onnx.Exp"(%dl) : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %D = "onnx.Trilu"(%e, %n) {upper = 0 : i64} : (tensor<1x2x?x?xf32>, none) -> tensor<1x2x?x?xf32>
  %a = "onnx.Mul"(%s, %D) : (tensor<1x2x?x?xf32>, tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %o = "onnx.MatMul"(%a, %v) : (tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  return %o : tensor<1x2x?x4xf32>
}

// -----

// Without the causal mask on D it is not the recurrence: left alone.
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: gated.linear_attention
func.func @not_causal(%q: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x4xf32>, %g: tensor<1x2x?x1xf32>) -> tensor<1x2x?x4xf32> {
  %axis = onnx.Constant dense<2> : tensor<i64>
  %kt = "onnx.Transpose"(%q) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x8xf32>) -> tensor<1x2x8x?xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x?x8xf32>, tensor<1x2x8x?xf32>) -> tensor<1x2x?x?xf32>
  %G = "onnx.CumSum"(%g, %axis) : (tensor<1x2x?x1xf32>, tensor<i64>) -> tensor<1x2x?x1xf32>
  %Gt = "onnx.Transpose"(%G) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x1xf32>) -> tensor<1x2x1x?xf32>
  %d = "onnx.Sub"(%G, %Gt) : (tensor<1x2x?x1xf32>, tensor<1x2x1x?xf32>) -> tensor<1x2x?x?xf32>
  %e = "onnx.Exp"(%d) : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %a = "onnx.Mul"(%s, %e) : (tensor<1x2x?x?xf32>, tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %o = "onnx.MatMul"(%a, %v) : (tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  return %o : tensor<1x2x?x4xf32>
}
