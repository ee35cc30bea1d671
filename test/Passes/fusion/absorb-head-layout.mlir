// RUN: gatec-opt %s --absorb-head-layout --split-input-file | FileCheck %s

// The projection layout [B, T, H, D] is transposed to [B, H, T, D] for
// every operand and back for the output projection: all five become the
// op's `bshd` layout and no head transpose is left.
// CHECK-LABEL: func.func @all
// CHECK-SAME: (%[[Q:.*]]: tensor<2x?x4x8xf32>, %[[K:.*]]: tensor<2x?x2x8xf32>, %[[V:.*]]: tensor<2x?x2x8xf32>, %[[G:.*]]: tensor<2x?x4x8xf32>)
// CHECK-NOT: onnx.Transpose
// CHECK: %[[R:.*]] = gated.attention %[[Q]], %[[K]], %[[V]] gate(%[[G]] : tensor<2x?x4x8xf32>, sigmoid, elementwise, multiply) {bshd = ["query", "key", "value", "gate", "result"], causal, scale = 3.500000e-01 : f32} : tensor<2x?x4x8xf32>, tensor<2x?x2x8xf32>, tensor<2x?x2x8xf32> -> tensor<2x?x4x8xf32>
// CHECK-NOT: onnx.Transpose
// CHECK: return %[[R]] : tensor<2x?x4x8xf32>
func.func @all(%q: tensor<2x?x4x8xf32>, %k: tensor<2x?x2x8xf32>, %v: tensor<2x?x2x8xf32>, %g: tensor<2x?x4x8xf32>) -> tensor<2x?x4x8xf32> {
  %qt = "onnx.Transpose"(%q) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x?x4x8xf32>) -> tensor<2x4x?x8xf32>
  %kt = "onnx.Transpose"(%k) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x?x2x8xf32>) -> tensor<2x2x?x8xf32>
  %vt = "onnx.Transpose"(%v) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x?x2x8xf32>) -> tensor<2x2x?x8xf32>
  %gt = "onnx.Transpose"(%g) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x?x4x8xf32>) -> tensor<2x4x?x8xf32>
  %r = gated.attention %qt, %kt, %vt gate(%gt : tensor<2x4x?x8xf32>, sigmoid, elementwise, multiply) {causal, scale = 0.35 : f32} : tensor<2x4x?x8xf32>, tensor<2x2x?x8xf32>, tensor<2x2x?x8xf32> -> tensor<2x4x?x8xf32>
  %rt = "onnx.Transpose"(%r) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x4x?x8xf32>) -> tensor<2x?x4x8xf32>
  return %rt : tensor<2x?x4x8xf32>
}

// -----

// Operands are absorbed one by one: a key/value cache that arrives in
// [B, H, S, D], a query after RoPE (computed in [B, H, T, D]). A result
// with another reader than its transpose stays [B, H, T, D], and so does
// the transpose. A transpose that another op also reads stays for it.
// CHECK-LABEL: func.func @partial
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x6x8xf32>, %[[K:.*]]: tensor<1x6x4x8xf32>, %[[V:.*]]: tensor<1x4x6x8xf32>)
// CHECK: %[[KT:.*]] = "onnx.Transpose"(%[[K]])
// CHECK: %[[R:.*]] = gated.attention %[[Q]], %[[K]], %[[V]] {bshd = ["key"], scale = 5.000000e-01 : f32} : tensor<1x4x6x8xf32>, tensor<1x6x4x8xf32>, tensor<1x4x6x8xf32> -> tensor<1x4x6x8xf32>
// CHECK: %[[RT:.*]] = "onnx.Transpose"(%[[R]])
// CHECK: "onnx.Add"(%[[R]], %[[KT]])
func.func @partial(%q: tensor<1x4x6x8xf32>, %k: tensor<1x6x4x8xf32>, %v: tensor<1x4x6x8xf32>) -> (tensor<1x6x4x8xf32>, tensor<1x4x6x8xf32>) {
  %kt = "onnx.Transpose"(%k) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x6x4x8xf32>) -> tensor<1x4x6x8xf32>
  %r = gated.attention %q, %kt, %v {scale = 0.5 : f32} : tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32> -> tensor<1x4x6x8xf32>
  %rt = "onnx.Transpose"(%r) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x4x6x8xf32>) -> tensor<1x6x4x8xf32>
  %s = "onnx.Add"(%r, %kt) : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>) -> tensor<1x4x6x8xf32>
  return %rt, %s : tensor<1x6x4x8xf32>, tensor<1x4x6x8xf32>
}

