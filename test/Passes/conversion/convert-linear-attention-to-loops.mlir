// RUN: gatec-opt %s --convert-linear-attention-to-loops --canonicalize -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gatec-opt %s --convert-linear-attention-to-loops=products=linalg --canonicalize -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=LINALG

// Chunked gated delta rule with a per-key-channel decay, GQA (2 query heads
// per KV head), an initial state: an scf.forall over (batch, KV head) (the
// one batch folds away), each task writing its query heads' rows and its
// final state; inside, the loop over chunks; the
// chunk's inclusive cumulative log-decay; the strictly causal UT matrix with
// exp of a selected (non-positive) difference (on the diagonal 4 × 4
// blocks; a reference-point split below them); the forward substitution;
// the causal scores; the inter-chunk state update with exp(G_C − G_j).
// The products with a state or U operand are register-blocked loops of
// vector FMAs: blocks of 4 rows × one vector of Dv = 6 lanes held in
// vector accumulators through the loop over the reduced dim.
// CHECK-LABEL: func.func @chunked
// floor(T / 16) whole chunks, read in place.
// CHECK: %[[W:.*]] = arith.divui %{{.*}}, %c16 : index
// CHECK: scf.forall ({{.*}}) in (2) shared_outs({{.*}}) -> (tensor<1x4x?x6xf32>, tensor<1x2x8x6xf32>)
// CHECK: %[[CH:.*]]:2 = scf.for %{{.*}} = %c0 to %[[W]] step %c1 {{.*}} -> (tensor<2x?x6xf32>, tensor<8x6xf32>)
// Cumulative sum G of the chunk's log-decays.
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]{{.*}} outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: arith.cmpi ule
// M_ij (j < i), by blocks of 4 tokens. On the diagonal blocks, exp only of
// the selected difference G_i − G_j, per term.
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4x4xf32>)
// CHECK: arith.cmpi ult
// CHECK: %[[D:.*]] = arith.subf
// CHECK: %[[S:.*]] = arith.select %{{.*}}, %[[D]], %{{.*}} : f32
// CHECK: math.exp %[[S]]
// CHECK: tensor.insert_slice {{.*}}[0, 0] [4, 4] {{.*}} : tensor<4x4xf32> into tensor<16x16xf32>
// Below it, the reference point r = 3: k̃_j = k_j ⊙ exp(G_3 − G_j) [4, 8],
// x̃_i = k_i ⊙ exp(G_i − G_3) for rows 4 … 15, their product.
// CHECK: linalg.map ins({{.*}} : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: math.exp
// CHECK: linalg.map ins({{.*}} : tensor<12x8xf32>, tensor<12x8xf32>)
// CHECK: math.exp
// CHECK: vector.fma {{.*}} : vector<4xf32>
// CHECK: tensor.insert_slice {{.*}}[4, 0] [12, 4] {{.*}} : tensor<12x4xf32> into tensor<16x16xf32>
// (K ⊙ exp(G)) S: [16, 8] × [8, 6], from zero accumulators.
// CHECK: scf.for {{.*}} step %c4 iter_args({{.*}}) -> (tensor<16x6xf32>)
// CHECK: scf.for {{.*}} to %c8 step %c1 iter_args(%{{.*}} = %[[Z:[^,]*]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]]) -> (vector<6xf32>, vector<6xf32>, vector<6xf32>, vector<6xf32>)
// CHECK-COUNT-4: vector.fma {{.*}} : vector<6xf32>
// CHECK: vector.transfer_write {{.*}} : vector<6xf32>, tensor<16x6xf32>
// Forward substitution, one row of U per iteration.
// CHECK: scf.for {{.*}} -> (tensor<16x6xf32>)
// CHECK: arith.subf
// CHECK: tensor.insert_slice {{.*}} : tensor<6xf32> into tensor<16x6xf32>
// Scores of the 2 query heads, causal (j <= i), by the same blocks.
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x4xf32>)
// CHECK: arith.cmpi ule
// CHECK: tensor.insert_slice {{.*}} : tensor<2x4x4xf32> into tensor<2x16x16xf32>
// CHECK: tensor.insert_slice {{.*}}[0, 4, 0] [2, 12, 4] {{.*}} : tensor<2x12x4xf32> into tensor<2x16x16xf32>
// O = (Q ⊙ exp(G)) S, per query head, written into the output rows.
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args({{.*}}) -> (tensor<2x16x6xf32>)
// CHECK: scf.for {{.*}} step %c4 iter_args({{.*}}) -> (tensor<2x16x6xf32>)
// CHECK: scf.for {{.*}} to %c8 step %c1
// CHECK-COUNT-4: vector.fma {{.*}} : vector<6xf32>
// O += A U over the causal part only: row block i0 … i0+3 stops at j = i0+3.
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args({{.*}}) -> (tensor<2x16x6xf32>)
// CHECK: scf.for %[[I0:.*]] = %c0 to %c16 step %c4 iter_args({{.*}}) -> (tensor<2x16x6xf32>)
// CHECK-COUNT-4: vector.transfer_read {{.*}} : tensor<2x16x6xf32>, vector<6xf32>
// CHECK: %[[JE:.*]] = arith.addi %[[I0]], %c4 : index
// CHECK: scf.for %{{.*}} = %c0 to %[[JE]] step %c1
// CHECK-COUNT-4: vector.fma {{.*}} : vector<6xf32>
// CHECK: tensor.insert_slice {{.*}} : tensor<2x16x6xf32> into tensor<2x?x6xf32>
// State: rows scaled by exp(G_C) [8] as they are loaded, + Khᵀ U over the
// chunk's 16 tokens.
// CHECK: linalg.map { math.exp } ins(%{{.*}} : tensor<8xf32>)
// CHECK: scf.for {{.*}} step %c4 iter_args({{.*}}) -> (tensor<8x6xf32>)
// CHECK-COUNT-4: arith.mulf {{.*}} : vector<6xf32>
// CHECK: scf.for {{.*}} to %c16 step %c1
// CHECK-COUNT-4: vector.fma {{.*}} : vector<6xf32>
// CHECK: scf.yield {{.*}} : tensor<2x?x6xf32>, tensor<8x6xf32>
// The last T mod 16 tokens: the task's inputs zero-padded to one chunk
// (only those tokens copied), one more chunk step, its first T mod 16 rows
// copied into the output rows.
// CHECK: %[[T0:.*]] = arith.muli %[[W]], %c16 : index
// CHECK: %[[REM:.*]] = arith.subi %{{.*}}, %[[T0]] : index
// CHECK: %[[ANY:.*]] = arith.cmpi ne, %[[REM]], %c0 : index
// CHECK: %[[TL:.*]]:2 = scf.if %[[ANY]] -> (tensor<2x?x6xf32>, tensor<8x6xf32>)
// CHECK: %[[QT:.*]] = tensor.extract_slice %{{.*}}[0, 0, %[[T0]], 0] [1, 4, %[[REM]], 8]
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<1x4x16x8xf32>
// CHECK: tensor.insert_slice %[[QT]] into %[[Z]][0, 0, 0, 0] [1, 4, %[[REM]], 8]
// CHECK: vector.fma
// CHECK: %[[P:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0] [2, %[[REM]], 6] {{.*}} : tensor<2x16x6xf32> to tensor<2x?x6xf32>
// CHECK: tensor.insert_slice %[[P]] into %[[CH]]#0[0, %[[T0]], 0] [2, %[[REM]], 6]
// CHECK: } else {
// CHECK: scf.yield %[[CH]]#0, %[[CH]]#1
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %[[TL]]#0 {{.*}} : tensor<2x?x6xf32> into tensor<1x4x?x6xf32>
// CHECK: tensor.parallel_insert_slice %[[TL]]#1 {{.*}} : tensor<8x6xf32> into tensor<1x2x8x6xf32>
// The forall's results are the op's: no copy of the output.
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
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

