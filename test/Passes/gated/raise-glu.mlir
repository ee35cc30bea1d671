// RUN: gatec-opt %s --raise-glu -split-input-file | FileCheck %s

// SwiGLU as torch exports SiLU: (a · Sigmoid(a)) · (x·V), a = x·W.
// CHECK-LABEL: func.func @swiglu
// CHECK: %[[G:.*]] = gated.glu silu %arg0, %{{.*}}, %{{.*}} : tensor<2x16xf32>, tensor<16x24xf32>, tensor<16x24xf32> -> tensor<2x24xf32>
// CHECK-NEXT: return %[[G]]
func.func @swiglu(%x: tensor<2x16xf32>) -> tensor<2x24xf32> {
  %w = onnx.Constant dense<0.1> : tensor<16x24xf32>
  %v = onnx.Constant dense<0.2> : tensor<16x24xf32>
  %a = "onnx.MatMul"(%x, %w) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %b = "onnx.MatMul"(%x, %v) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %s = "onnx.Sigmoid"(%a) : (tensor<2x24xf32>) -> tensor<2x24xf32>
  %silu = "onnx.Mul"(%a, %s) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %y = "onnx.Mul"(%silu, %b) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  return %y : tensor<2x24xf32>
}

// -----

// Phi3's fused gate_up projection split in two with Split (num_outputs 2)
// on the last axis: gate = columns [0, 2), up = [2, 4) of x·[W|V].
// CHECK-LABEL: func.func @swiglu_split_gate_up
// CHECK-DAG: %[[W:.*]] = onnx.Constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[V:.*]] = onnx.Constant dense<{{\[}}[3.000000e+00, 4.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>
// CHECK: %[[G:.*]] = gated.glu silu %arg0, %[[W]], %[[V]] : tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT: return %[[G]]
func.func @swiglu_split_gate_up(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %n = "onnx.NoValue"() {value} : () -> none
  %wv = onnx.Constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %p = "onnx.MatMul"(%x, %wv) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %a, %b = "onnx.Split"(%p, %n) {axis = -1 : i64, num_outputs = 2 : i64} : (tensor<3x4xf32>, none) -> (tensor<3x2xf32>, tensor<3x2xf32>)
  %s = "onnx.Sigmoid"(%a) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %silu = "onnx.Mul"(%a, %s) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %y = "onnx.Mul"(%b, %silu) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// nn.Linear over 2-D rows as the dynamo exporter writes it: Gemm(x, W,
// transB = 1) with W [N, K] (Qwen3-Next's shared expert). The GLU reads the
// weights transposed to [K, N].
// CHECK-LABEL: func.func @swiglu_gemm_trans_b
// CHECK-DAG: %[[WT:.*]] = onnx.Constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[VT:.*]] = onnx.Constant dense<{{\[}}[5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[W:.*]] = "onnx.Transpose"(%[[WT]]) <{perm = array<i64: 1, 0>}>
// CHECK-DAG: %[[V:.*]] = "onnx.Transpose"(%[[VT]]) <{perm = array<i64: 1, 0>}>
// CHECK: %[[G:.*]] = gated.glu silu %arg0, %[[W]], %[[V]] : tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT: return %[[G]]
func.func @swiglu_gemm_trans_b(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %v = onnx.Constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %a = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<3x2xf32>, tensor<2x2xf32>, none) -> tensor<3x2xf32>
  %b = "onnx.Gemm"(%x, %v, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<3x2xf32>, tensor<2x2xf32>, none) -> tensor<3x2xf32>
  %s = "onnx.Sigmoid"(%a) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %silu = "onnx.Mul"(%a, %s) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %y = "onnx.Mul"(%silu, %b) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// GEGLU with the erf GELU decomposed: 0.5 · a · (1 + erf(a / √2)) · (x·V).
// CHECK-LABEL: func.func @geglu
// CHECK: gated.glu gelu %arg0
// CHECK-NOT: onnx.Erf
func.func @geglu(%x: tensor<2x16xf32>) -> tensor<2x24xf32> {
  %w = onnx.Constant dense<0.1> : tensor<16x24xf32>
  %v = onnx.Constant dense<0.2> : tensor<16x24xf32>
  %sqrt2 = onnx.Constant dense<1.41421354> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %a = "onnx.MatMul"(%x, %w) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %b = "onnx.MatMul"(%x, %v) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %d = "onnx.Div"(%a, %sqrt2) : (tensor<2x24xf32>, tensor<f32>) -> tensor<2x24xf32>
  %e = "onnx.Erf"(%d) : (tensor<2x24xf32>) -> tensor<2x24xf32>
  %p = "onnx.Add"(%e, %one) : (tensor<2x24xf32>, tensor<f32>) -> tensor<2x24xf32>
  %m = "onnx.Mul"(%a, %p) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %g = "onnx.Mul"(%m, %half) : (tensor<2x24xf32>, tensor<f32>) -> tensor<2x24xf32>
  %y = "onnx.Mul"(%g, %b) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  return %y : tensor<2x24xf32>
}

// -----

// GLU, ReGLU and bilinear.
// CHECK-LABEL: func.func @family
// CHECK: gated.glu sigmoid
// CHECK: gated.glu relu
// CHECK: gated.glu identity
func.func @family(%x: tensor<2x16xf32>) -> (tensor<2x24xf32>, tensor<2x24xf32>, tensor<2x24xf32>) {
  %w = onnx.Constant dense<0.1> : tensor<16x24xf32>
  %v = onnx.Constant dense<0.2> : tensor<16x24xf32>
  %a = "onnx.MatMul"(%x, %w) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %b = "onnx.MatMul"(%x, %v) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %s = "onnx.Sigmoid"(%a) : (tensor<2x24xf32>) -> tensor<2x24xf32>
  %y0 = "onnx.Mul"(%s, %b) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %r = "onnx.Relu"(%a) : (tensor<2x24xf32>) -> tensor<2x24xf32>
  %y1 = "onnx.Mul"(%b, %r) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %y2 = "onnx.Mul"(%a, %b) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  return %y0, %y1, %y2 : tensor<2x24xf32>, tensor<2x24xf32>, tensor<2x24xf32>
}

// -----

// Not a GLU: the two projections read different inputs; the weight is
// not a constant.
// CHECK-LABEL: func.func @negative
// CHECK-NOT: gated.glu
func.func @negative(%x: tensor<2x16xf32>, %z: tensor<2x16xf32>, %wv: tensor<16x24xf32>) -> (tensor<2x24xf32>, tensor<2x24xf32>) {
  %w = onnx.Constant dense<0.1> : tensor<16x24xf32>
  %a = "onnx.MatMul"(%x, %w) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %b = "onnx.MatMul"(%z, %w) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %s = "onnx.Sigmoid"(%a) : (tensor<2x24xf32>) -> tensor<2x24xf32>
  %y0 = "onnx.Mul"(%s, %b) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %c = "onnx.MatMul"(%x, %wv) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %y1 = "onnx.Mul"(%s, %c) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  return %y0, %y1 : tensor<2x24xf32>, tensor<2x24xf32>
}

// -----

// A routed expert's SwiGLU as the dynamo exporter writes transformers'
// batched_mm experts: each row's weights gathered by its expert index
// (GatherND of the experts' [E, 2F, D]), MatMul with x as a column, the
// halves split. gated.expert_glu reads the experts' gate and up rows
// [E, F, D] through the index (squeezed to [R]).
// CHECK-LABEL: func.func @expert_glu_batched
// CHECK: %[[E:.*]] = "onnx.Squeeze"(%arg1
// CHECK: gated.expert_glu silu %arg0, %{{.*}}, %{{.*}}, %[[E]] : tensor<?x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<?xi64> -> tensor<?x6xf32>
// CHECK-NOT: onnx.GatherND
func.func @expert_glu_batched(%x: tensor<?x8xf32>, %idx: tensor<?x1xi64>) -> tensor<?x6xf32> {
  %w = onnx.Constant dense<0.1> : tensor<4x12x8xf32>
  %ax = onnx.Constant dense<[2]> : tensor<1xi64>
  %n = "onnx.NoValue"() {value} : () -> none
  %g = "onnx.GatherND"(%w, %idx) {batch_dims = 0 : i64} : (tensor<4x12x8xf32>, tensor<?x1xi64>) -> tensor<?x12x8xf32>
  %xc = "onnx.Unsqueeze"(%x, %ax) : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<?x8x1xf32>
  %p3 = "onnx.MatMul"(%g, %xc) : (tensor<?x12x8xf32>, tensor<?x8x1xf32>) -> tensor<?x12x1xf32>
  %p = "onnx.Squeeze"(%p3, %ax) : (tensor<?x12x1xf32>, tensor<1xi64>) -> tensor<?x12xf32>
  %s:2 = "onnx.Split"(%p, %n) {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<?x12xf32>, none) -> (tensor<?x6xf32>, tensor<?x6xf32>)
  %sg = "onnx.Sigmoid"(%s#0) : (tensor<?x6xf32>) -> tensor<?x6xf32>
  %a = "onnx.Mul"(%s#0, %sg) : (tensor<?x6xf32>, tensor<?x6xf32>) -> tensor<?x6xf32>
  %y = "onnx.Mul"(%a, %s#1) : (tensor<?x6xf32>, tensor<?x6xf32>) -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}

// -----

// One step of the eager experts loop (the TorchScript export): expert e, a
// scalar, for all rows: MatMul(x, Transpose(Gather(W, e))), sliced halves.
// CHECK-LABEL: func.func @expert_glu_eager_step
// CHECK: gated.expert_glu silu %arg0, %{{.*}}, %{{.*}}, %arg1 : tensor<?x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<i64> -> tensor<?x6xf32>
func.func @expert_glu_eager_step(%x: tensor<?x8xf32>, %e: tensor<i64>) -> tensor<?x6xf32> {
  %w = onnx.Constant dense<0.1> : tensor<4x12x8xf32>
  %s0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[6]> : tensor<1xi64>
  %s2 = onnx.Constant dense<[12]> : tensor<1xi64>
  %ax = onnx.Constant dense<[1]> : tensor<1xi64>
  %n = "onnx.NoValue"() {value} : () -> none
  %we = "onnx.Gather"(%w, %e) {axis = 0 : i64} : (tensor<4x12x8xf32>, tensor<i64>) -> tensor<12x8xf32>
  %wt = "onnx.Transpose"(%we) {perm = array<i64: 1, 0>} : (tensor<12x8xf32>) -> tensor<8x12xf32>
  %p = "onnx.MatMul"(%x, %wt) : (tensor<?x8xf32>, tensor<8x12xf32>) -> tensor<?x12xf32>
  %a0 = "onnx.Slice"(%p, %s0, %s1, %ax, %n) : (tensor<?x12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x6xf32>
  %b0 = "onnx.Slice"(%p, %s1, %s2, %ax, %n) : (tensor<?x12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x6xf32>
  %sg = "onnx.Sigmoid"(%a0) : (tensor<?x6xf32>) -> tensor<?x6xf32>
  %a = "onnx.Mul"(%a0, %sg) : (tensor<?x6xf32>, tensor<?x6xf32>) -> tensor<?x6xf32>
  %y = "onnx.Mul"(%a, %b0) : (tensor<?x6xf32>, tensor<?x6xf32>) -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}

// -----

// Weights gathered from a tensor computed at run time (not the experts'
// constant), or by GatherND with batch dims: no expert GLU.
// CHECK-LABEL: func.func @expert_glu_not_constant
// CHECK-NOT: gated.expert_glu
// CHECK: onnx.Sigmoid
func.func @expert_glu_not_constant(%x: tensor<?x8xf32>, %e: tensor<i64>, %w: tensor<4x12x8xf32>) -> tensor<?x6xf32> {
  %s0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[6]> : tensor<1xi64>
  %s2 = onnx.Constant dense<[12]> : tensor<1xi64>
  %ax = onnx.Constant dense<[1]> : tensor<1xi64>
  %n = "onnx.NoValue"() {value} : () -> none
  %we = "onnx.Gather"(%w, %e) {axis = 0 : i64} : (tensor<4x12x8xf32>, tensor<i64>) -> tensor<12x8xf32>
  %wt = "onnx.Transpose"(%we) {perm = array<i64: 1, 0>} : (tensor<12x8xf32>) -> tensor<8x12xf32>
  %p = "onnx.MatMul"(%x, %wt) : (tensor<?x8xf32>, tensor<8x12xf32>) -> tensor<?x12xf32>
  %a0 = "onnx.Slice"(%p, %s0, %s1, %ax, %n) : (tensor<?x12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x6xf32>
  %b0 = "onnx.Slice"(%p, %s1, %s2, %ax, %n) : (tensor<?x12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x6xf32>
  %sg = "onnx.Sigmoid"(%a0) : (tensor<?x6xf32>) -> tensor<?x6xf32>
  %a = "onnx.Mul"(%a0, %sg) : (tensor<?x6xf32>, tensor<?x6xf32>) -> tensor<?x6xf32>
  %y = "onnx.Mul"(%a, %b0) : (tensor<?x6xf32>, tensor<?x6xf32>) -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}

// -----

// GPT-OSS's experts (dynamo, batched): x as a row times the experts'
// [E, D, 2F] (in, out) gathered per row, plus their bias, gate and up
// interleaved (columns 0::2, 1::2), min(gate, 7), clamp(up, -7, 7),
// (up + 1)·gate·σ(1.702·gate). The weights become [E, F, D] (columns
// 0::2 / 1::2, transposed at compile time), the biases [E, F].
// CHECK-LABEL: func.func @expert_glu_gpt_oss
// CHECK: gated.expert_glu silu %arg0, %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<4x3xf32>) {alpha = 1.702000e+00 : f32, limit = 7.000000e+00 : f32, up_offset = 1.000000e+00 : f32} : tensor<?x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<?xi64> -> tensor<?x3xf32>
// CHECK-NOT: onnx.Clip
func.func @expert_glu_gpt_oss(%x: tensor<?x8xf32>, %idx: tensor<?x1xi64>) -> tensor<?x3xf32> {
  %w = onnx.Constant dense<0.1> : tensor<4x8x6xf32>
  %bw = onnx.Constant dense<0.2> : tensor<4x6xf32>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %s0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %big = onnx.Constant dense<[6]> : tensor<1xi64>
  %st = onnx.Constant dense<[2]> : tensor<1xi64>
  %lim = onnx.Constant dense<7.0> : tensor<f32>
  %nlim = onnx.Constant dense<-7.0> : tensor<f32>
  %alpha = onnx.Constant dense<1.702> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %n = "onnx.NoValue"() {value} : () -> none
  %g = "onnx.GatherND"(%w, %idx) {batch_dims = 0 : i64} : (tensor<4x8x6xf32>, tensor<?x1xi64>) -> tensor<?x8x6xf32>
  %gb = "onnx.GatherND"(%bw, %idx) {batch_dims = 0 : i64} : (tensor<4x6xf32>, tensor<?x1xi64>) -> tensor<?x6xf32>
  %xr = "onnx.Unsqueeze"(%x, %ax1) : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<?x1x8xf32>
  %p3 = "onnx.MatMul"(%xr, %g) : (tensor<?x1x8xf32>, tensor<?x8x6xf32>) -> tensor<?x1x6xf32>
  %pm = "onnx.Squeeze"(%p3, %ax1) : (tensor<?x1x6xf32>, tensor<1xi64>) -> tensor<?x6xf32>
  %p = "onnx.Add"(%pm, %gb) : (tensor<?x6xf32>, tensor<?x6xf32>) -> tensor<?x6xf32>
  %ga = "onnx.Slice"(%p, %s0, %big, %ax1, %st) : (tensor<?x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x3xf32>
  %up = "onnx.Slice"(%p, %s1, %big, %ax1, %st) : (tensor<?x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x3xf32>
  %gc = "onnx.Clip"(%ga, %n, %lim) : (tensor<?x3xf32>, none, tensor<f32>) -> tensor<?x3xf32>
  %uc = "onnx.Clip"(%up, %nlim, %lim) : (tensor<?x3xf32>, tensor<f32>, tensor<f32>) -> tensor<?x3xf32>
  %ga2 = "onnx.Mul"(%gc, %alpha) : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x3xf32>
  %sg = "onnx.Sigmoid"(%ga2) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %glu = "onnx.Mul"(%gc, %sg) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %u1 = "onnx.Add"(%uc, %one) : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x3xf32>
  %y = "onnx.Mul"(%u1, %glu) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// The clamps disagree (gate at 7, up at ±5): no one limit, not raised.
// CHECK-LABEL: func.func @expert_glu_limits_differ
// CHECK-NOT: gated.expert_glu
// CHECK: onnx.Clip
func.func @expert_glu_limits_differ(%x: tensor<?x8xf32>, %e: tensor<i64>) -> tensor<?x3xf32> {
  %w = onnx.Constant dense<0.1> : tensor<4x8x6xf32>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %s0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %big = onnx.Constant dense<[6]> : tensor<1xi64>
  %st = onnx.Constant dense<[2]> : tensor<1xi64>
  %lim = onnx.Constant dense<7.0> : tensor<f32>
  %ulim = onnx.Constant dense<5.0> : tensor<f32>
  %nulim = onnx.Constant dense<-5.0> : tensor<f32>
  %alpha = onnx.Constant dense<1.702> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %n = "onnx.NoValue"() {value} : () -> none
  %we = "onnx.Gather"(%w, %e) {axis = 0 : i64} : (tensor<4x8x6xf32>, tensor<i64>) -> tensor<8x6xf32>
  %p = "onnx.MatMul"(%x, %we) : (tensor<?x8xf32>, tensor<8x6xf32>) -> tensor<?x6xf32>
  %ga = "onnx.Slice"(%p, %s0, %big, %ax1, %st) : (tensor<?x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x3xf32>
  %up = "onnx.Slice"(%p, %s1, %big, %ax1, %st) : (tensor<?x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x3xf32>
  %gc = "onnx.Clip"(%ga, %n, %lim) : (tensor<?x3xf32>, none, tensor<f32>) -> tensor<?x3xf32>
  %uc = "onnx.Clip"(%up, %nulim, %ulim) : (tensor<?x3xf32>, tensor<f32>, tensor<f32>) -> tensor<?x3xf32>
  %ga2 = "onnx.Mul"(%gc, %alpha) : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x3xf32>
  %sg = "onnx.Sigmoid"(%ga2) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %glu = "onnx.Mul"(%gc, %sg) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %u1 = "onnx.Add"(%uc, %one) : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x3xf32>
  %y = "onnx.Mul"(%u1, %glu) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// Not a GLU: SiLU of one projection, x·W·σ(x·W), then times a value that
// is no projection (Mamba2's y·silu(z), y the SSD's output).
// CHECK-LABEL: func.func @silu_alone_is_no_glu
// CHECK-NOT: gated.glu
func.func @silu_alone_is_no_glu(%x: tensor<2x8xf32>, %y: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %w = onnx.Constant dense<0.1> : tensor<8x16xf32>
  %z = "onnx.MatMul"(%x, %w) : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %s = "onnx.Sigmoid"(%z) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %silu = "onnx.Mul"(%z, %s) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %o = "onnx.Mul"(%y, %silu) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %o : tensor<2x16xf32>
}

// -----

// RecurrentGemma's MLP: both projections are nn.Linear with a bias (an Add
// of a constant [F] after the MatMul, either order), act = GELU (tanh).
// CHECK-LABEL: func.func @geglu_biases
// CHECK: %[[G:.*]] = gated.glu gelu_tanh %arg0, %{{.*}}, %{{.*}} w_bias(%{{.*}} : tensor<24xf32>) v_bias(%{{.*}} : tensor<24xf32>) : tensor<2x16xf32>, tensor<16x24xf32>, tensor<16x24xf32> -> tensor<2x24xf32>
// CHECK-NEXT: return %[[G]]
func.func @geglu_biases(%x: tensor<2x16xf32>) -> tensor<2x24xf32> {
  %w = onnx.Constant dense<0.1> : tensor<16x24xf32>
  %v = onnx.Constant dense<0.2> : tensor<16x24xf32>
  %bw = onnx.Constant dense<0.3> : tensor<24xf32>
  %bv = onnx.Constant dense<0.4> : tensor<24xf32>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %c = onnx.Constant dense<0.7978845608> : tensor<f32>
  %k = onnx.Constant dense<0.044715> : tensor<f32>
  %three = onnx.Constant dense<3.0> : tensor<f32>
  %aw = "onnx.MatMul"(%x, %w) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %a = "onnx.Add"(%aw, %bw) : (tensor<2x24xf32>, tensor<24xf32>) -> tensor<2x24xf32>
  %bm = "onnx.MatMul"(%x, %v) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %b = "onnx.Add"(%bv, %bm) : (tensor<24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %cube = "onnx.Pow"(%a, %three) : (tensor<2x24xf32>, tensor<f32>) -> tensor<2x24xf32>
  %kc = "onnx.Mul"(%k, %cube) : (tensor<f32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %in = "onnx.Add"(%a, %kc) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %sc = "onnx.Mul"(%c, %in) : (tensor<f32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %th = "onnx.Tanh"(%sc) : (tensor<2x24xf32>) -> tensor<2x24xf32>
  %op = "onnx.Add"(%th, %one) : (tensor<2x24xf32>, tensor<f32>) -> tensor<2x24xf32>
  %ha = "onnx.Mul"(%half, %a) : (tensor<f32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %gelu = "onnx.Mul"(%ha, %op) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %y = "onnx.Mul"(%gelu, %b) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  return %y : tensor<2x24xf32>
}

// -----

// A projection squared (p·p, as TorchScript writes the cube of a GELU's
// tanh form) is no bilinear gate.
// CHECK-LABEL: func.func @square_is_no_glu
// CHECK-NOT: gated.glu
func.func @square_is_no_glu(%x: tensor<2x16xf32>) -> tensor<2x24xf32> {
  %w = onnx.Constant dense<0.1> : tensor<16x24xf32>
  %bw = onnx.Constant dense<0.3> : tensor<24xf32>
  %aw = "onnx.MatMul"(%x, %w) : (tensor<2x16xf32>, tensor<16x24xf32>) -> tensor<2x24xf32>
  %a = "onnx.Add"(%bw, %aw) : (tensor<24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  %y = "onnx.Mul"(%a, %a) : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  return %y : tensor<2x24xf32>
}
