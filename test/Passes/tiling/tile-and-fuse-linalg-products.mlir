// RUN: gatec-opt %s --tile-and-fuse-linalg=rows=8 | FileCheck %s
// RUN: gatec-opt %s --tile-and-fuse-linalg="rows=8 fuse-products=false" | FileCheck %s --check-prefix=ONE

// An FFN: up projection, an activation, down projection, residual add.
// By default the whole chain is one loop nest over row blocks (the down
// projection's rows need the up projection's rows: both products run in
// the loop).
// CHECK-LABEL: func.func @ffn
// CHECK:         scf.forall
// CHECK-COUNT-2:   linalg.matmul
// CHECK-NOT:     scf.forall (
// CHECK:         return
// fuse-products=false: one product per loop nest. The activation reads the
// up projection (and nothing else reads that), so it stays with it: the
// down projection and the residual add in one loop, the up projection and
// the activation in another, before it.
// ONE-LABEL: func.func @ffn
// ONE:         %[[H:.*]] = scf.forall
// ONE:           linalg.matmul
// ONE:           linalg.generic
// ONE-NOT:       linalg.matmul
// ONE:         scf.forall
// ONE:           linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x64xf32>
// ONE-NOT:       linalg.matmul
// ONE:           linalg.generic
// ONE:         return
func.func @ffn(%x: tensor<64x32xf32>, %w1: tensor<32x64xf32>,
               %w2: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<64x32xf32>, tensor<32x64xf32>)
                     outs(%f1 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<64x64xf32>) outs(%e1 : tensor<64x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %v : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<64x64xf32>, tensor<64x32xf32>)
                     outs(%f2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%y, %x : tensor<64x32xf32>, tensor<64x32xf32>) outs(%e2 : tensor<64x32xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  } -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}
