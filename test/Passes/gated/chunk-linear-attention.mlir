// RUN: gatec-opt %s --chunk-linear-attention -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gatec-opt %s --chunk-linear-attention=chunk-size=64 -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=C64

// CHECK-LABEL: func.func @form
// The pass's default chunk size is 16; 64 is the attribute's default, so
// not printed.
// CHECK: gated.linear_attention gated_delta chunked {{.*}}chunk_size = 16 : i64
// C64: gated.linear_attention gated_delta chunked {{.*}} {scale = 1.000000e+00 : f32}
func.func @form(%q: tensor<1x2x?x8xf32>, %g: tensor<1x2x?x1xf32>, %b: tensor<1x2x?x1xf32>) -> tensor<1x2x?x8xf32> {
  %o, %s = gated.linear_attention gated_delta recurrent %q, %q, %q decay(%g : tensor<1x2x?x1xf32>) beta(%b : tensor<1x2x?x1xf32>) {chunk_size = 32 : i64, scale = 1.0 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>, tensor<1x2x8x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// A constant decay above 1 (positive log-decay) is rejected at the op.
func.func @growth(%q: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %g = arith.constant dense<[[[[-0.5], [0.25]]]]> : tensor<1x1x2x1xf32>
  // expected-error @+1 {{log-decay 2.500000e-01 is not <= 0}}
  %o, %s = gated.linear_attention gated recurrent %q, %q, %q decay(%g : tensor<1x1x2x1xf32>) {scale = 1.0 : f32} : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
  return %o : tensor<1x1x2x2xf32>
}
