// RUN: gatec-opt %s --raise-attention -split-input-file | FileCheck %s

// softmax(QKᵀ / √d + causal) V with a constant causal mask -> causal flag;
// then the G1 gate y ⊙ σ(g) in the [B, T, H, D] layout.
// CHECK-LABEL: func.func @causal_g1
// CHECK: %[[G:.*]] = "onnx.Transpose"(%{{.*}}) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK: %[[A:.*]] = gated.attention %arg0, %arg1, %arg2 gate(%[[G]] : tensor<1x2x3x4xf32>, sigmoid, elementwise, multiply) {causal, scale = 5.000000e-01 : f32}
// CHECK-NOT: onnx.Softmax
// CHECK-NOT: onnx.Sigmoid
func.func @causal_g1(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %g: tensor<1x3x8xf32>) -> tensor<1x3x2x4xf32> {
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %mask = onnx.Constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %shape = onnx.Constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %sc = "onnx.Div"(%s, %two) : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %m = "onnx.Where"(%mask, %ninf, %sc) : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = "onnx.Softmax"(%m) {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %yt = "onnx.Transpose"(%y) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %sg = "onnx.Sigmoid"(%g) : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %sgr = "onnx.Reshape"(%sg, %shape) : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %o = "onnx.Mul"(%yt, %sgr) : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  return %o : tensor<1x3x2x4xf32>
}

// -----

// G1 in the attention's own [B, H, T, D] layout: a gate computed there
// (σ(g) with g [B, H, T, D]) becomes the gate operand as it is.
// CHECK-LABEL: func.func @g1_head_major
// CHECK: %[[A:.*]] = gated.attention %arg0, %arg1, %arg2 gate(%arg3 : tensor<1x2x3x4xf32>, sigmoid, elementwise, multiply) {causal, scale = 5.000000e-01 : f32}
// CHECK-NOT: onnx.Mul
// CHECK: return %[[A]]
func.func @g1_head_major(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %g: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %mask = onnx.Constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %sc = "onnx.Div"(%s, %two) : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %m = "onnx.Where"(%mask, %ninf, %sc) : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = "onnx.Softmax"(%m) {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %sg = "onnx.Sigmoid"(%g) : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %o = "onnx.Mul"(%sg, %y) : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// A headwise gate computed per token ([B, T, H]) and transposed into the
// head-major layout ([B, H, T, 1]) before the multiply.
// CHECK-LABEL: func.func @g1_head_major_headwise
// CHECK: %[[G4:.*]] = "onnx.Reshape"(%arg3, %{{.*}}) {{.*}} -> tensor<1x3x2x1xf32>
// CHECK: %[[G:.*]] = "onnx.Transpose"(%[[G4]]) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x3x2x1xf32>) -> tensor<1x2x3x1xf32>
// CHECK: %[[A:.*]] = gated.attention %arg0, %arg1, %arg2 gate(%[[G]] : tensor<1x2x3x1xf32>, sigmoid, headwise, multiply) {causal, scale = 5.000000e-01 : f32}
// CHECK-NOT: onnx.Mul
// CHECK: return %[[A]]
func.func @g1_head_major_headwise(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %g: tensor<1x3x2xf32>) -> tensor<1x2x3x4xf32> {
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %mask = onnx.Constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %shape = onnx.Constant dense<[1, 3, 2, 1]> : tensor<4xi64>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %sc = "onnx.Div"(%s, %two) : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %m = "onnx.Where"(%mask, %ninf, %sc) : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = "onnx.Softmax"(%m) {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %sg = "onnx.Sigmoid"(%g) : (tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %sgr = "onnx.Reshape"(%sg, %shape) : (tensor<1x3x2xf32>, tensor<4xi64>) -> tensor<1x3x2x1xf32>
  %sgt = "onnx.Transpose"(%sgr) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x1xf32>) -> tensor<1x2x3x1xf32>
  %o = "onnx.Mul"(%y, %sgt) : (tensor<1x2x3x4xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Not a G1 gate: σ(g) broadcast over the batch ([1, H, T, D] against a
// batch of 2) is not a per-query gate of this attention; the Mul stays.
// CHECK-LABEL: func.func @g1_head_major_batch_broadcast
// CHECK: gated.attention %arg0, %arg1, %arg2 {causal, scale = 5.000000e-01 : f32}
// CHECK: "onnx.Mul"
func.func @g1_head_major_batch_broadcast(%q: tensor<2x2x3x4xf32>, %k: tensor<2x2x3x4xf32>, %v: tensor<2x2x3x4xf32>, %g: tensor<1x2x3x4xf32>) -> tensor<2x2x3x4xf32> {
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %mask = onnx.Constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x3x4xf32>) -> tensor<2x2x4x3xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %sc = "onnx.Div"(%s, %two) : (tensor<2x2x3x3xf32>, tensor<f32>) -> tensor<2x2x3x3xf32>
  %m = "onnx.Where"(%mask, %ninf, %sc) : (tensor<3x3xi1>, tensor<f32>, tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %p = "onnx.Softmax"(%m) {axis = -1 : i64} : (tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  %sg = "onnx.Sigmoid"(%g) : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %o = "onnx.Mul"(%y, %sg) : (tensor<2x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  return %o : tensor<2x2x3x4xf32>
}

// -----

// A boolean mask that is not causal stays a mask (true = attend, so the
// masked_fill condition is negated); no scale means scale 1.
// CHECK-LABEL: func.func @other_mask
// CHECK: %[[N:.*]] = "onnx.Not"(%arg3)
// CHECK: gated.attention %arg0, %arg1, %arg2 mask(%[[N]] : tensor<3x3xi1>) {scale = 1.000000e+00 : f32}
func.func @other_mask(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %mask: tensor<3x3xi1>) -> tensor<1x2x3x4xf32> {
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %m = "onnx.Where"(%mask, %ninf, %s) : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = "onnx.Softmax"(%m) {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// -----

// Not attention: the softmax is over the query axis; the masked value is
// not -inf (a soft bias of -5 changes the result): both stay.
// CHECK-LABEL: func.func @negative
// CHECK-NOT: gated.attention
func.func @negative(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %mask: tensor<3x3xi1>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %five = onnx.Constant dense<-5.0> : tensor<f32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = "onnx.Softmax"(%s) {axis = 2 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %m = "onnx.Where"(%mask, %five, %s) : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p2 = "onnx.Softmax"(%m) {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y2 = "onnx.MatMul"(%p2, %v) : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y, %y2 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// ONNX Attention-23 with packed 3-D inputs [B, S, H·D] (GQA 4:2): the heads
// are split around gated.attention; scale defaults to 1/√D.
// CHECK-LABEL: func.func @onnx_attention_3d
// CHECK: gated.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 0.353553385 : f32} : tensor<2x4x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32> -> tensor<2x4x5x8xf32>
// CHECK-NOT: onnx.Attention
func.func @onnx_attention_3d(%q: tensor<2x5x32xf32>, %k: tensor<2x5x16xf32>, %v: tensor<2x5x16xf32>) -> tensor<2x5x32xf32> {
  %n = onnx.NoValue
  %y, %pk, %pv, %qk = "onnx.Attention"(%q, %k, %v, %n, %n, %n, %n) {q_num_heads = 4 : i64, kv_num_heads = 2 : i64, is_causal = 1 : i64} : (tensor<2x5x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>, none, none, none, none) -> (tensor<2x5x32xf32>, none, none, none)
  return %y : tensor<2x5x32xf32>
}

// -----

// With a KV cache (past_key/past_value) the op stays as it is.
// CHECK-LABEL: func.func @onnx_attention_cache
// CHECK: onnx.Attention
func.func @onnx_attention_cache(%q: tensor<1x2x3x8xf32>, %pk: tensor<1x2x4x8xf32>) -> tensor<1x2x3x8xf32> {
  %n = onnx.NoValue
  %y, %k2, %v2, %qk = "onnx.Attention"(%q, %q, %q, %n, %pk, %pk, %n) : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, none, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, none) -> (tensor<1x2x3x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>, none)
  return %y : tensor<1x2x3x8xf32>
}

// -----

// The causal mask of torch's SDPA math path as the TorchScript exporter
// writes it with dynamic sizes: ones(T, S) expanded from Shape(q)[-2] and
// Shape(k)[-2], Trilu (lower), Equal 0 -> -inf, added to the scores. Its
// [T, S] are provably the scores' (the same dims of q and k): causal.
// CHECK-LABEL: func.func @runtime_band_causal
// CHECK: gated.attention %arg0, %arg1, %arg2 {causal, scale = 5.000000e-01 : f32}
// CHECK-NOT: onnx.Trilu
func.func @runtime_band_causal(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<1xf32>
  %zero = onnx.Constant dense<0.0> : tensor<1xf32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<1xf32>
  %m2 = onnx.Constant dense<-2> : tensor<1xi64>
  %m1 = onnx.Constant dense<-1> : tensor<1xi64>
  %n = onnx.NoValue
  %sq = "onnx.Shape"(%q) : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %sk = "onnx.Shape"(%k) : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %t = "onnx.Slice"(%sq, %m2, %m1, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %s = "onnx.Slice"(%sk, %m2, %m1, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %ts = "onnx.Concat"(%t, %s) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %ones = "onnx.Expand"(%one, %ts) : (tensor<1xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %band = "onnx.Trilu"(%ones, %n) {upper = 0 : i64} : (tensor<?x?xf32>, none) -> tensor<?x?xf32>
  %out = "onnx.Equal"(%band, %zero) : (tensor<?x?xf32>, tensor<1xf32>) -> tensor<?x?xi1>
  %mask = "onnx.Where"(%out, %ninf, %zero) : (tensor<?x?xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?xf32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %sc = "onnx.MatMul"(%q, %kt) : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %scaled = "onnx.Mul"(%sc, %half) : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %a = "onnx.Add"(%scaled, %mask) : (tensor<?x2x?x?xf32>, tensor<?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.Softmax"(%a) {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// The same band built from another input's length: its rows may be 1 (or
// differ) at run time while T is not, which is not causal: a mask.
// CHECK-LABEL: func.func @runtime_band_other_size
// CHECK: gated.attention %arg0, %arg1, %arg2 mask(
// CHECK-NOT: causal
func.func @runtime_band_other_size(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %len: tensor<?xf32>) -> tensor<?x2x?x4xf32> {
  %one = onnx.Constant dense<1.0> : tensor<1xf32>
  %zero = onnx.Constant dense<0.0> : tensor<1xf32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<1xf32>
  %m2 = onnx.Constant dense<-2> : tensor<1xi64>
  %m1 = onnx.Constant dense<-1> : tensor<1xi64>
  %n = onnx.NoValue
  %sl = "onnx.Shape"(%len) : (tensor<?xf32>) -> tensor<1xi64>
  %sk = "onnx.Shape"(%k) : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %s = "onnx.Slice"(%sk, %m2, %m1, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %ts = "onnx.Concat"(%sl, %s) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %ones = "onnx.Expand"(%one, %ts) : (tensor<1xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %band = "onnx.Trilu"(%ones, %n) {upper = 0 : i64} : (tensor<?x?xf32>, none) -> tensor<?x?xf32>
  %out = "onnx.Equal"(%band, %zero) : (tensor<?x?xf32>, tensor<1xf32>) -> tensor<?x?xi1>
  %mask = "onnx.Where"(%out, %ninf, %zero) : (tensor<?x?xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?xf32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %sc = "onnx.MatMul"(%q, %kt) : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %a = "onnx.Add"(%sc, %mask) : (tensor<?x2x?x?xf32>, tensor<?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.Softmax"(%a) {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// transformers' mask as the TorchScript exporter writes it for SDPA: the
// causal factor key_iota <= query_iota over Range iotas of the scores' S and
// T, And the key padding, as an additive Where(m, 0, -inf); softmax guarded
// by Where(IsNaN(p), 0, p). The causal factor becomes the flag, the padding
// the mask operand ([B, 1, 1, S], not a [B, 1, T, S] float), the guard goes.
// CHECK-LABEL: func.func @ts_sdpa_causal_padding
// CHECK: %[[A:.*]] = gated.attention %arg0, %arg1, %arg2 mask(%arg3 : tensor<?x1x1x?xi1>) {causal, scale = 5.000000e-01 : f32}
// CHECK-NOT: onnx.IsNaN
// CHECK-NOT: onnx.Softmax
// CHECK: return %[[A]]
func.func @ts_sdpa_causal_padding(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %pad: tensor<?x1x1x?xi1>) -> tensor<?x2x?x4xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %c2 = onnx.Constant dense<2> : tensor<i64>
  %a012 = onnx.Constant dense<[0, 1, 2]> : tensor<3xi64>
  %a013 = onnx.Constant dense<[0, 1, 3]> : tensor<3xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %qs = "onnx.Shape"(%q) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %ks = "onnx.Shape"(%k) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %t = "onnx.Gather"(%qs, %c2) <{axis = 0 : i64}> : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %s = "onnx.Gather"(%ks, %c2) <{axis = 0 : i64}> : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %ti = "onnx.Range"(%c0, %t, %c1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %si = "onnx.Range"(%c0, %s, %c1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %t4 = "onnx.Unsqueeze"(%ti, %a013) : (tensor<?xi64>, tensor<3xi64>) -> tensor<1x1x?x1xi64>
  %s4 = "onnx.Unsqueeze"(%si, %a012) : (tensor<?xi64>, tensor<3xi64>) -> tensor<1x1x1x?xi64>
  %causal = "onnx.LessOrEqual"(%s4, %t4) : (tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x?xi1>
  %m = "onnx.And"(%causal, %pad) : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %add = "onnx.Where"(%m, %zero, %ninf) : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %sc = "onnx.MatMul"(%q, %kt) : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %scs = "onnx.Mul"(%sc, %half) : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %sm = "onnx.Add"(%scs, %add) : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.Softmax"(%sm) {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %nan = "onnx.IsNaN"(%p) : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xi1>
  %pg = "onnx.Where"(%nan, %zero, %p) : (tensor<?x2x?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %y = "onnx.MatMul"(%pg, %v) : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// query_iota <= key_iota (j >= t) is not causal: the mask stays a mask.
// CHECK-LABEL: func.func @anti_causal_is_a_mask
// CHECK: gated.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<?x1x?x?xf32>) {scale = 5.000000e-01 : f32}
func.func @anti_causal_is_a_mask(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %pad: tensor<?x1x1x?xi1>) -> tensor<?x2x?x4xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %c2 = onnx.Constant dense<2> : tensor<i64>
  %a012 = onnx.Constant dense<[0, 1, 2]> : tensor<3xi64>
  %a013 = onnx.Constant dense<[0, 1, 3]> : tensor<3xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %qs = "onnx.Shape"(%q) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %ks = "onnx.Shape"(%k) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %t = "onnx.Gather"(%qs, %c2) <{axis = 0 : i64}> : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %s = "onnx.Gather"(%ks, %c2) <{axis = 0 : i64}> : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %ti = "onnx.Range"(%c0, %t, %c1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %si = "onnx.Range"(%c0, %s, %c1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %t4 = "onnx.Unsqueeze"(%ti, %a013) : (tensor<?xi64>, tensor<3xi64>) -> tensor<1x1x?x1xi64>
  %s4 = "onnx.Unsqueeze"(%si, %a012) : (tensor<?xi64>, tensor<3xi64>) -> tensor<1x1x1x?xi64>
  %anti = "onnx.LessOrEqual"(%t4, %s4) : (tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x?x?xi1>
  %m = "onnx.And"(%anti, %pad) : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %add = "onnx.Where"(%m, %zero, %ninf) : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %sc = "onnx.MatMul"(%q, %kt) : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %scs = "onnx.Mul"(%sc, %half) : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %sm = "onnx.Add"(%scs, %add) : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.Softmax"(%sm) {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// An iota over a size not provably the scores' key length (a dim of the
// padding mask, not of K) is not the causal factor.
// CHECK-LABEL: func.func @iota_of_another_size
// CHECK: gated.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<?x1x?x?xf32>) {scale = 5.000000e-01 : f32}
func.func @iota_of_another_size(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %pad: tensor<?x1x1x?xi1>) -> tensor<?x2x?x4xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %c2 = onnx.Constant dense<2> : tensor<i64>
  %c3 = onnx.Constant dense<3> : tensor<i64>
  %a012 = onnx.Constant dense<[0, 1, 2]> : tensor<3xi64>
  %a013 = onnx.Constant dense<[0, 1, 3]> : tensor<3xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %qs = "onnx.Shape"(%q) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %ps = "onnx.Shape"(%pad) <{start = 0 : i64}> : (tensor<?x1x1x?xi1>) -> tensor<4xi64>
  %t = "onnx.Gather"(%qs, %c2) <{axis = 0 : i64}> : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %s = "onnx.Gather"(%ps, %c3) <{axis = 0 : i64}> : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %ti = "onnx.Range"(%c0, %t, %c1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %si = "onnx.Range"(%c0, %s, %c1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %t4 = "onnx.Unsqueeze"(%ti, %a013) : (tensor<?xi64>, tensor<3xi64>) -> tensor<1x1x?x1xi64>
  %s4 = "onnx.Unsqueeze"(%si, %a012) : (tensor<?xi64>, tensor<3xi64>) -> tensor<1x1x1x?xi64>
  %causal = "onnx.LessOrEqual"(%s4, %t4) : (tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x?xi1>
  %m = "onnx.And"(%causal, %pad) : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %add = "onnx.Where"(%m, %zero, %ninf) : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %sc = "onnx.MatMul"(%q, %kt) : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %scs = "onnx.Mul"(%sc, %half) : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %sm = "onnx.Add"(%scs, %add) : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.Softmax"(%sm) {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// Kᵀ as the dynamo exporter's SDPA writes it: K flattened to [B·H, S, D],
// transposed, and reshaped back to [B, H, D, S] with sizes read from
// Shape(K). The attention reads K itself.
// CHECK-LABEL: func.func @dynamo_flat_key_transpose
// CHECK: %[[A:.*]] = gated.attention %arg0, %arg1, %arg2 {scale = 5.000000e-01 : f32}
// CHECK-NOT: onnx.Reshape
// CHECK: return %[[A]]
func.func @dynamo_flat_key_transpose(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %n = "onnx.NoValue"() {value} : () -> none
  %m1 = onnx.Constant dense<[-1]> : tensor<1xi64>
  %m2 = onnx.Constant dense<[-2]> : tensor<1xi64>
  %z = onnx.Constant dense<[0]> : tensor<1xi64>
  %big = onnx.Constant dense<[9223372036854775807]> : tensor<1xi64>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %ks = "onnx.Shape"(%k) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %d = "onnx.Slice"(%ks, %m1, %big, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %s = "onnx.Slice"(%ks, %m2, %m1, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %bh = "onnx.Slice"(%ks, %z, %m2, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<2xi64>
  %in = "onnx.Concat"(%m1, %s, %d) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %k3 = "onnx.Reshape"(%k, %in) : (tensor<?x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  %k3t = "onnx.Transpose"(%k3) {perm = array<i64: 0, 2, 1>} : (tensor<?x?x4xf32>) -> tensor<?x4x?xf32>
  %out = "onnx.Concat"(%bh, %d, %s) {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kt = "onnx.Reshape"(%k3t, %out) : (tensor<?x4x?xf32>, tensor<4xi64>) -> tensor<?x2x4x?xf32>
  %qs = "onnx.Mul"(%q, %half) : (tensor<?x2x?x4xf32>, tensor<f32>) -> tensor<?x2x?x4xf32>
  %sc = "onnx.MatMul"(%qs, %kt) : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.Softmax"(%sc) {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// Qwen3-Next's G1 gate as the dynamo exporter writes it: the attention
// output goes through view(B, -1, T, D) (a Reshape to its own shape) before
// the head transpose and the gate multiply (sizes read from the input, as
// the exporter reads them).
// CHECK-LABEL: func.func @g1_after_identity_reshape
// CHECK: gated.attention %arg0, %arg1, %arg2 gate(%{{.*}} : tensor<?x2x?x4xf32>, sigmoid, elementwise, multiply)
// CHECK-NOT: onnx.Sigmoid
func.func @g1_after_identity_reshape(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %g: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %n = "onnx.NoValue"() {value} : () -> none
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %m1 = onnx.Constant dense<[-1]> : tensor<1xi64>
  %c0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %c1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %c2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %c3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %d4 = onnx.Constant dense<[4]> : tensor<1xi64>
  %d8 = onnx.Constant dense<[8]> : tensor<1xi64>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = "onnx.Mul"(%s, %half) : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.Softmax"(%ss) {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %ys = "onnx.Shape"(%q) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %b = "onnx.Slice"(%ys, %c0, %c1, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %t = "onnx.Slice"(%ys, %c2, %c3, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %view = "onnx.Concat"(%b, %m1, %t, %d4) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %yv = "onnx.Reshape"(%y, %view) {allowzero = 1 : i64} : (tensor<?x2x?x4xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  %yt = "onnx.Transpose"(%yv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x2x?x4xf32>) -> tensor<?x?x2x4xf32>
  %flat = "onnx.Concat"(%b, %t, %d8) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %yf = "onnx.Reshape"(%yt, %flat) {allowzero = 1 : i64} : (tensor<?x?x2x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %sg = "onnx.Sigmoid"(%g) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %o = "onnx.Mul"(%yf, %sg) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// The same as the TorchScript exporter writes it: the view's batch is read
// from the attention output itself (Shape(attention), here also returned:
// it becomes the query's [B, H, T] and the value's Dv), its sequence from
// the query.
// CHECK-LABEL: func.func @g1_after_identity_reshape_ts
// CHECK: %[[QS:.*]] = "onnx.Shape"(%arg0) <{end = 3 : i64, start = 0 : i64}>
// CHECK: %[[S:.*]] = "onnx.Concat"(%[[QS]], %{{.*}}) <{axis = 0 : i64}>
// CHECK: gated.attention %arg0, %arg1, %arg2 gate(%{{.*}} : tensor<?x2x?x4xf32>, sigmoid, elementwise, multiply)
// CHECK-NOT: onnx.Sigmoid
// CHECK: return %{{.*}}, %[[S]]
func.func @g1_after_identity_reshape_ts(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %g: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<4xi64>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %c0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %c1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %c2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %c3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %d2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %d4 = onnx.Constant dense<[4]> : tensor<1xi64>
  %d8 = onnx.Constant dense<[8]> : tensor<1xi64>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = "onnx.Mul"(%s, %half) : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.Softmax"(%ss) {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %ys = "onnx.Shape"(%y) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %qs = "onnx.Shape"(%q) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %b = "onnx.Slice"(%ys, %c0, %c1, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %t = "onnx.Slice"(%qs, %c2, %c3, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %view = "onnx.Concat"(%b, %d2, %t, %d4) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %yv = "onnx.Reshape"(%y, %view) {allowzero = 0 : i64} : (tensor<?x2x?x4xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  %yt = "onnx.Transpose"(%yv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x2x?x4xf32>) -> tensor<?x?x2x4xf32>
  %bq = "onnx.Slice"(%qs, %c0, %c1, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %flat = "onnx.Concat"(%bq, %t, %d8) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %yf = "onnx.Reshape"(%yt, %flat) {allowzero = 0 : i64} : (tensor<?x?x2x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %sg = "onnx.Sigmoid"(%g) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %o = "onnx.Mul"(%yf, %sg) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %o, %ys : tensor<?x?x8xf32>, tensor<4xi64>
}

// -----

// transformers' sliding window (Mistral, W = 4) as the TorchScript exporter
// writes it: key_iota > query_iota - 4, And causal And padding. The window
// is j >= t - 3: left_window = 3, no [1, 1, T, S] mask.
// CHECK-LABEL: func.func @sliding_window
// CHECK: %[[A:.*]] = gated.attention %arg0, %arg1, %arg2 mask(%arg3 : tensor<?x1x1x?xi1>) {causal, left_window = 3 : i64, scale = 5.000000e-01 : f32}
// CHECK: return %[[A]]
func.func @sliding_window(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %pad: tensor<?x1x1x?xi1>) -> tensor<?x2x?x4xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %c2 = onnx.Constant dense<2> : tensor<i64>
  %a012 = onnx.Constant dense<[0, 1, 2]> : tensor<3xi64>
  %a013 = onnx.Constant dense<[0, 1, 3]> : tensor<3xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %qs = "onnx.Shape"(%q) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %ks = "onnx.Shape"(%k) <{start = 0 : i64}> : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %t = "onnx.Gather"(%qs, %c2) <{axis = 0 : i64}> : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %s = "onnx.Gather"(%ks, %c2) <{axis = 0 : i64}> : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %ti = "onnx.Range"(%c0, %t, %c1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %si = "onnx.Range"(%c0, %s, %c1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %t4 = "onnx.Unsqueeze"(%ti, %a013) : (tensor<?xi64>, tensor<3xi64>) -> tensor<1x1x?x1xi64>
  %s4 = "onnx.Unsqueeze"(%si, %a012) : (tensor<?xi64>, tensor<3xi64>) -> tensor<1x1x1x?xi64>
  %causal = "onnx.LessOrEqual"(%s4, %t4) : (tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x?xi1>
  %w = onnx.Constant dense<4> : tensor<i64>
  %tw = "onnx.Sub"(%t4, %w) : (tensor<1x1x?x1xi64>, tensor<i64>) -> tensor<1x1x?x1xi64>
  %win = "onnx.Greater"(%s4, %tw) : (tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x?xi1>
  %cw = "onnx.And"(%causal, %win) : (tensor<1x1x?x?xi1>, tensor<1x1x?x?xi1>) -> tensor<1x1x?x?xi1>
  %m = "onnx.And"(%cw, %pad) : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %add = "onnx.Where"(%m, %zero, %ninf) : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %sc = "onnx.MatMul"(%q, %kt) : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %scs = "onnx.Mul"(%sc, %half) : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %sm = "onnx.Add"(%scs, %add) : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.Softmax"(%sm) {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %nan = "onnx.IsNaN"(%p) : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xi1>
  %pg = "onnx.Where"(%nan, %zero, %p) : (tensor<?x2x?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %y = "onnx.MatMul"(%pg, %v) : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// transformers' pack_gqa (a decode step through the TorchScript exporter):
// one query token, 4 query heads on 2 KV heads, the query [B, 4, 1, 8]
// packed to [B, 2, 2, 8] and the result reshaped back to [B, 4, 1, 8]. The
// attention is raised on the unpacked query (GQA), so the G1 gate after it
// is raised too; the packed shape read by Shape is recomputed from the
// packed query and the value.
// CHECK-LABEL: func.func @unpack_single_token_gqa
// CHECK: %[[A:.*]] = gated.attention %arg0, %arg1, %arg2 mask(%arg3 : tensor<?x1x1x?xf32>) gate(%{{.*}} : tensor<?x4x1x8xf32>, sigmoid, elementwise, multiply) {scale = 5.000000e-01 : f32} : tensor<?x4x1x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x4x1x8xf32>
// CHECK-NOT: onnx.Softmax
// CHECK-NOT: onnx.Sigmoid
func.func @unpack_single_token_gqa(%q: tensor<?x4x1x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>, %m: tensor<?x1x1x?xf32>, %g: tensor<?x1x32xf32>) -> (tensor<?x1x32xf32>, tensor<4xi64>) {
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %packed = onnx.Constant dense<[0, 2, 2, 8]> : tensor<4xi64>
  %back = onnx.Constant dense<[0, 4, 1, 8]> : tensor<4xi64>
  %flat = onnx.Constant dense<[0, 1, 32]> : tensor<3xi64>
  %qp = "onnx.Reshape"(%q, %packed) {allowzero = 0 : i64} : (tensor<?x4x1x8xf32>, tensor<4xi64>) -> tensor<?x2x2x8xf32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x8xf32>) -> tensor<?x2x8x?xf32>
  %s = "onnx.MatMul"(%qp, %kt) : (tensor<?x2x2x8xf32>, tensor<?x2x8x?xf32>) -> tensor<?x2x2x?xf32>
  %ss = "onnx.Mul"(%s, %half) : (tensor<?x2x2x?xf32>, tensor<f32>) -> tensor<?x2x2x?xf32>
  %sm = "onnx.Add"(%ss, %m) : (tensor<?x2x2x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x2x2x?xf32>
  %p = "onnx.Softmax"(%sm) {axis = -1 : i64} : (tensor<?x2x2x?xf32>) -> tensor<?x2x2x?xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<?x2x2x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x2x8xf32>
  %ys = "onnx.Shape"(%y) <{start = 0 : i64}> : (tensor<?x2x2x8xf32>) -> tensor<4xi64>
  %yb = "onnx.Reshape"(%y, %back) {allowzero = 0 : i64} : (tensor<?x2x2x8xf32>, tensor<4xi64>) -> tensor<?x4x1x8xf32>
  %yt = "onnx.Transpose"(%yb) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x1x8xf32>) -> tensor<?x1x4x8xf32>
  %yf = "onnx.Reshape"(%yt, %flat) {allowzero = 0 : i64} : (tensor<?x1x4x8xf32>, tensor<3xi64>) -> tensor<?x1x32xf32>
  %sg = "onnx.Sigmoid"(%g) : (tensor<?x1x32xf32>) -> tensor<?x1x32xf32>
  %o = "onnx.Mul"(%yf, %sg) : (tensor<?x1x32xf32>, tensor<?x1x32xf32>) -> tensor<?x1x32xf32>
  return %o, %ys : tensor<?x1x32xf32>, tensor<4xi64>
}

// -----

// The same packing with a mask that differs per packed row ([B, 1, 2, S]:
// rows are query heads here, not query positions): unpacking would give
// every head row 0's mask, so the attention stays on the packed query.
// CHECK-LABEL: func.func @packed_gqa_row_mask_kept
// CHECK: %[[QP:.*]] = "onnx.Reshape"(%arg0
// CHECK: gated.attention %[[QP]], %arg1, %arg2 mask(%arg3 : tensor<?x1x2x?xf32>) {scale = 5.000000e-01 : f32} : tensor<?x2x2x8xf32>
func.func @packed_gqa_row_mask_kept(%q: tensor<?x4x1x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>, %m: tensor<?x1x2x?xf32>) -> tensor<?x4x1x8xf32> {
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %packed = onnx.Constant dense<[0, 2, 2, 8]> : tensor<4xi64>
  %back = onnx.Constant dense<[0, 4, 1, 8]> : tensor<4xi64>
  %qp = "onnx.Reshape"(%q, %packed) {allowzero = 0 : i64} : (tensor<?x4x1x8xf32>, tensor<4xi64>) -> tensor<?x2x2x8xf32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x8xf32>) -> tensor<?x2x8x?xf32>
  %s = "onnx.MatMul"(%qp, %kt) : (tensor<?x2x2x8xf32>, tensor<?x2x8x?xf32>) -> tensor<?x2x2x?xf32>
  %ss = "onnx.Mul"(%s, %half) : (tensor<?x2x2x?xf32>, tensor<f32>) -> tensor<?x2x2x?xf32>
  %sm = "onnx.Add"(%ss, %m) : (tensor<?x2x2x?xf32>, tensor<?x1x2x?xf32>) -> tensor<?x2x2x?xf32>
  %p = "onnx.Softmax"(%sm) {axis = -1 : i64} : (tensor<?x2x2x?xf32>) -> tensor<?x2x2x?xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<?x2x2x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x2x8xf32>
  %yb = "onnx.Reshape"(%y, %back) {allowzero = 0 : i64} : (tensor<?x2x2x8xf32>, tensor<4xi64>) -> tensor<?x4x1x8xf32>
  return %yb : tensor<?x4x1x8xf32>
}
