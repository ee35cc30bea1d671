// RUN: gatec-opt %s --raise-residual-gates -split-input-file | FileCheck %s

// GTrXL output gate x + σ(W_g x − b_g) ⊙ y, and highway s⊙x + (1−s)⊙y.
// CHECK-LABEL: func.func @gtrxl
// CHECK: %[[O:.*]] = gated.residual output %arg0, %arg1 gate(%{{.*}} : tensor<2x16xf32>)
// CHECK: gated.residual highway %[[O]], %arg1 gate(
func.func @gtrxl(%x: tensor<2x16xf32>, %y: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %w = onnx.Constant dense<0.1> : tensor<16x16xf32>
  %b = onnx.Constant dense<1.0> : tensor<16xf32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %xw = "onnx.MatMul"(%x, %w) : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %g = "onnx.Sub"(%xw, %b) : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %s = "onnx.Sigmoid"(%g) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %sy = "onnx.Mul"(%s, %y) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %o = "onnx.Add"(%x, %sy) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %ow = "onnx.MatMul"(%o, %w) : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %g2 = "onnx.Add"(%ow, %b) : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %s2 = "onnx.Sigmoid"(%g2) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %sx = "onnx.Mul"(%s2, %o) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %c = "onnx.Sub"(%one, %s2) : (tensor<f32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %cy = "onnx.Mul"(%c, %y) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %h = "onnx.Add"(%sx, %cy) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %h : tensor<2x16xf32>
}

// -----

// Flamingo tanh(α), ReZero α and LayerScale γ, each on a branch computed
// from the residual stream it is added to through a layer (x·W).
// CHECK-LABEL: func.func @scalars
// CHECK: %[[Y1:.*]] = "onnx.Tanh"
// CHECK: %[[T:.*]] = gated.residual tanh_scalar %arg0, %[[Y1]] gate(%{{.*}} : tensor<1xf32>)
// CHECK: %[[Y2:.*]] = "onnx.Tanh"
// CHECK: %[[R:.*]] = gated.residual rezero %[[T]], %[[Y2]] gate(%{{.*}} : tensor<1xf32>)
// CHECK: %[[Y3:.*]] = "onnx.Tanh"
// CHECK: gated.residual layerscale %[[R]], %[[Y3]] gate(%{{.*}} : tensor<16xf32>)
func.func @scalars(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %alpha = onnx.Constant dense<0.3> : tensor<1xf32>
  %gamma = onnx.Constant dense<0.1> : tensor<16xf32>
  %w = onnx.Constant dense<0.05> : tensor<16x16xf32>
  %t = "onnx.Tanh"(%alpha) : (tensor<1xf32>) -> tensor<1xf32>
  %p1 = "onnx.MatMul"(%x, %w) : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %y1 = "onnx.Tanh"(%p1) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %ty = "onnx.Mul"(%t, %y1) : (tensor<1xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %a = "onnx.Add"(%x, %ty) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %p2 = "onnx.MatMul"(%a, %w) : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %y2 = "onnx.Tanh"(%p2) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %ay = "onnx.Mul"(%alpha, %y2) : (tensor<1xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %b = "onnx.Add"(%a, %ay) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %p3 = "onnx.MatMul"(%b, %w) : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %y3 = "onnx.Tanh"(%p3) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %gy = "onnx.Mul"(%gamma, %y3) : (tensor<16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %c = "onnx.Add"(%b, %gy) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %c : tensor<2x16xf32>
}

// -----

// The expanded tanh-GELU's inner term x + 0.044715·x³ (RecurrentGemma's
// MLP, whose GEGLU is not raised) has a scalar times a function of x, but
// no layer between: no ReZero gate.
// CHECK-LABEL: func.func @gelu_polynomial_is_no_gate
// CHECK-NOT: gated.residual
func.func @gelu_polynomial_is_no_gate(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %c = onnx.Constant dense<0.044715> : tensor<f32>
  %three = onnx.Constant dense<3.0> : tensor<f32>
  %x3 = "onnx.Pow"(%x, %three) : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %cx3 = "onnx.Mul"(%x3, %c) : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %s = "onnx.Add"(%x, %cx3) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %s : tensor<2x16xf32>
}

// -----

// Gemma scales the embedding by √d before the first layer: e = x·√d, then
// e + F(e). The scaled term is the skip, not a gated branch: no ReZero gate.
// CHECK-LABEL: func.func @scaled_skip_is_no_gate
// CHECK-NOT: gated.residual
func.func @scaled_skip_is_no_gate(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %sqrtd = onnx.Constant dense<4.0> : tensor<f32>
  %e = "onnx.Mul"(%x, %sqrtd) : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %f = "onnx.Tanh"(%e) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %h = "onnx.Add"(%e, %f) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %h : tensor<2x16xf32>
}

// -----

// A broadcast that changes the output shape is not a residual: stays.
// CHECK-LABEL: func.func @negative
// CHECK-NOT: gated.residual
func.func @negative(%x: tensor<1x16xf32>, %y: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %alpha = onnx.Constant dense<0.3> : tensor<1xf32>
  %ay = "onnx.Mul"(%alpha, %y) : (tensor<1xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %b = "onnx.Add"(%x, %ay) : (tensor<1x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %b : tensor<2x16xf32>
}
