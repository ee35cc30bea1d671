// RUN: gatec-opt %s | gatec-opt | FileCheck %s
// Round trip of onnx ops in their printed forms.

// CHECK-LABEL: func.func @attention_block
func.func @attention_block(%x: tensor<2x8x32xf32>, %w: tensor<32x32xf32>) -> tensor<2x8x32xf32> {
  // CHECK: onnx.Constant dense<[2, 8, 4, 8]> : tensor<4xi64>
  %shape = onnx.Constant dense<[2, 8, 4, 8]> : tensor<4xi64>
  // CHECK: %[[NONE:.*]] = onnx.NoValue
  %none = onnx.NoValue
  %q = "onnx.MatMul"(%x, %w) : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %r = "onnx.Reshape"(%q, %shape) : (tensor<2x8x32xf32>, tensor<4xi64>) -> tensor<2x8x4x8xf32>
  %t = "onnx.Transpose"(%r) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x8xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: "onnx.Softmax"(%{{.*}}) <{axis = -1 : i64}>
  %s = "onnx.Softmax"(%t) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: "onnx.Gemm"(%{{.*}}, %{{.*}}, %[[NONE]])
  %g = "onnx.Gemm"(%w, %w, %none) : (tensor<32x32xf32>, tensor<32x32xf32>, none) -> tensor<32x32xf32>
  %y = "onnx.MatMul"(%x, %g) : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// Result types may be less precise than what the operands give.
// CHECK-LABEL: func.func @dynamic
func.func @dynamic(%x: tensor<?x?x16xf32>, %w: tensor<16x4xf32>) -> tensor<*xf32> {
  // CHECK: "onnx.MatMul"(%arg0, %arg1) : (tensor<?x?x16xf32>, tensor<16x4xf32>) -> tensor<*xf32>
  %y = "onnx.MatMul"(%x, %w) : (tensor<?x?x16xf32>, tensor<16x4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// A Scan body is a region ending in onnx.Yield.
// CHECK-LABEL: func.func @scan_cumsum
func.func @scan_cumsum(%init: tensor<4xf32>, %xs: tensor<6x4xf32>) -> (tensor<4xf32>, tensor<6x4xf32>) {
  // CHECK: "onnx.Scan"
  // CHECK: onnx.Yield
  %final, %ys = "onnx.Scan"(%init, %xs) ({
  ^bb0(%s: tensor<4xf32>, %x: tensor<4xf32>):
    %n = "onnx.Add"(%s, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    onnx.Yield %n, %n : tensor<4xf32>, tensor<4xf32>
  }) {num_scan_inputs = 1 : i64} : (tensor<4xf32>, tensor<6x4xf32>) -> (tensor<4xf32>, tensor<6x4xf32>)
  return %final, %ys : tensor<4xf32>, tensor<6x4xf32>
}
