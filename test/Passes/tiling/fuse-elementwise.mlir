// RUN: gatec-opt %s --fuse-elementwise | FileCheck %s

#id = affine_map<(m, n) -> (m, n)>
#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>

// SwiGLU's silu(a)·b feeding the down projection: the product fuses with
// the SiLU (one elementwise body) but not into the contraction, where it
// would be recomputed for each of the 16 output columns.
// CHECK-LABEL: func.func @swiglu_down
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:           math.exp
// CHECK:           arith.mulf
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT:       math.exp
// CHECK:         return
func.func @swiglu_down(%a: tensor<8x32xf32>, %b: tensor<8x32xf32>, %w: tensor<32x16xf32>,
                       %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x32xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    %ex = math.exp %n : f32
    %one = arith.constant 1.0 : f32
    %d = arith.addf %one, %ex : f32
    %y = arith.divf %x, %d : f32
    linalg.yield %y : f32
  } -> tensor<8x32xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %b : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %w : tensor<8x32xf32>, tensor<32x16xf32>) outs(%c : tensor<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %q = arith.mulf %x, %y : f32
    %t = arith.addf %z, %q : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
