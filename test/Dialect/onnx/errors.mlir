// RUN: gatec-opt %s -split-input-file -verify-diagnostics
// The verifier of every onnx op checks its result types against the
// shapes its ONNX semantics give.

func.func @matmul_k(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'onnx.MatMul' op contraction dimensions differ: 3 vs 4}}
  %0 = "onnx.MatMul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @wrong_result(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'onnx.MatMul' op result #0 is declared 'tensor<2x6xf32>' but its operands give 'tensor<2x5xf32>'}}
  %0 = "onnx.MatMul"(%a, %b) : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'onnx.Add' op operands are not broadcastable: dimension 3 vs 4}}
  %0 = "onnx.Add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @elem_types(%a: tensor<2xf32>, %b: tensor<2xf16>) -> tensor<2xf32> {
  // expected-error @+1 {{'onnx.Add' op operands must have the same element type, got 'f32' and 'f16'}}
  %0 = "onnx.Add"(%a, %b) : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'onnx.Softmax' op axis 2 is out of range for rank 2}}
  %0 = "onnx.Softmax"(%a) {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reshape(%a: tensor<2x3xf32>) -> tensor<*xf32> {
  %s = onnx.Constant dense<[4, -1]> : tensor<2xi64>
  // expected-error @+1 {{'onnx.Reshape' op cannot reshape 6 elements with -1 in the shape}}
  %0 = "onnx.Reshape"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @transpose(%a: tensor<2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'onnx.Transpose' op perm is not a permutation}}
  %0 = "onnx.Transpose"(%a) {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @gqa_heads(%q: tensor<1x8x24xf32>, %k: tensor<1x8x16xf32>) -> tensor<*xf32> {
  %n = onnx.NoValue
  // expected-error @+1 {{'onnx.Attention' op q heads (3) must be a multiple of kv heads (2)}}
  %y, %pk, %pv, %qk = "onnx.Attention"(%q, %k, %k, %n, %n, %n, %n) {q_num_heads = 3 : i64, kv_num_heads = 2 : i64} : (tensor<1x8x24xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, none, none, none, none) -> (tensor<*xf32>, none, none, none)
  return %y : tensor<*xf32>
}

// -----

func.func @linear_attention_rule(%q: tensor<1x8x16xf32>) -> tensor<*xf32> {
  %n = onnx.NoValue
  // expected-error @+1 {{'onnx.LinearAttention' op update_rule 'gated' needs a decay input}}
  %y, %s = "onnx.LinearAttention"(%q, %q, %q, %n, %n, %n) {q_num_heads = 2 : i64, kv_num_heads = 2 : i64, update_rule = "gated"} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, none, none, none) -> (tensor<*xf32>, tensor<*xf32>)
  return %y : tensor<*xf32>
}

// -----

func.func @constant_type() -> tensor<3xi64> {
  // expected-error @+1 {{custom op 'onnx.Constant' expected an elements attribute}}
  %0 = onnx.Constant 3 : i64
  return %0 : tensor<3xi64>
}

// -----

func.func @conv_groups(%x: tensor<1x6x8xf32>, %w: tensor<6x2x3xf32>) -> tensor<*xf32> {
  %n = onnx.NoValue
  // expected-error @+1 {{'onnx.Conv' op X has 6 channels, W expects 2 per group of 6}}
  %y = "onnx.Conv"(%x, %w, %n) {group = 6 : i64} : (tensor<1x6x8xf32>, tensor<6x2x3xf32>, none) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @conv_short(%x: tensor<1x2x2xf32>, %w: tensor<3x2x4xf32>) -> tensor<*xf32> {
  %n = onnx.NoValue
  // expected-error @+1 {{'onnx.Conv' op spatial dimension 0 (2 with pads) is shorter than the kernel's span 4}}
  %y = "onnx.Conv"(%x, %w, %n) : (tensor<1x2x2xf32>, tensor<3x2x4xf32>, none) -> tensor<*xf32>
  return %y : tensor<*xf32>
}
