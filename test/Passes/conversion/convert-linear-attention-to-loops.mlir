// RUN: gatec-opt %s --convert-linear-attention-to-loops --canonicalize -split-input-file -verify-diagnostics | FileCheck %s

// Chunked gated delta rule with a per-key-channel decay, GQA (2 query heads
// per KV head), an initial state: an scf.forall over (batch, KV head) (the
// one batch folds away), each task writing its query heads' rows and its
// final state; inside, the loop over chunks; the
// chunk's inclusive cumulative log-decay; the strictly causal UT matrix with
// exp of a selected (non-positive) difference; the forward substitution;
// the causal scores; the inter-chunk state update with exp(G_C − G_j).
// CHECK-LABEL: func.func @chunked
// CHECK: scf.forall ({{.*}}) in (2) shared_outs({{.*}}) -> (tensor<1x4x?x6xf32>, tensor<1x2x8x6xf32>)
// CHECK: scf.for {{.*}} -> (tensor<2x?x6xf32>, tensor<8x6xf32>)
// Cumulative sum G of the chunk's log-decays.
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]{{.*}} outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: arith.cmpi ule
// M_ij (j < i): exp only of the selected difference G_i − G_j.
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<16x16xf32>)
// CHECK: arith.cmpi ult
// CHECK: %[[D:.*]] = arith.subf
// CHECK: %[[S:.*]] = arith.select %{{.*}}, %[[D]], %{{.*}} : f32
// CHECK: math.exp %[[S]]
// Forward substitution, one row of U per iteration.
// CHECK: scf.for {{.*}} -> (tensor<16x6xf32>)
// CHECK: arith.subf
// CHECK: tensor.insert_slice {{.*}} : tensor<6xf32> into tensor<16x6xf32>
// Scores of the 2 query heads, causal (j <= i).
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x16x16xf32>)
// CHECK: arith.cmpi ule
// CHECK: tensor.insert_slice {{.*}} : tensor<2x16x6xf32> into tensor<2x?x6xf32>
// CHECK: scf.yield {{.*}} : tensor<2x?x6xf32>, tensor<8x6xf32>
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice {{.*}} : tensor<2x?x6xf32> into tensor<1x4x?x6xf32>
// CHECK: tensor.parallel_insert_slice {{.*}} : tensor<8x6xf32> into tensor<1x2x8x6xf32>
// The padded tokens are dropped from the output.
// CHECK: tensor.extract_slice {{.*}} to tensor<1x4x?x6xf32>
// CHECK-NOT: gated.linear_attention
func.func @chunked(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x6xf32>, %g: tensor<1x2x?x8xf32>, %b: tensor<1x2x?x1xf32>, %s: tensor<1x2x8x6xf32>) -> (tensor<1x4x?x6xf32>, tensor<1x2x8x6xf32>) {
  %o, %f = gated.linear_attention gated_delta chunked %q, %k, %v decay(%g : tensor<1x2x?x8xf32>) beta(%b : tensor<1x2x?x1xf32>) state(%s : tensor<1x2x8x6xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x6xf32> -> tensor<1x4x?x6xf32>, tensor<1x2x8x6xf32>
  return %o, %f : tensor<1x4x?x6xf32>, tensor<1x2x8x6xf32>
}

// -----

// Recurrent form: one iteration per token, the state decayed by exp(g_t),
// the rank-1 write, the read by the query heads; f16 in, f32 inside.
// CHECK-LABEL: func.func @recurrent
// CHECK: arith.extf
// CHECK: scf.forall ({{.*}}) in (2) shared_outs
// CHECK: scf.for {{.*}} -> (tensor<2x?x4xf32>, tensor<4x4xf32>)
// CHECK: math.exp
// CHECK: tensor.insert_slice {{.*}} : tensor<2x4xf32> into tensor<2x?x4xf32>
// CHECK: arith.truncf
func.func @recurrent(%q: tensor<2x2x?x4xf16>, %g: tensor<2x1x?x1xf16>) -> (tensor<2x2x?x4xf16>, tensor<2x1x4x4xf16>) {
  %k = tensor.extract_slice %q[0, 0, 0, 0] [2, 1, 5, 4] [1, 1, 1, 1] : tensor<2x2x?x4xf16> to tensor<2x1x5x4xf16>
  %kc = tensor.cast %k : tensor<2x1x5x4xf16> to tensor<2x1x?x4xf16>
  %o, %f = gated.linear_attention gated recurrent %q, %kc, %kc decay(%g : tensor<2x1x?x1xf16>) {scale = 0.5 : f32} : tensor<2x2x?x4xf16>, tensor<2x1x?x4xf16>, tensor<2x1x?x4xf16> -> tensor<2x2x?x4xf16>, tensor<2x1x4x4xf16>
  return %o, %f : tensor<2x2x?x4xf16>, tensor<2x1x4x4xf16>
}

// -----

func.func @dynamic_heads(%q: tensor<1x?x8x4xf32>) -> tensor<1x?x8x4xf32> {
  // expected-error @+1 {{'gated.linear_attention' op cannot be lowered: head counts and head dims must be static}}
  %o, %f = gated.linear_attention linear recurrent %q, %q, %q {scale = 0.5 : f32} : tensor<1x?x8x4xf32>, tensor<1x?x8x4xf32>, tensor<1x?x8x4xf32> -> tensor<1x?x8x4xf32>, tensor<1x?x4x4xf32>
  return %o : tensor<1x?x8x4xf32>
}

// -----

// Chunked, one log-decay per head: the scores are a dense contraction (no
// causal select in its body); the causal decay factors exp(G_i − G_j)
// (0 above the diagonal) [C, C] are computed once per chunk and read by
// the A·U contraction; exp(G) and exp(G_C − G) once per token, exp(G_C)
// once per chunk. Each contraction's reduction is unrolled in its body
// (the reduced dims split into [n/u, u]: Dk 8 by 4, C 16 by 8), by fused
// multiply-adds.
// CHECK-LABEL: func.func @chunked_scalar_decay
// CHECK: scf.for {{.*}} -> (tensor<1x?x6xf32>, tensor<8x6xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<16x1xf32>)
// CHECK: linalg.map { math.exp } ins(%{{.*}} : tensor<16x1xf32>)
// CHECK: tensor.expand_shape {{.*}} into tensor<1x16x2x4xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<2x4x16xf32>
// CHECK: %[[SC:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "parallel"]{{.*}} outs(%{{.*}} : tensor<1x16x16xf32>)
// CHECK-NOT: arith.select
// CHECK-COUNT-4: math.fma
// CHECK-NEXT: linalg.yield
// CHECK: %[[F:.*]] = linalg.map ins(%{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<16x16xf32>)
// CHECK: arith.cmpi ule
// CHECK: math.exp
// CHECK: tensor.expand_shape %[[SC]] {{.*}} into tensor<1x16x2x8xf32>
// CHECK: tensor.expand_shape %[[F]] {{.*}} into tensor<16x2x8xf32>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x16x6xf32>)
// CHECK-COUNT-8: math.fma
// CHECK-NEXT: linalg.yield
// CHECK: linalg.map ins(%{{.*}}, %{{.*}} : tensor<16x1xf32>, tensor<16x1xf32>)
// CHECK: math.exp
// CHECK: linalg.map { math.exp } ins(%{{.*}} : tensor<1xf32>)
// CHECK-NOT: math.exp
// CHECK: scf.yield {{.*}} : tensor<1x?x6xf32>, tensor<8x6xf32>
func.func @chunked_scalar_decay(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x6xf32>, %g: tensor<1x2x?x1xf32>) -> (tensor<1x2x?x6xf32>, tensor<1x2x8x6xf32>) {
  %o, %f = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x6xf32> -> tensor<1x2x?x6xf32>, tensor<1x2x8x6xf32>
  return %o, %f : tensor<1x2x?x6xf32>, tensor<1x2x8x6xf32>
}
