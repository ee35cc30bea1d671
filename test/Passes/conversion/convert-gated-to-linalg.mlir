// RUN: gatec-opt %s --convert-gated-to-linalg -split-input-file -verify-diagnostics | FileCheck %s

// GQA: query head h reads KV head h floordiv (Hq/Hkv) through the indexing
// map; the causal mask compares the loop indices; the gate is applied in the
// epilogue generic; all in f32.
// CHECK-DAG: #[[KV:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 2, d3, d4)>
// CHECK-LABEL: func.func @attention
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK: linalg.index 3
// CHECK: arith.cmpi ugt
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK-NOT: gated.attention
func.func @attention(%q: tensor<1x4x5x8xf32>, %k: tensor<1x2x5x8xf32>, %g: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  %a = gated.attention %q, %k, %k gate(%g : tensor<1x4x5x8xf32>, sigmoid, elementwise, multiply) {causal, scale = 0.25 : f32} : tensor<1x4x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32> -> tensor<1x4x5x8xf32>
  return %a : tensor<1x4x5x8xf32>
}

// -----

// Dynamic batch and sequence: sizes come from tensor.dim.
// CHECK-LABEL: func.func @glu_dynamic
// CHECK: tensor.dim %arg0, %c0
// CHECK: linalg.generic {{.*}}ins(%arg0, %arg1, %arg2 : tensor<?x?x16xf32>, tensor<16x24xf32>, tensor<16x24xf32>) outs({{.*}} : tensor<?x?x24xf32>, tensor<?x?x24xf32>)
func.func @glu_dynamic(%x: tensor<?x?x16xf32>, %w: tensor<16x24xf32>, %v: tensor<16x24xf32>) -> tensor<?x?x24xf32> {
  %r = gated.glu silu %x, %w, %v : tensor<?x?x16xf32>, tensor<16x24xf32>, tensor<16x24xf32> -> tensor<?x?x24xf32>
  return %r : tensor<?x?x24xf32>
}

// -----

// Dynamic head counts cannot be lowered: a located error.
func.func @dynamic_heads(%q: tensor<1x?x5x8xf32>) -> tensor<1x?x5x8xf32> {
  // expected-error @+1 {{'gated.attention' op needs static head counts to lower}}
  %a = gated.attention %q, %q, %q {scale = 0.25 : f32} : tensor<1x?x5x8xf32>, tensor<1x?x5x8xf32>, tensor<1x?x5x8xf32> -> tensor<1x?x5x8xf32>
  return %a : tensor<1x?x5x8xf32>
}
