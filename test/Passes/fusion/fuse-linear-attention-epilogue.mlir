// RUN: gatec-opt %s --fuse-linear-attention-epilogue --split-input-file | FileCheck %s

// Qwen3-Next's Gated DeltaNet: the output [B, T, H, Dv] (bshd) reshaped to
// rows of Dv, a gated RMSNorm with the z rows, and back. The norm becomes
// the op's epilogue; its reader reads the reshaped output. The gate z is
// computed after the op, so the op moves down to the norm.
// CHECK-LABEL: func.func @gated_delta_norm
// CHECK: %[[Z:.*]] = "onnx.Reshape"(%arg4
// CHECK: %[[O:.*]], %{{.*}} = gated.linear_attention gated_delta chunked %arg0, %arg1, %arg2 decay(%arg3 : tensor<?x?x2x1xf32>) beta(%arg3 : tensor<?x?x2x1xf32>) norm(%{{.*}} : tensor<8xf32>) norm_gate(%[[Z]] : tensor<?x8xf32>, silu) {bshd = ["query", "key", "value", "decay", "beta", "output"], chunk_size = 16 : i64, norm_epsilon = 9.99999997E-7 : f32, scale = 5.000000e-01 : f32}
// CHECK: %[[R1:.*]] = "onnx.Reshape"(%[[O]]
// CHECK: %[[R2:.*]] = "onnx.Reshape"(%[[R1]]
// CHECK-NOT: gated.rms_norm
// CHECK: return %[[R2]]
func.func @gated_delta_norm(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x8xf32>, %g: tensor<?x?x2x1xf32>, %z: tensor<?x?x16xf32>) -> (tensor<?x8xf32>, tensor<?x2x8x8xf32>) {
  %w = onnx.Constant dense<1.5> : tensor<8xf32>
  %s3 = onnx.Constant dense<[0, 0, 16]> : tensor<3xi64>
  %rows = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %o, %f = gated.linear_attention gated_delta chunked %q, %k, %v decay(%g : tensor<?x?x2x1xf32>) beta(%g : tensor<?x?x2x1xf32>) {bshd = ["query", "key", "value", "decay", "beta", "output"], chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x8xf32>, tensor<?x2x8x8xf32>
  %o3 = "onnx.Reshape"(%o, %s3) : (tensor<?x?x2x8xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %x = "onnx.Reshape"(%o3, %rows) : (tensor<?x?x16xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %zr = "onnx.Reshape"(%z, %rows) : (tensor<?x?x16xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %y = gated.rms_norm %x, %w gate(%zr : tensor<?x8xf32>, silu) {epsilon = 1.0e-6 : f32} : tensor<?x8xf32>, tensor<8xf32>
  return %y, %f : tensor<?x8xf32>, tensor<?x2x8x8xf32>
}

// -----

// An ungated norm over the head dim (the output read directly) is fused
// too, without a gate.
// CHECK-LABEL: func.func @norm_only
// CHECK: gated.linear_attention gated chunked %arg0, %arg1, %arg2 decay(%arg3 : tensor<1x2x?x1xf32>) norm(%{{.*}} : tensor<8xf32>) {chunk_size = 16 : i64, norm_epsilon
// CHECK-NOT: gated.rms_norm
func.func @norm_only(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>, %g: tensor<1x2x?x1xf32>) -> tensor<1x2x?x8xf32> {
  %w = onnx.Constant dense<1.5> : tensor<8xf32>
  %o, %f = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>, tensor<1x2x8x8xf32>
  %y = gated.rms_norm %o, %w {epsilon = 1.0e-6 : f32} : tensor<1x2x?x8xf32>, tensor<8xf32>
  return %y : tensor<1x2x?x8xf32>
}

// -----

// Not fused: a norm over another last dim than Dv (heads merged), an output
// with a second reader, and a transpose between the output and the norm.
// CHECK-LABEL: func.func @not_fused
// CHECK-COUNT-3: gated.rms_norm
// CHECK-NOT: norm(
func.func @not_fused(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>, %g: tensor<1x2x?x1xf32>) -> (tensor<1x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x?x2x8xf32>) {
  %w16 = onnx.Constant dense<1.5> : tensor<16xf32>
  %w = onnx.Constant dense<1.5> : tensor<8xf32>
  %s3 = onnx.Constant dense<[1, -1, 16]> : tensor<3xi64>
  %o, %f = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>, tensor<1x2x8x8xf32>
  %o3 = "onnx.Reshape"(%o, %s3) : (tensor<1x2x?x8xf32>, tensor<3xi64>) -> tensor<1x?x16xf32>
  %y = gated.rms_norm %o3, %w16 {epsilon = 1.0e-6 : f32} : tensor<1x?x16xf32>, tensor<16xf32>
  %o2, %f2 = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>, tensor<1x2x8x8xf32>
  %y2 = gated.rms_norm %o2, %w {epsilon = 1.0e-6 : f32} : tensor<1x2x?x8xf32>, tensor<8xf32>
  %o4, %f4 = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>, tensor<1x2x8x8xf32>
  %t = "onnx.Transpose"(%o4) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x2x?x8xf32>) -> tensor<1x?x2x8xf32>
  %y4 = gated.rms_norm %t, %w {epsilon = 1.0e-6 : f32} : tensor<1x?x2x8xf32>, tensor<8xf32>
  return %y, %y2, %o2, %y4 : tensor<1x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x?x2x8xf32>
}

// -----

// Mamba2's gate-first norm, norm(o ⊙ act(z)), is not the epilogue's form.
// CHECK-LABEL: func.func @gate_first_not_fused
// CHECK: gated.rms_norm {{.*}} gate_first
func.func @gate_first_not_fused(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>, %g: tensor<1x2x?x1xf32>, %z: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %w = onnx.Constant dense<1.5> : tensor<8xf32>
  %o, %f = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>, tensor<1x2x8x8xf32>
  %y = gated.rms_norm %o, %w gate(%z : tensor<1x2x?x8xf32>, silu) {epsilon = 1.0e-6 : f32, gate_first} : tensor<1x2x?x8xf32>, tensor<8xf32>
  return %y : tensor<1x2x?x8xf32>
}
