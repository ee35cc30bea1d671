// RUN: gatec-opt %s --raise-attention --raise-gates | FileCheck %s

// G2: the value projection gated by σ(x W_g + b) before the heads split;
// G5: the dense output gated after o_proj.
// CHECK-LABEL: func.func @g2_g5
// CHECK: %[[V:.*]] = gated.gate G2 sigmoid multiply
// CHECK: gated.attention
// CHECK: gated.gate G5 sigmoid multiply
// CHECK-NOT: onnx.Sigmoid
func.func @g2_g5(%x: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  %wq = onnx.Constant dense<0.1> : tensor<8x8xf32>
  %wk = onnx.Constant dense<0.2> : tensor<8x8xf32>
  %wv = onnx.Constant dense<0.3> : tensor<8x8xf32>
  %wg = onnx.Constant dense<0.4> : tensor<8x8xf32>
  %wo = onnx.Constant dense<0.5> : tensor<8x8xf32>
  %bg = onnx.Constant dense<0.6> : tensor<8xf32>
  %heads = onnx.Constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %flat = onnx.Constant dense<[1, 3, 8]> : tensor<3xi64>
  %q0 = "onnx.MatMul"(%x, %wq) : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  %k0 = "onnx.MatMul"(%x, %wk) : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  %v0 = "onnx.MatMul"(%x, %wv) : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  %g0 = "onnx.MatMul"(%x, %wg) : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  %g1 = "onnx.Add"(%bg, %g0) : (tensor<8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %gs = "onnx.Sigmoid"(%g1) : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %vg = "onnx.Mul"(%v0, %gs) : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %q1 = "onnx.Reshape"(%q0, %heads) : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %k1 = "onnx.Reshape"(%k0, %heads) : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %v1 = "onnx.Reshape"(%vg, %heads) : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %q = "onnx.Transpose"(%q1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %kt = "onnx.Transpose"(%k1) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
  %v = "onnx.Transpose"(%v1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = "onnx.Softmax"(%s) {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %yt = "onnx.Transpose"(%y) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %yf = "onnx.Reshape"(%yt, %flat) : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  %o = "onnx.MatMul"(%yf, %wo) : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  %og = "onnx.Mul"(%o, %gs) : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  return %og : tensor<1x3x8xf32>
}

// A sigmoid product that feeds no attention is not a G2-G5 gate: stays.
// CHECK-LABEL: func.func @negative
// CHECK-NOT: gated.gate
func.func @negative(%x: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  %w = onnx.Constant dense<0.1> : tensor<8x8xf32>
  %b = onnx.Constant dense<0.6> : tensor<8xf32>
  %p = "onnx.MatMul"(%x, %w) : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  %g0 = "onnx.Add"(%b, %p) : (tensor<8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %gs = "onnx.Sigmoid"(%g0) : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %y = "onnx.Mul"(%p, %gs) : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}
