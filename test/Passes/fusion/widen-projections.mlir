// RUN: gatec-opt %s --widen-projections | FileCheck %s

// q, k, v and a G1 gate projection of one activation: one [8, 4+2+2+4]
// GEMM over the concatenated weights, sliced per projection. The constant
// below checks the column layout: row r of the wide weight is row r of Wq,
// Wk, Wv, Wg side by side.
// CHECK-LABEL: func.func @qkv_gate
// CHECK:         %[[W:.*]] = onnx.Constant dense_resource<widened_projection_qkv_gate> : tensor<8x12xf32>
// CHECK:         %[[Y:.*]] = "onnx.MatMul"(%arg0, %[[W]]) : (tensor<2x5x8xf32>, tensor<8x12xf32>) -> tensor<2x5x12xf32>
// CHECK-COUNT-4: "onnx.Slice"(%[[Y]],
// CHECK-NOT:     "onnx.MatMul"(%arg0
// CHECK:         "onnx.MatMul"(%arg1
// CHECK:         return
func.func @qkv_gate(%x: tensor<2x5x8xf32>, %other: tensor<2x5x8xf32>)
    -> (tensor<2x5x4xf32>, tensor<2x5x2xf32>, tensor<2x5x2xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) {
  %wq = onnx.Constant dense<[[1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0]]> : tensor<8x4xf32>
  %wk = onnx.Constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0], [11.0, 12.0], [13.0, 14.0], [15.0, 16.0]]> : tensor<8x2xf32>
  %wv = onnx.Constant dense<[[0.5, 0.25], [0.5, 0.25], [0.5, 0.25], [0.5, 0.25], [0.5, 0.25], [0.5, 0.25], [0.5, 0.25], [0.5, 0.25]]> : tensor<8x2xf32>
  %wg = onnx.Constant dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0, 4.0]]> : tensor<8x4xf32>
  %q = "onnx.MatMul"(%x, %wq) : (tensor<2x5x8xf32>, tensor<8x4xf32>) -> tensor<2x5x4xf32>
  %k = "onnx.MatMul"(%x, %wk) : (tensor<2x5x8xf32>, tensor<8x2xf32>) -> tensor<2x5x2xf32>
  %v = "onnx.MatMul"(%x, %wv) : (tensor<2x5x8xf32>, tensor<8x2xf32>) -> tensor<2x5x2xf32>
  %g = "onnx.MatMul"(%x, %wg) : (tensor<2x5x8xf32>, tensor<8x4xf32>) -> tensor<2x5x4xf32>
  // Another activation: not part of the group.
  %o = "onnx.MatMul"(%other, %wg) : (tensor<2x5x8xf32>, tensor<8x4xf32>) -> tensor<2x5x4xf32>
  return %q, %k, %v, %g, %o : tensor<2x5x4xf32>, tensor<2x5x2xf32>, tensor<2x5x2xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>
}

// Projections with biases: the biases are concatenated too (zeros where a
// projection has none) and added to the wide GEMM (its epilogue).
// CHECK-LABEL: func.func @biases
// CHECK:         %[[W:.*]] = onnx.Constant dense_resource<widened_projection_biases> : tensor<8x8xf32>
// CHECK:         %[[Y:.*]] = "onnx.MatMul"(%arg0, %[[W]])
// CHECK:         %[[B:.*]] = onnx.Constant dense_resource<widened_bias> : tensor<8xf32>
// CHECK:         %[[S:.*]] = "onnx.Add"(%[[Y]], %[[B]])
// CHECK-COUNT-2: "onnx.Slice"(%[[S]],
// CHECK-NOT:     "onnx.Add"
func.func @biases(%x: tensor<3x8xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %w1 = onnx.Constant dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0, 4.0]]> : tensor<8x4xf32>
  %w2 = onnx.Constant dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0, 5.0]]> : tensor<8x4xf32>
  %b2 = onnx.Constant dense<[0.5, 1.5, 2.5, 3.5]> : tensor<4xf32>
  %a = "onnx.MatMul"(%x, %w1) : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
  %m = "onnx.MatMul"(%x, %w2) : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
  %b = "onnx.Add"(%m, %b2) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %a, %b : tensor<3x4xf32>, tensor<3x4xf32>
}

// A single projection, and a weight that is a splat: left alone.
// CHECK-LABEL: func.func @alone
// CHECK-COUNT-2: "onnx.MatMul"(%arg0
// CHECK-NOT:     onnx.Slice
func.func @alone(%x: tensor<3x8xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %w1 = onnx.Constant dense<2.0> : tensor<8x4xf32>
  %w2 = onnx.Constant dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0, 4.0]]> : tensor<8x4xf32>
  %a = "onnx.MatMul"(%x, %w1) : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
  %b = "onnx.MatMul"(%x, %w2) : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
  return %a, %b : tensor<3x4xf32>, tensor<3x4xf32>
}

// The wide weight, printed with the module: row 0 is Wq (1 1 1 2), Wk (1 2),
// Wv (0.5 0.25), Wg (1 0 0 0), little-endian f32 after the alignment word.
// CHECK: widened_projection_qkv_gate: "0x080000000000803F0000803F0000803F000000400000803F000000400000003F0000803E0000803F000000000000000000000000
// The bias of @biases: zeros for the first projection, then 0.5 1.5 2.5 3.5.
// CHECK: widened_bias: "0x08000000000000000000000000000000000000000000003F0000C03F0000204000006040"
