// RUN: gatec-opt %s --tile-attention --canonicalize --cse | FileCheck %s
// RUN: gatec-opt %s --tile-attention="q-tile=16 k-tile=8" | FileCheck %s --check-prefix=TILES
// RUN: gatec-opt %s --tile-attention=transpose-keys-once --canonicalize --cse | FileCheck %s --check-prefix=ONCE

// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[TR:map[0-9]*]] = affine_map<(d0, d1) -> (d1, d0)>

// G1-gated causal GQA attention: one task per (batch, head, block of 32
// queries); keys in blocks of 64 up to the block's last query; the online
// softmax state (acc, m, l) is carried by the key loop; the gate is applied
// in the epilogue, before the single write of the output tile. The dims
// named alike (ONNX dim_params) are equal: no run-time check.
// CHECK-LABEL: func.func @g1_causal_gqa
// CHECK-NOT:     gated.attention
// CHECK-NOT:     cf.assert
// CHECK:         scf.forall (%[[B:.*]], %[[H:.*]], %[[QB:.*]]) in (%{{.*}}, 4, %{{.*}})
// CHECK:           %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK:           %[[KEND:.*]] = arith.minui
// CHECK:           scf.for %{{.*}} = %c0 to %[[KEND]] step %c64 iter_args(
// CHECK:             tensor.extract_slice %arg1[%[[B]], %[[KVH]],
// The key tile is copied to [D, bk] iterating over its own [bk, D] layout
// (contiguous reads; a linalg.transpose iterates over its output and read
// the keys with gathers: 44% of the kernel's time at T = 2048).
// CHECK:             linalg.generic {indexing_maps = [#[[ID]], #[[TR]]], iterator_types = ["parallel", "parallel"]}
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
// With transpose-keys-once (the CPU pipeline's choice) the keys [B, Hkv,
// S, D] are copied once, before the loop, to [B, Hkv, D, S], and each key
// tile [D, bk] is a slice of that copy at the group's KV head: no
// transposition inside the loop.
// ONCE-DAG: #[[KEYS:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// ONCE-DAG: #[[KEYST:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// ONCE-LABEL: func.func @g1_causal_gqa
// ONCE:         %[[E:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x2x16x?xf32>
// ONCE:         %[[KT:.*]] = linalg.generic {indexing_maps = [#[[KEYS]], #[[KEYST]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : tensor<?x2x?x16xf32>) outs(%[[E]] : tensor<?x2x16x?xf32>)
// ONCE:         scf.forall (%[[B:.*]], %[[H:.*]], %[[QB:.*]]) in (%{{.*}}, 4, %{{.*}})
// ONCE:           %[[KVH:.*]] = arith.divui %[[H]], %c2
// ONCE:           scf.for %[[K0:.*]] = %c0 to %{{.*}} step %c64 iter_args(
// ONCE:             tensor.extract_slice %[[KT]][%[[B]], %[[KVH]], 0, %[[K0]]] [1, 1, 16, %{{.*}}] [1, 1, 1, 1] : tensor<?x2x16x?xf32> to tensor<16x?xf32>
// ONCE-NOT:         linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<?x16xf32>)
// ONCE:             linalg.generic {{.*}}["parallel", "parallel", "reduction"]
// ONCE:           scf.forall.in_parallel
func.func @g1_causal_gqa(
    %q: tensor<?x4x?x16xf32> {onnx.dim_params = ["batch", "", "seq", ""]},
    %k: tensor<?x2x?x16xf32> {onnx.dim_params = ["batch", "", "seq", ""]},
    %v: tensor<?x2x?x16xf32> {onnx.dim_params = ["batch", "", "seq", ""]},
    %g: tensor<?x4x?x16xf32> {onnx.dim_params = ["batch", "", "seq", ""]})
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

