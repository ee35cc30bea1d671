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

// -----

// The router: one scf.forall over the tokens (symbolic N) writing each
// row's k weights and indices; in it, scalar loops over the experts in f32
// (the maximum, then k selection scans), then the weights exp(l - m) over
// the selected experts' sum (renormalise); bf16 logits, f32 weights.
// CHECK-LABEL: func.func @router
// CHECK-NOT: cf.assert
// CHECK: %[[F:.*]]:2 = scf.forall (%[[T:.*]]) in (%{{.*}}) shared_outs({{.*}}) -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: arith.extf
// CHECK: arith.maximumf
// CHECK: scf.for {{.*}} -> (tensor<2xi64>)
// CHECK: scf.for {{.*}} -> (f32, index)
// CHECK: arith.cmpf uno
// CHECK: tensor.insert {{.*}} : tensor<2xi64>
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: tensor.insert {{.*}} : tensor<2xf32>
// CHECK: tensor.parallel_insert_slice {{.*}}[%[[T]], 0] [1, 2] [1, 1] : tensor<2xf32> into tensor<?x2xf32>
// CHECK: tensor.parallel_insert_slice {{.*}}[%[[T]], 0] [1, 2] [1, 1] : tensor<2xi64> into tensor<?x2xi64>
// CHECK: return %[[F]]#0, %[[F]]#1
// CHECK-NOT: gated.router
func.func @router(%l: tensor<?x8xbf16>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %w, %i = gated.router softmax_then_topk renormalise %l, k = 2 : tensor<?x8xbf16> -> tensor<?x2xf32>, tensor<?x2xi64>
  return %w, %i : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// A dynamic expert count is checked against k at run time.
// CHECK-LABEL: func.func @router_dynamic_experts
// CHECK: %[[E:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[OK:.*]] = arith.cmpi ule, %c3, %[[E]]
// CHECK: cf.assert %[[OK]], "gatec: fewer experts than the router's k = 3 in node 'router'"
func.func @router_dynamic_experts(%l: tensor<?x?xf32>) -> (tensor<?x3xf32>, tensor<?x3xi64>) {
  %w, %i = gated.router topk_then_softmax none %l, k = 3 : tensor<?x?xf32> -> tensor<?x3xf32>, tensor<?x3xi64> loc("router")
  return %w, %i : tensor<?x3xf32>, tensor<?x3xi64>
}

// -----

func.func @router_unranked(%l: tensor<*xf32>) -> (tensor<*xf32>, tensor<*xi64>) {
  // expected-error @+1 {{'gated.router' op needs ranked tensors to lower}}
  %w, %i = gated.router softmax_then_topk none %l, k = 2 : tensor<*xf32> -> tensor<*xf32>, tensor<*xi64>
  return %w, %i : tensor<*xf32>, tensor<*xi64>
}

// -----

// gated.short_conv (LFM2): one generic over (n, ch, t); tap k reads b and x
// in place at t - (K - 1) + k, clamped to 0 and selected away before the
// start, weighted by w[ch, 0, k]; the output gate c multiplies the sum.
// b and c are checked to have x's run-time sizes.
// CHECK-LABEL: func.func @short_conv
// CHECK-COUNT-4: cf.assert
// CHECK: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg2, %arg3, %arg3, %arg3 : tensor<?x4x?xf32>, tensor<4x1x3xf32>, tensor<4x1x3xf32>, tensor<4x1x3xf32>)
// CHECK: %[[T:.*]] = linalg.index 2 : index
// CHECK: %[[S:.*]] = arith.addi %[[T]], %c-2 : index
// CHECK: %[[IN:.*]] = arith.cmpi sge, %[[S]], %c0
// CHECK: %[[SI:.*]] = arith.select %[[IN]], %[[S]], %c0
// CHECK: tensor.extract %arg0[%{{.*}}, %{{.*}}, %[[SI]]]
// CHECK: tensor.extract %arg1[%{{.*}}, %{{.*}}, %[[SI]]]
// CHECK: math.fma
// CHECK: math.fma
// CHECK: math.fma
// CHECK: arith.mulf %in
func.func @short_conv(%x: tensor<?x4x?xf32>, %b: tensor<?x4x?xf32>, %c: tensor<?x4x?xf32>, %w: tensor<4x1x3xf32>) -> tensor<?x4x?xf32> {
  %y = gated.short_conv %x, %b, %c, %w : tensor<?x4x?xf32>, tensor<4x1x3xf32>
  return %y : tensor<?x4x?xf32>
}