// Chunked, one log-decay per head: the scores are a dense product (no
// causal select in it), 4 rows × 2 vectors of 8 lanes of Q Kᵀ per block
// (Kᵀ [8, 16] read along its rows); the causal decay factors exp(G_i − G_j)
// (0 above the diagonal) [C, C] are computed once per chunk and multiply
// the scores before the A·U product, which stops at each row block's
// diagonal; exp(G) and exp(G_C − G) once per token, exp(G_C) once per chunk
// (the state rows' factor, one for all rows: read at index 0).
// CHECK-LABEL: func.func @chunked_scalar_decay
// CHECK: scf.for {{.*}} -> (tensor<1x?x6xf32>, tensor<8x6xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<16x1xf32>)
// CHECK: linalg.map { math.exp } ins(%{{.*}} : tensor<16x1xf32>)
// Kᵀ by 8 × 8 blocks in registers: 8 rows loaded, three rounds of
// shuffles, 8 columns stored.
// CHECK: %[[KT:.*]] = scf.for {{.*}} step %c8 iter_args({{.*}}) -> (tensor<8x16xf32>)
// CHECK-COUNT-8: vector.transfer_read {{.*}} : tensor<16x8xf32>, vector<8xf32>
// CHECK-COUNT-4: vector.shuffle {{.*}} [0, 8, 1, 9, 4, 12, 5, 13]
// CHECK: vector.shuffle {{.*}} [0, 1, 8, 9, 4, 5, 12, 13]
// CHECK: vector.shuffle {{.*}} [0, 1, 2, 3, 8, 9, 10, 11]
// CHECK: vector.transfer_write {{.*}} : vector<8xf32>, tensor<8x16xf32>
// CHECK: %[[SC:.*]] = scf.for {{.*}} step %c4 iter_args({{.*}}) -> (tensor<1x16x16xf32>)
// CHECK: scf.for {{.*}} to %c8 step %c1 {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: vector.transfer_read %[[KT]]
// CHECK-NOT: arith.select
// CHECK-COUNT-8: vector.fma {{.*}} : vector<8xf32>
// CHECK: %[[F:.*]] = linalg.map ins(%{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<16x16xf32>)
// CHECK: arith.cmpi ule
// CHECK: math.exp
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[SC]], %[[F]] : tensor<1x16x16xf32>, tensor<16x16xf32>)
// CHECK: scf.for
// CHECK: tensor.extract %[[A]]
// CHECK: vector.fma {{.*}} : vector<6xf32>
// CHECK: linalg.map ins(%{{.*}}, %{{.*}} : tensor<16x1xf32>, tensor<16x1xf32>)
// CHECK: math.exp
// CHECK: %[[EL:.*]] = linalg.map { math.exp } ins(%{{.*}} : tensor<1xf32>)
// CHECK-NOT: math.exp
// CHECK: tensor.extract %[[EL]][%c0]
// CHECK: scf.yield {{.*}} : tensor<1x?x6xf32>, tensor<8x6xf32>
func.func @chunked_scalar_decay(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x6xf32>, %g: tensor<1x2x?x1xf32>) -> (tensor<1x2x?x6xf32>, tensor<1x2x8x6xf32>) {
  %o, %f = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x6xf32> -> tensor<1x2x?x6xf32>, tensor<1x2x8x6xf32>
  return %o, %f : tensor<1x2x?x6xf32>, tensor<1x2x8x6xf32>
}