// -----

// Only the head transpose [0, 2, 1, 3] is a layout.
// CHECK-LABEL: func.func @other_perm
// CHECK: "onnx.Transpose"
// CHECK: gated.attention
// CHECK-NOT: bshd
func.func @other_perm(%q: tensor<1x4x8x6xf32>) -> tensor<1x4x6x8xf32> {
  %qt = "onnx.Transpose"(%q) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<1x4x8x6xf32>) -> tensor<1x4x6x8xf32>
  %r = gated.attention %qt, %qt, %qt {scale = 0.5 : f32} : tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32> -> tensor<1x4x6x8xf32>
  return %r : tensor<1x4x6x8xf32>
}

// -----

// Linear attention reads its sequence operands in one order: all of query,
// key, value and decay are absorbed, and the output with them.
// CHECK-LABEL: func.func @linear_all
// CHECK-NOT: onnx.Transpose
// CHECK: gated.linear_attention gated chunked %arg0, %arg1, %arg2 decay(%arg3 : tensor<1x?x2x1xf32>) {bshd = ["query", "key", "value", "decay", "output"]
// CHECK-NOT: onnx.Transpose
func.func @linear_all(%q: tensor<1x?x4x8xf32>, %k: tensor<1x?x2x8xf32>, %v: tensor<1x?x2x8xf32>, %g: tensor<1x?x2x1xf32>) -> (tensor<1x?x4x8xf32>, tensor<1x2x8x8xf32>) {
  %qt = "onnx.Transpose"(%q) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x?x4x8xf32>) -> tensor<1x4x?x8xf32>
  %kt = "onnx.Transpose"(%k) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x?x2x8xf32>) -> tensor<1x2x?x8xf32>
  %vt = "onnx.Transpose"(%v) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x?x2x8xf32>) -> tensor<1x2x?x8xf32>
  %gt = "onnx.Transpose"(%g) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x?x2x1xf32>) -> tensor<1x2x?x1xf32>
  %o, %f = gated.linear_attention gated chunked %qt, %kt, %vt decay(%gt : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x4x?x8xf32>, tensor<1x2x8x8xf32>
  %ot = "onnx.Transpose"(%o) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x4x?x8xf32>) -> tensor<1x?x4x8xf32>
  return %ot, %f : tensor<1x?x4x8xf32>, tensor<1x2x8x8xf32>
}

// -----

// A decay computed in [B, H, T, 1] keeps every input where it is (the
// operands share one order), while the output is still written in
// [B, T, H, D].
// CHECK-LABEL: func.func @linear_mixed
// CHECK-COUNT-3: "onnx.Transpose"
// CHECK: gated.linear_attention {{.*}} {bshd = ["output"]
// CHECK-NOT: onnx.Transpose
func.func @linear_mixed(%q: tensor<1x?x4x8xf32>, %k: tensor<1x?x2x8xf32>, %v: tensor<1x?x2x8xf32>, %g: tensor<1x2x?x1xf32>) -> (tensor<1x?x4x8xf32>, tensor<1x2x8x8xf32>) {
  %qt = "onnx.Transpose"(%q) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x?x4x8xf32>) -> tensor<1x4x?x8xf32>
  %kt = "onnx.Transpose"(%k) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x?x2x8xf32>) -> tensor<1x2x?x8xf32>
  %vt = "onnx.Transpose"(%v) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x?x2x8xf32>) -> tensor<1x2x?x8xf32>
  %o, %f = gated.linear_attention gated chunked %qt, %kt, %vt decay(%g : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x4x?x8xf32>, tensor<1x2x8x8xf32>
  %ot = "onnx.Transpose"(%o) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x4x?x8xf32>) -> tensor<1x?x4x8xf32>
  return %ot, %f : tensor<1x?x4x8xf32>, tensor<1x2x8x8xf32>
}
