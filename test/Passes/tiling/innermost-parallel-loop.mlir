// RUN: gatec-opt %s --innermost-parallel-loop | FileCheck %s

#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// C = A·B runs as (m, k, n): n, contiguous in B and C, is innermost.
// CHECK-LABEL: func.func @matmul
// CHECK:         linalg.generic {indexing_maps = [#[[A:.*]], #[[B:.*]], #[[C:.*]]], iterator_types = ["parallel", "reduction", "parallel"]}
func.func @matmul(%a: tensor<8x32xf32>, %b: tensor<32x16xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x32xf32>, tensor<32x16xf32>) outs(%c : tensor<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// Q·Kᵀ: both inputs are contiguous along the reduction only; unchanged.
// CHECK-LABEL: func.func @q_kt
// CHECK:         iterator_types = ["parallel", "parallel", "reduction"]
func.func @q_kt(%a: tensor<8x32xf32>, %b: tensor<16x32xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = linalg.generic {indexing_maps = [#mk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x32xf32>, tensor<16x32xf32>) outs(%c : tensor<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