// Operands and a result in the projection layout [B, T, H, D] (`bshd`, set
// by --absorb-head-layout) are read and written in place: the kernel slices
// them strided and writes its tile into the [B, T, H, Dv] result. The value
// here stays [B, H, S, D] (as a KV cache may arrive).
// CHECK-LABEL: func.func @projection_layout
// CHECK-NOT:     linalg.transpose
// CHECK:         scf.forall (%[[B:.*]], %[[H:.*]], %[[QB:.*]]) in (2, 4, 3) shared_outs(%[[O:.*]] = %{{.*}}) -> (tensor<2x80x4x8xf32>)
// CHECK:           tensor.extract_slice %arg0[%[[B]], %{{.*}}, %[[H]], 0] [1, %{{.*}}, 1, 8] [1, 1, 1, 1] : tensor<2x80x4x8xf32> to tensor<?x8xf32>
// CHECK:           tensor.extract_slice %arg2[%[[B]], %[[H]], %{{.*}}, 0] [1, 1, %{{.*}}, 8] [1, 1, 1, 1] : tensor<2x4x80x8xf32> to tensor<?x8xf32>
// CHECK:           tensor.parallel_insert_slice %{{.*}} into %[[O]][%[[B]], %{{.*}}, %[[H]], 0] [1, %{{.*}}, 1, 8]
// CHECK-NOT:     linalg.transpose
// CHECK:         return
func.func @projection_layout(%q: tensor<2x80x4x8xf32>, %k: tensor<2x80x4x8xf32>,
                             %v: tensor<2x4x80x8xf32>) -> tensor<2x80x4x8xf32> {
  %r = gated.attention %q, %k, %v {bshd = ["query", "key", "result"], causal, scale = 0.35 : f32}
      : tensor<2x80x4x8xf32>, tensor<2x80x4x8xf32>, tensor<2x4x80x8xf32> -> tensor<2x80x4x8xf32>
  return %r : tensor<2x80x4x8xf32>
}

// Dims that may be 1 or full at run time (unrelated dynamic dims): each is
// checked once before the loop (1 or the full size), and read at an index
// chosen at run time (0 where it is 1: a stride of 0). A mask whose key dim
// broadcasts at run time is read in the body at the chosen index. The
// contraction dims (key head_dim, value sequence) are checked equal.
// CHECK-LABEL: func.func @run_time_broadcast
// CHECK:         %[[KB:.*]] = tensor.dim %arg1, %c0
// CHECK:         %[[KB1:.*]] = arith.cmpi eq, %[[KB]], %c1
// CHECK:         cf.assert %{{.*}}, "gatec: run-time sizes that do not broadcast (neither equal nor 1) in dim 0
// CHECK:         cf.assert %{{.*}}, "gatec: run-time sizes that differ in contraction dim 2
// CHECK:         %[[MH:.*]] = tensor.dim %arg3, %c1
// CHECK:         %[[MH1:.*]] = arith.cmpi eq, %[[MH]], %c1
// CHECK:         %[[MS:.*]] = tensor.dim %arg3, %c3
// CHECK:         %[[MS1:.*]] = arith.cmpi eq, %[[MS]], %c1
// CHECK:         scf.forall (%[[B:.*]], %[[H:.*]], %{{.*}}) in
// CHECK:           %[[KBI:.*]] = arith.select %[[KB1]], %c0, %[[B]]
// CHECK:           scf.for
// CHECK:             tensor.extract_slice %arg1[%[[KBI]], %[[H]],
// CHECK:             %[[MHI:.*]] = arith.select %[[MH1]], %c0, %[[H]]
// CHECK:             %[[MT:.*]] = tensor.extract_slice %arg3[%{{.*}}, %[[MHI]], %{{.*}}, %{{.*}}]
// CHECK:             linalg.generic
// CHECK:               %[[J:.*]] = linalg.index 1
// CHECK:               %[[JI:.*]] = arith.select %[[MS1]], %c0, %[[J]]
// CHECK:               tensor.extract %[[MT]][%c0, %c0, %{{.*}}, %[[JI]]]
func.func @run_time_broadcast(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>,
                              %v: tensor<?x2x?x4xf32>, %m: tensor<?x?x?x?xf32>)
    -> tensor<?x2x?x4xf32> {
  %r = gated.attention %q, %k, %v mask(%m : tensor<?x?x?x?xf32>) {scale = 0.5 : f32}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %r : tensor<?x2x?x4xf32>
}
