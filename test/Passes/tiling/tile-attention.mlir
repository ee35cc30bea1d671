// RUN: gatec-opt %s --tile-attention --canonicalize --cse | FileCheck %s
// RUN: gatec-opt %s --tile-attention="q-tile=16 k-tile=8" | FileCheck %s --check-prefix=TILES

// G1-gated causal GQA attention: one task per (batch, head, block of 32
// queries); keys in blocks of 64 up to the block's last query; the online
// softmax state (acc, m, l) is carried by the key loop; the gate is applied
// in the epilogue, before the single write of the output tile.
// CHECK-LABEL: func.func @g1_causal_gqa
// CHECK-NOT:     gated.attention
// CHECK:         scf.forall (%[[B:.*]], %[[H:.*]], %[[QB:.*]]) in (%{{.*}}, 4, %{{.*}})
// CHECK:           %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK:           %[[KEND:.*]] = arith.minui
// CHECK:           scf.for %{{.*}} = %c0 to %[[KEND]] step %c64 iter_args(
// CHECK:             tensor.extract_slice %arg1[%[[B]], %[[KVH]],
// CHECK:             linalg.generic {{.*}}["parallel", "parallel", "reduction"]
// CHECK:               arith.cmpi ugt
// CHECK:             math.exp
// CHECK:             scf.yield
// CHECK:           linalg.generic
// CHECK:             arith.divf
// CHECK:             math.exp
// CHECK:             arith.mulf
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice
// TILES: affine_map<()[s0] -> (s0 ceildiv 16)>
// TILES: affine_map<(d0)[s0] -> (16, -d0 + s0)>
// TILES: affine_map<(d0)[s0] -> (8, -d0 + s0)>
func.func @g1_causal_gqa(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>,
                         %v: tensor<?x2x?x16xf32>, %g: tensor<?x4x?x16xf32>)
    -> tensor<?x4x?x16xf32> {
  %r = gated.attention %q, %k, %v gate(%g : tensor<?x4x?x16xf32>, sigmoid, elementwise, multiply)
      {causal, scale = 0.25 : f32}
      : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32> -> tensor<?x4x?x16xf32>
  return %r : tensor<?x4x?x16xf32>
}

// A boolean mask broadcast over batch and heads is sliced per block.
// CHECK-LABEL: func.func @bool_mask
// CHECK:         scf.forall
// CHECK:           scf.for
// CHECK:             tensor.extract_slice %arg3[0, 0, {{.*}}] [1, 1, {{.*}}] [1, 1, 1, 1] : tensor<1x1x80x80xi1>
// CHECK:             arith.select
func.func @bool_mask(%q: tensor<2x2x80x4xf32>, %k: tensor<2x2x80x4xf32>,
                     %v: tensor<2x2x80x4xf32>, %m: tensor<1x1x80x80xi1>)
    -> tensor<2x2x80x4xf32> {
  %r = gated.attention %q, %k, %v mask(%m : tensor<1x1x80x80xi1>) {scale = 0.5 : f32}
      : tensor<2x2x80x4xf32>, tensor<2x2x80x4xf32>, tensor<2x2x80x4xf32> -> tensor<2x2x80x4xf32>
  return %r : tensor<2x2x80x4xf32>
}