// -----

// Inputs in the projection layout [B, T, H, D] (`bshd`, set by
// --absorb-head-layout) are read in place (each chunk a [16, D] slice
// strided along T, the query's [16, G, D] slice reordered by the copy that
// scales it), and a `bshd` output is written in [B, T, H, D] order: no
// transposed copy of the sequence.
// CHECK-LABEL: func.func @head_transposes
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<1x?x4x8xf32>, %[[K:[^:]*]]: tensor<1x?x2x8xf32>
// CHECK: scf.forall ({{.*}}) in (2) shared_outs({{.*}}) -> (tensor<1x?x4x8xf32>, tensor<1x2x8x8xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, %{{.*}}, 0] [1, %{{.*}}, 2, 8] {{.*}} to tensor<?x2x8xf32>
// CHECK: scf.for {{.*}} -> (tensor<?x2x8xf32>, tensor<8x8xf32>)
// CHECK: tensor.extract_slice %[[K]][0, %[[T0:.*]], %{{.*}}, 0] [1, 16, 1, 8] {{.*}} to tensor<16x8xf32>
// CHECK: %[[QS:.*]] = tensor.extract_slice %[[Q]][0, %[[T0]], %{{.*}}, 0] [1, 16, 2, 8] {{.*}} to tensor<16x2x8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[QS]] : tensor<16x2x8xf32>) outs(%{{.*}} : tensor<2x16x8xf32>)
// CHECK: tensor.extract_slice %{{.*}}[%[[T0]], 0, 0] [16, 2, 8] {{.*}} to tensor<16x2x8xf32>
// CHECK: tensor.insert_slice {{.*}} into %{{.*}}[%[[T0]], 0, 0] [16, 2, 8] {{.*}} : tensor<16x2x8xf32> into tensor<?x2x8xf32>
// CHECK: tensor.parallel_insert_slice {{.*}} : tensor<?x2x8xf32> into tensor<1x?x4x8xf32>
// CHECK-NOT: linalg.transpose ins(%{{.*}} : tensor<1x
// CHECK: return %{{.*}}, %{{.*}} : tensor<1x?x4x8xf32>, tensor<1x2x8x8xf32>
func.func @head_transposes(%q: tensor<1x?x4x8xf32>, %k: tensor<1x?x2x8xf32>, %v: tensor<1x?x2x8xf32>, %g: tensor<1x?x2x1xf32>) -> (tensor<1x?x4x8xf32>, tensor<1x2x8x8xf32>) {
  %o, %f = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<1x?x2x1xf32>) {bshd = ["query", "key", "value", "decay", "output"], chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x?x4x8xf32>, tensor<1x?x2x8xf32>, tensor<1x?x2x8xf32> -> tensor<1x?x4x8xf32>, tensor<1x2x8x8xf32>
  return %o, %f : tensor<1x?x4x8xf32>, tensor<1x2x8x8xf32>
}

