// RUN: gatec-opt %s | gatec-opt | FileCheck %s

// CHECK-LABEL: func.func @ops
func.func @ops(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>,
               %g: tensor<2x4x8x16xf32>, %gh: tensor<2x4x8x1xf32>, %m: tensor<8x8xi1>,
               %x: tensor<2x8x32xf32>, %w: tensor<32x64xf32>, %u: tensor<32x64xf32>,
               %s: tensor<f32>, %d: tensor<32xf32>) -> tensor<2x8x32xf32> {
  // CHECK: gated.attention %arg0, %arg1, %arg2 gate(%arg3 : tensor<2x4x8x16xf32>, sigmoid, elementwise, multiply) {causal, scale = 2.500000e-01 : f32}
  %a = gated.attention %q, %k, %v gate(%g : tensor<2x4x8x16xf32>, sigmoid, elementwise, multiply) {causal, scale = 0.25 : f32} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  // CHECK: gated.attention %arg0, %arg1, %arg2 mask(%arg5 : tensor<8x8xi1>) gate(%arg4 : tensor<2x4x8x1xf32>, ns_sigmoid, headwise, add)
  %b = gated.attention %q, %k, %v mask(%m : tensor<8x8xi1>) gate(%gh : tensor<2x4x8x1xf32>, ns_sigmoid, headwise, add) {scale = 0.25 : f32} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  // CHECK: gated.attention %arg0, %arg1, %arg2 {scale
  %c = gated.attention %q, %k, %v {scale = 0.25 : f32} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  // CHECK: gated.gate G2 sigmoid multiply %arg0, %arg3
  %e = gated.gate G2 sigmoid multiply %q, %g : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  // CHECK: gated.glu silu %arg6, %arg7, %arg8
  %f = gated.glu silu %x, %w, %u : tensor<2x8x32xf32>, tensor<32x64xf32>, tensor<32x64xf32> -> tensor<2x8x64xf32>
  // CHECK: gated.rms_norm %arg6, %arg10 {epsilon = 9.99999997E-7 : f32, unit_offset}
  %n = gated.rms_norm %x, %d {epsilon = 1.0e-6 : f32, unit_offset} : tensor<2x8x32xf32>, tensor<32xf32>
  // CHECK: gated.layer_norm %{{.*}}, %arg10, %arg10 : tensor<32xf32> {epsilon
  %l = gated.layer_norm %n, %d, %d : tensor<32xf32> {epsilon = 1.0e-5 : f32} : tensor<2x8x32xf32>, tensor<32xf32>
  // CHECK: gated.residual tanh_scalar %arg6, %{{.*}} gate(%arg9 : tensor<f32>)
  %r1 = gated.residual tanh_scalar %x, %l gate(%s : tensor<f32>) : tensor<2x8x32xf32>, tensor<2x8x32xf32>
  // CHECK: gated.residual layerscale
  %r2 = gated.residual layerscale %r1, %l gate(%d : tensor<32xf32>) : tensor<2x8x32xf32>, tensor<2x8x32xf32>
  // CHECK: gated.residual output
  %r3 = gated.residual output %r2, %l gate(%x : tensor<2x8x32xf32>) : tensor<2x8x32xf32>, tensor<2x8x32xf32>
  // CHECK: gated.residual add
  %r4 = gated.residual add %r3, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>
  return %r4 : tensor<2x8x32xf32>
}

// A [B, T, H, D] key (`bshd`) and result beside [B, H, T, D] query and value.
// CHECK-LABEL: func.func @attention_bshd
// CHECK: gated.attention %{{.*}}, %{{.*}}, %{{.*}} {bshd = ["key", "result"], scale = 2.500000e-01 : f32}
func.func @attention_bshd(%q: tensor<2x4x8x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32> {
  %r = gated.attention %q, %k, %v {bshd = ["key", "result"], scale = 0.25 : f32} : tensor<2x4x8x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  return %r : tensor<2x8x4x16xf32>
}

// The MoE router: both orders and normalisations, [N, E] with symbolic N,
// [E] alone, and f32 weights of bf16 logits.
// CHECK-LABEL: func.func @router
// CHECK: gated.router softmax_then_topk renormalise %arg0, k = 2 : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
// CHECK: gated.router topk_then_softmax none %arg1, k = 1 : tensor<8xbf16> -> tensor<1xf32>, tensor<1xi64>
func.func @router(%l: tensor<?x8xf32>, %e: tensor<8xbf16>) -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<1xf32>, tensor<1xi64>) {
  %w, %i = gated.router softmax_then_topk renormalise %l, k = 2 : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
  %w1, %i1 = gated.router topk_then_softmax none %e, k = 1 : tensor<8xbf16> -> tensor<1xf32>, tensor<1xi64>
  return %w, %i, %w1, %i1 : tensor<?x2xf32>, tensor<?x2xi64>, tensor<1xf32>, tensor<1xi64>
}
