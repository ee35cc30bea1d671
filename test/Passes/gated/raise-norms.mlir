// RUN: gatec-opt %s --raise-norms -split-input-file | FileCheck %s

// RMSNorm as torch exports it: x · 1/sqrt(mean(x²) + eps) · w.
// CHECK-LABEL: func.func @rms
// CHECK: %[[N:.*]] = gated.rms_norm %arg0, %{{.*}} {epsilon = 9.99999997E-7 : f32} : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK-NEXT: return %[[N]]
func.func @rms(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %w = onnx.Constant dense<1.5> : tensor<16xf32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-6> : tensor<f32>
  %ax = onnx.Constant dense<-1> : tensor<1xi64>
  %sq = "onnx.Pow"(%x, %two) : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
  %m = "onnx.ReduceMean"(%sq, %ax) : (tensor<2x8x16xf32>, tensor<1xi64>) -> tensor<2x8x1xf32>
  %a = "onnx.Add"(%m, %eps) : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %s = "onnx.Sqrt"(%a) : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %r = "onnx.Div"(%one, %s) : (tensor<f32>, tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %n = "onnx.Mul"(%x, %r) : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %y = "onnx.Mul"(%w, %n) : (tensor<16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The dynamo form (Reciprocal) and ONNX RMSNormalization-23.
// CHECK-LABEL: func.func @rms_reciprocal
// CHECK: gated.rms_norm %arg0, %{{.*}} {epsilon = 9.99999974E-6 : f32}
// CHECK: gated.rms_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f32}
func.func @rms_reciprocal(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-5> : tensor<f32>
  %ax = onnx.Constant dense<1> : tensor<1xi64>
  %sq = "onnx.Pow"(%x, %two) : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %m = "onnx.ReduceMean"(%sq, %ax) : (tensor<4x16xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %a = "onnx.Add"(%m, %eps) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = "onnx.Sqrt"(%a) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = "onnx.Reciprocal"(%s) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = "onnx.Mul"(%x, %r) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y = "onnx.Mul"(%n, %w) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %z = "onnx.RMSNormalization"(%y, %w) {epsilon = 1.0e-3 : f32} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %z : tensor<4x16xf32>
}

// -----

// Not an RMSNorm: the mean is over the wrong axis, and an epsilon that is
// not a constant cannot be read: both stay as they are.
// CHECK-LABEL: func.func @negative
// CHECK-NOT: gated.rms_norm
func.func @negative(%x: tensor<4x16xf32>, %eps: tensor<f32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %c = onnx.Constant dense<1.0e-5> : tensor<f32>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %ax1 = onnx.Constant dense<-1> : tensor<1xi64>
  %sq = "onnx.Pow"(%x, %two) : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %m0 = "onnx.ReduceMean"(%sq, %ax0) : (tensor<4x16xf32>, tensor<1xi64>) -> tensor<1x16xf32>
  %a0 = "onnx.Add"(%m0, %c) : (tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32>
  %s0 = "onnx.Sqrt"(%a0) : (tensor<1x16xf32>) -> tensor<1x16xf32>
  %n0 = "onnx.Div"(%x, %s0) : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %y0 = "onnx.Mul"(%n0, %w) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %m1 = "onnx.ReduceMean"(%sq, %ax1) : (tensor<4x16xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %a1 = "onnx.Add"(%m1, %eps) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s1 = "onnx.Sqrt"(%a1) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n1 = "onnx.Div"(%x, %s1) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y1 = "onnx.Mul"(%n1, %w) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y0, %y1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Decomposed LayerNorm with bias, epsilon 1.0 read from the graph.
// CHECK-LABEL: func.func @layer_norm
// CHECK: gated.layer_norm %arg0, %{{.*}}, %{{.*}} : tensor<16xf32> {epsilon = 1.000000e+00 : f32}
func.func @layer_norm(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %b = onnx.Constant dense<0.25> : tensor<16xf32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0> : tensor<f32>
  %ax = onnx.Constant dense<-1> : tensor<1xi64>
  %mean = "onnx.ReduceMean"(%x, %ax) : (tensor<4x16xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %d = "onnx.Sub"(%x, %mean) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %sq = "onnx.Pow"(%d, %two) : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %var = "onnx.ReduceMean"(%sq, %ax) : (tensor<4x16xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %a = "onnx.Add"(%var, %eps) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = "onnx.Sqrt"(%a) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = "onnx.Div"(%d, %s) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y = "onnx.Mul"(%n, %w) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %z = "onnx.Add"(%y, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %z : tensor<4x16xf32>
}

// -----

// The gated RMSNorm of Gated DeltaNet (Qwen3-Next's Qwen3NextRMSNormGated as
// the dynamo exporter writes it): norm(o) · w · silu(z), SiLU as
// z · Sigmoid(z), rows of the head dim with a dynamic row count.
// CHECK-LABEL: func.func @rms_gated_silu
// CHECK: %[[N:.*]] = gated.rms_norm %arg0, %{{.*}} gate(%arg1 : tensor<?x16xf32>, silu) {epsilon = 9.99999997E-7 : f32} : tensor<?x16xf32>, tensor<16xf32>
// CHECK-NOT: onnx.Sigmoid
// CHECK: return %[[N]]
func.func @rms_gated_silu(%x: tensor<?x16xf32>, %z: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %w = onnx.Constant dense<1.5> : tensor<16xf32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-6> : tensor<f32>
  %ax = onnx.Constant dense<-1> : tensor<1xi64>
  %sq = "onnx.Pow"(%x, %two) : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  %m = "onnx.ReduceMean"(%sq, %ax) : (tensor<?x16xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %a = "onnx.Add"(%m, %eps) : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
  %s = "onnx.Sqrt"(%a) : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %r = "onnx.Reciprocal"(%s) : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %n = "onnx.Mul"(%x, %r) : (tensor<?x16xf32>, tensor<?x1xf32>) -> tensor<?x16xf32>
  %nw = "onnx.Mul"(%w, %n) : (tensor<16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %sg = "onnx.Sigmoid"(%z) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %silu = "onnx.Mul"(%z, %sg) : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %y = "onnx.Mul"(%nw, %silu) : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// A sigmoid gate computed before a reshape to the norm's rows: the gate is
// the same reshape of the logits.
// CHECK-LABEL: func.func @rms_gated_reshaped
// CHECK: %[[Z:.*]] = "onnx.Reshape"(%arg1, %{{.*}}) <{allowzero = 0 : i64}> : (tensor<2x3x32xf32>, tensor<2xi64>) -> tensor<12x16xf32>
// CHECK: gated.rms_norm %arg0, %{{.*}} gate(%[[Z]] : tensor<12x16xf32>, sigmoid)
func.func @rms_gated_reshaped(%x: tensor<12x16xf32>, %z: tensor<2x3x32xf32>) -> tensor<12x16xf32> {
  %w = onnx.Constant dense<1.5> : tensor<16xf32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-6> : tensor<f32>
  %ax = onnx.Constant dense<-1> : tensor<1xi64>
  %shape = onnx.Constant dense<[-1, 16]> : tensor<2xi64>
  %sq = "onnx.Pow"(%x, %two) : (tensor<12x16xf32>, tensor<f32>) -> tensor<12x16xf32>
  %m = "onnx.ReduceMean"(%sq, %ax) : (tensor<12x16xf32>, tensor<1xi64>) -> tensor<12x1xf32>
  %a = "onnx.Add"(%m, %eps) : (tensor<12x1xf32>, tensor<f32>) -> tensor<12x1xf32>
  %s = "onnx.Sqrt"(%a) : (tensor<12x1xf32>) -> tensor<12x1xf32>
  %r = "onnx.Reciprocal"(%s) : (tensor<12x1xf32>) -> tensor<12x1xf32>
  %n = "onnx.Mul"(%x, %r) : (tensor<12x16xf32>, tensor<12x1xf32>) -> tensor<12x16xf32>
  %nw = "onnx.Mul"(%n, %w) : (tensor<12x16xf32>, tensor<16xf32>) -> tensor<12x16xf32>
  %sg = "onnx.Sigmoid"(%z) : (tensor<2x3x32xf32>) -> tensor<2x3x32xf32>
  %sgr = "onnx.Reshape"(%sg, %shape) : (tensor<2x3x32xf32>, tensor<2xi64>) -> tensor<12x16xf32>
  %y = "onnx.Mul"(%sgr, %nw) : (tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<12x16xf32>
  return %y : tensor<12x16xf32>
}

// -----

// A gate that broadcasts (one row for all) is no gated RMSNorm: the norm
// stays ungated and the Mul stays.
// CHECK-LABEL: func.func @rms_gate_broadcast
// CHECK: gated.rms_norm %arg0, %{{.*}} {epsilon
// CHECK: onnx.Mul
func.func @rms_gate_broadcast(%x: tensor<4x16xf32>, %z: tensor<1x16xf32>) -> tensor<4x16xf32> {
  %w = onnx.Constant dense<1.5> : tensor<16xf32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-6> : tensor<f32>
  %ax = onnx.Constant dense<-1> : tensor<1xi64>
  %sq = "onnx.Pow"(%x, %two) : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %m = "onnx.ReduceMean"(%sq, %ax) : (tensor<4x16xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %a = "onnx.Add"(%m, %eps) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = "onnx.Sqrt"(%a) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = "onnx.Reciprocal"(%s) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = "onnx.Mul"(%x, %r) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %nw = "onnx.Mul"(%n, %w) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %sg = "onnx.Sigmoid"(%z) : (tensor<1x16xf32>) -> tensor<1x16xf32>
  %y = "onnx.Mul"(%nw, %sg) : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Mamba2's gated norm (n_groups = 1): RMSNorm(y ⊙ silu(z)) with the rows
// reshaped to [B, T, 1, D] for the norm and back before the weight: one
// gated.rms_norm with the gate first.
// CHECK-LABEL: func.func @rms_gate_first_mamba2
// CHECK: %[[N:.*]] = gated.rms_norm %arg0, %{{.*}} gate(%arg1 : tensor<?x?x16xf32>, silu) {epsilon = 9.99999997E-7 : f32, gate_first} : tensor<?x?x16xf32>, tensor<16xf32>
// CHECK-NOT: onnx.Sigmoid
// CHECK: return %[[N]]
func.func @rms_gate_first_mamba2(%y: tensor<?x?x16xf32>, %z: tensor<?x?x16xf32>, %s4: tensor<4xi64>, %s3: tensor<3xi64>) -> tensor<?x?x16xf32> {
  %w = onnx.Constant dense<1.5> : tensor<16xf32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-6> : tensor<f32>
  %ax = onnx.Constant dense<-1> : tensor<1xi64>
  %sg = "onnx.Sigmoid"(%z) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %silu = "onnx.Mul"(%z, %sg) : (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %x = "onnx.Mul"(%y, %silu) : (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %x4 = "onnx.Reshape"(%x, %s4) <{allowzero = 1 : i64}> : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x1x16xf32>
  %sq = "onnx.Pow"(%x4, %two) : (tensor<?x?x1x16xf32>, tensor<f32>) -> tensor<?x?x1x16xf32>
  %m = "onnx.ReduceMean"(%sq, %ax) : (tensor<?x?x1x16xf32>, tensor<1xi64>) -> tensor<?x?x1x1xf32>
  %a = "onnx.Add"(%m, %eps) : (tensor<?x?x1x1xf32>, tensor<f32>) -> tensor<?x?x1x1xf32>
  %s = "onnx.Sqrt"(%a) : (tensor<?x?x1x1xf32>) -> tensor<?x?x1x1xf32>
  %r = "onnx.Reciprocal"(%s) : (tensor<?x?x1x1xf32>) -> tensor<?x?x1x1xf32>
  %n = "onnx.Mul"(%x4, %r) : (tensor<?x?x1x16xf32>, tensor<?x?x1x1xf32>) -> tensor<?x?x1x16xf32>
  %n3 = "onnx.Reshape"(%n, %s3) <{allowzero = 1 : i64}> : (tensor<?x?x1x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %y2 = "onnx.Mul"(%w, %n3) : (tensor<16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %y2 : tensor<?x?x16xf32>
}

// -----

// Groups of the last dim (n_groups = 2: [B, T, 2, 8] for a weight of 16)
// are no RMSNorm over the last dim: left alone.
// CHECK-LABEL: func.func @rms_groups_not_raised
// CHECK-NOT: gated.rms_norm
func.func @rms_groups_not_raised(%x: tensor<?x?x16xf32>, %s4: tensor<4xi64>, %s3: tensor<3xi64>) -> tensor<?x?x16xf32> {
  %w = onnx.Constant dense<1.5> : tensor<16xf32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-6> : tensor<f32>
  %ax = onnx.Constant dense<-1> : tensor<1xi64>
  %x4 = "onnx.Reshape"(%x, %s4) <{allowzero = 1 : i64}> : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x2x8xf32>
  %sq = "onnx.Pow"(%x4, %two) : (tensor<?x?x2x8xf32>, tensor<f32>) -> tensor<?x?x2x8xf32>
  %m = "onnx.ReduceMean"(%sq, %ax) : (tensor<?x?x2x8xf32>, tensor<1xi64>) -> tensor<?x?x2x1xf32>
  %a = "onnx.Add"(%m, %eps) : (tensor<?x?x2x1xf32>, tensor<f32>) -> tensor<?x?x2x1xf32>
  %s = "onnx.Sqrt"(%a) : (tensor<?x?x2x1xf32>) -> tensor<?x?x2x1xf32>
  %r = "onnx.Reciprocal"(%s) : (tensor<?x?x2x1xf32>) -> tensor<?x?x2x1xf32>
  %n = "onnx.Mul"(%x4, %r) : (tensor<?x?x2x8xf32>, tensor<?x?x2x1xf32>) -> tensor<?x?x2x8xf32>
  %n3 = "onnx.Reshape"(%n, %s3) <{allowzero = 1 : i64}> : (tensor<?x?x2x8xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %y2 = "onnx.Mul"(%w, %n3) : (tensor<16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %y2 : tensor<?x?x16xf32>
}