// -----

// products=linalg (the CUDA target's form): no vector loops; Kᵀ is a
// linalg.transpose, Q Kᵀ a contraction over (g, m, n, k) from a zero fill,
// A·U one whose terms above the diagonal are selected away (k <= m), and the
// state update scales the state in place by exp(G_C) before accumulating
// the chunk's keys into it.
// LINALG-LABEL: func.func @chunked_linalg_products
// LINALG-NOT: vector.
// LINALG: scf.for {{.*}} -> (tensor<1x?x6xf32>, tensor<8x6xf32>)
// LINALG: %[[KT:.*]] = linalg.transpose ins(%{{.*}} : tensor<16x8xf32>) outs(%{{.*}} : tensor<8x16xf32>) permutation = [1, 0]
// LINALG: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x16x16xf32>)
// LINALG: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[KT]] : tensor<1x16x8xf32>, tensor<8x16xf32>) outs(%[[Z]] : tensor<1x16x16xf32>)
// LINALG: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<1x16x16xf32>, tensor<16x6xf32>)
// LINALG: %[[M:.*]] = linalg.index 1 : index
// LINALG: %[[K:.*]] = linalg.index 3 : index
// LINALG: %[[KEEP:.*]] = arith.cmpi ule, %[[K]], %[[M]] : index
// LINALG: arith.select %[[KEEP]]
// LINALG: %[[S:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x6xf32>)
// LINALG: arith.mulf
// LINALG: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<16x6xf32>) outs(%[[S]] : tensor<8x6xf32>)
// LINALG: scf.yield {{.*}} : tensor<1x?x6xf32>, tensor<8x6xf32>
// LINALG-NOT: vector.
func.func @chunked_linalg_products(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x6xf32>, %g: tensor<1x2x?x1xf32>) -> (tensor<1x2x?x6xf32>, tensor<1x2x8x6xf32>) {
  %o, %f = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<1x2x?x1xf32>) {chunk_size = 16 : i64, scale = 0.5 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x6xf32> -> tensor<1x2x?x6xf32>, tensor<1x2x8x6xf32>
  return %o, %f : tensor<1x2x?x6xf32>, tensor<1x2x8x6xf32>
}

