// RUN: gatec-opt %s | gatec-opt | FileCheck %s

// Every update rule, per-channel and per-head decay, GQA, initial state,
// both forms round-trip.
// CHECK-LABEL: func.func @ops
func.func @ops(%q: tensor<2x4x?x8xf32>, %k: tensor<2x2x?x8xf32>, %v: tensor<2x2x?x6xf32>,
               %gc: tensor<2x2x?x8xf32>, %gh: tensor<2x2x?x1xf32>, %b: tensor<2x2x?x1xf32>,
               %b1: tensor<2x1x?x1xf32>, %s: tensor<2x2x8x6xf32>) -> tensor<2x2x8x6xf32> {
  // CHECK: gated.linear_attention linear recurrent %arg0, %arg1, %arg2 {scale = 0.3535{{.*}} : f32} : tensor<2x4x?x8xf32>, tensor<2x2x?x8xf32>, tensor<2x2x?x6xf32> -> tensor<2x4x?x6xf32>, tensor<2x2x8x6xf32>
  %o0, %s0 = gated.linear_attention linear recurrent %q, %k, %v {scale = 0.35355339 : f32} : tensor<2x4x?x8xf32>, tensor<2x2x?x8xf32>, tensor<2x2x?x6xf32> -> tensor<2x4x?x6xf32>, tensor<2x2x8x6xf32>
  // CHECK: gated.linear_attention gated chunked %arg0, %arg1, %arg2 decay(%arg3 : tensor<2x2x?x8xf32>) state(%arg7 : tensor<2x2x8x6xf32>) {chunk_size = 16 : i64
  %o1, %s1 = gated.linear_attention gated chunked %q, %k, %v decay(%gc : tensor<2x2x?x8xf32>) state(%s : tensor<2x2x8x6xf32>) {chunk_size = 16 : i64, scale = 1.0 : f32} : tensor<2x4x?x8xf32>, tensor<2x2x?x8xf32>, tensor<2x2x?x6xf32> -> tensor<2x4x?x6xf32>, tensor<2x2x8x6xf32>
  // CHECK: gated.linear_attention delta recurrent %arg0, %arg1, %arg2 beta(%arg6 : tensor<2x1x?x1xf32>)
  %o2, %s2 = gated.linear_attention delta recurrent %q, %k, %v beta(%b1 : tensor<2x1x?x1xf32>) {scale = 1.0 : f32} : tensor<2x4x?x8xf32>, tensor<2x2x?x8xf32>, tensor<2x2x?x6xf32> -> tensor<2x4x?x6xf32>, tensor<2x2x8x6xf32>
  // CHECK: gated.linear_attention gated_delta chunked %arg0, %arg1, %arg2 decay(%arg4 : tensor<2x2x?x1xf32>) beta(%arg5 : tensor<2x2x?x1xf32>) state(%arg7
  %o3, %s3 = gated.linear_attention gated_delta chunked %q, %k, %v decay(%gh : tensor<2x2x?x1xf32>) beta(%b : tensor<2x2x?x1xf32>) state(%s : tensor<2x2x8x6xf32>) {scale = 1.0 : f32} : tensor<2x4x?x8xf32>, tensor<2x2x?x8xf32>, tensor<2x2x?x6xf32> -> tensor<2x4x?x6xf32>, tensor<2x2x8x6xf32>
  return %s3 : tensor<2x2x8x6xf32>
}