// -----

// The gated RMSNorm epilogue (norm_weight, norm_gate as rows of Dv): the
// gate is checked to have one row per output row and viewed in the
// output's shape; each chunk's rows, once written, are normalised over Dv
// (Σ o² per row, then o · rsqrt(Σ/Dv + eps) · w · silu(z)) in the chunk
// loop, and the tail's rows one token at a time after it. On the CPU in
// vectors of the lanes dividing Dv (here 2): Σ o² by vector FMAs and one
// reduction per row; with products=linalg as linalg ops the block's
// threads share.
// CHECK-LABEL: func.func @norm_epilogue
// CHECK: cf.assert %{{.*}}, "gatec: the gate of the gated RMSNorm fused into {{.*}} does not have one row per output row"
// CHECK: %[[Z:.*]] = tensor.reshape %arg4(%{{.*}}) : (tensor<?x6xf32>, tensor<4xindex>) -> tensor<?x2x?x6xf32>
// CHECK: scf.forall
// CHECK: scf.for {{.*}} -> (tensor<1x?x6xf32>, tensor<8x6xf32>)
// CHECK: vector.fma %[[V:.*]], %[[V]], %{{.*}} : vector<2xf32>
// CHECK: vector.reduction <add>, %{{.*}} : vector<2xf32> into f32
// CHECK: math.rsqrt %{{.*}} : f32
// CHECK: vector.transfer_read %[[Z]]
// CHECK: math.exp %{{.*}} : vector<2xf32>
// CHECK: vector.transfer_write
// CHECK: scf.forall.in_parallel
// LINALG-LABEL: func.func @norm_epilogue
// LINALG: %[[Z:.*]] = tensor.reshape %arg4
// LINALG: %[[O:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, %[[T0:.*]], 0] [1, 16, 6]
// LINALG: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}} : tensor<1x16x6xf32>) outs(%{{.*}} : tensor<1x16xf32>)
// LINALG: tensor.extract_slice %[[Z]][%arg5, %arg6, %{{.*}}, 0] [1, 1, 16, 6]
// LINALG: math.rsqrt
// LINALG: math.exp
// LINALG: tensor.insert_slice %{{.*}} into %[[O]][0, %{{.*}}, 0] [1, 16, 6]
// LINALG: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1x?x6xf32>)
// LINALG: tensor.extract_slice %[[Z]][%arg5, %arg6, %{{.*}}, 0] [1, 1, 1, 6]
// LINALG: math.rsqrt
// LINALG: scf.forall.in_parallel
func.func @norm_epilogue(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x6xf32>, %g: tensor<?x2x?x1xf32>, %z: tensor<?x6xf32>) -> (tensor<?x2x?x6xf32>, tensor<?x2x8x6xf32>) {
  %w = arith.constant dense<1.5> : tensor<6xf32>
  %o, %f = gated.linear_attention gated chunked %q, %k, %v decay(%g : tensor<?x2x?x1xf32>) norm(%w : tensor<6xf32>) norm_gate(%z : tensor<?x6xf32>, silu) {chunk_size = 16 : i64, norm_epsilon = 1.0e-6 : f32, scale = 0.5 : f32} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x6xf32> -> tensor<?x2x?x6xf32>, tensor<?x2x8x6xf32>
  return %o, %f : tensor<?x2x?x6xf32>, tensor<?x2x8x6xf32>
}
