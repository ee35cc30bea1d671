// RUN: gatec-opt %s --matmul-micro-kernel="vector-bits=512 mr=4 nr-vectors=2" --split-input-file | FileCheck %s
// The weights read only as panels are not kept twice.
// RUN: gatec-opt %s --matmul-micro-kernel --split-input-file | FileCheck %s --check-prefix=GLOBALS
// GLOBALS-NOT: memref.global "private" constant @w :
// GLOBALS:     memref.global "private" constant @w_panels
// GLOBALS-NOT: memref.global "private" constant @w :

// A constant B [K=3, N=40] is packed at compile time into 2 panels of
// K x NR = 3 x 32 (the second zero-padded past column 40): panel p, row k
// holds B[k, 32p .. 32p + 31].
// CHECK-LABEL: memref.global "private" constant @w_panels : memref<2x3x32xf32> = dense_resource<w_panels> {alignment = 64 : i64}
// CHECK-LABEL: func.func @packed
// CHECK-DAG:     %[[P:.*]] = memref.get_global @w_panels : memref<2x3x32xf32>
// The full panels: 4 x 2 accumulators carried through the k loop, 8 FMAs
// per k step, B read as 2 unmasked vectors of the panel.
// CHECK:         scf.for %[[N0:.*]] = %{{.*}} to %{{.*}} step %c32
// CHECK:           %[[LEFT:.*]] = arith.subi %c40, %[[N0]]
// CHECK:           scf.if
// CHECK:             scf.for %[[M0:.*]] = %{{.*}} to %{{.*}} step %c4
// CHECK-COUNT-8:       vector.load %{{.*}} : memref<?x40xf32>, vector<16xf32>
// CHECK:               %[[PI:.*]] = arith.divui %[[N0]], %c32
// CHECK:               scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c1 iter_args(
// CHECK:                 vector.load %[[P]][%[[PI]], %[[K]], %c0{{.*}}] : memref<2x3x32xf32>, vector<16xf32>
// CHECK:                 vector.load %[[P]][%[[PI]], %[[K]], %c16] : memref<2x3x32xf32>, vector<16xf32>
// CHECK:                 memref.load
// CHECK:                 vector.broadcast
// CHECK-COUNT-2:         vector.fma
// CHECK-COUNT-8:       vector.store
// Rows past the last multiple of 4: the one-row kernel.
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// CHECK-COUNT-2:       vector.load %{{.*}} : memref<?x40xf32>, vector<16xf32>
// The last, partial panel: C loaded and stored under masks of the columns
// left (40 - n0: 8 in the first vector, none in the second).
// CHECK:           } else {
// CHECK:             %[[L1:.*]] = arith.subi %[[LEFT]], %c16
// CHECK:             vector.create_mask %[[L1]] : vector<16xi1>
// CHECK:             vector.maskedload
// CHECK:             vector.maskedstore
// CHECK-NOT:     linalg.generic
memref.global "private" constant @w : memref<3x40xf32> = dense<[[-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5], [1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5], [0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, -1.5]]>
func.func @packed(%a: memref<?x3xf32>, %c: memref<?x40xf32>) {
  %b = memref.get_global @w : memref<3x40xf32>
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>, affine_map<(m, k, n) -> (m, n)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<?x3xf32>, memref<3x40xf32>) outs(%c : memref<?x40xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// B read at run time (not a constant): vectors of B itself, masked in the
// partial panel; bf16 operands are extended to the f32 accumulator.
// CHECK-LABEL: func.func @runtime_bf16
// CHECK-NOT:     memref.global
// CHECK:         scf.for
// CHECK:           vector.load %{{.*}} : memref<?x?xbf16>, vector<16xbf16>
// CHECK:           arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK:           memref.load %{{.*}} : memref<?x?xbf16>
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK:           vector.fma
// CHECK:         vector.maskedload %{{.*}} : memref<?x?xbf16>, vector<16xi1>, vector<16xbf16> into vector<16xbf16>
// CHECK-NOT:     linalg.generic
func.func @runtime_bf16(%a: memref<?x?xbf16>, %b: memref<?x?xbf16>, %c: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>, affine_map<(m, k, n) -> (m, n)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<?x?xbf16>, memref<?x?xbf16>) outs(%c : memref<?x?xf32>) {
  ^bb0(%x: bf16, %y: bf16, %z: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A batch loop (the leading dim of C and A; B broadcast with index 0).
// CHECK-LABEL: func.func @batched
// CHECK:         scf.for %[[B:.*]] = %c0{{.*}} to %{{.*}} step %c1
// CHECK:           scf.for %{{.*}} step %c32
// CHECK:             vector.load %{{.*}}[%[[B]], %{{.*}}, %{{.*}}] : memref<?x?x64xf32, strided<[?, 64, 1], offset: ?>>, vector<16xf32>
// CHECK:             vector.load %{{.*}}[%c0{{.*}}, %{{.*}}, %{{.*}}] : memref<1x8x64xf32>, vector<16xf32>
// CHECK-NOT:     linalg.generic
func.func @batched(%a: memref<?x?x8xf32>, %b: memref<1x8x64xf32>, %c: memref<?x?x64xf32, strided<[?, 64, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [affine_map<(b, m, k, n) -> (b, m, k)>, affine_map<(b, m, k, n) -> (0, k, n)>, affine_map<(b, m, k, n) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<?x?x8xf32>, memref<1x8x64xf32>) outs(%c : memref<?x?x64xf32, strided<[?, 64, 1], offset: ?>>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left to the scalar loops: Q·Kᵀ (B is not contiguous along n and not a
// constant to pack), a B with a
// dynamic innermost stride, an integer contraction, a body that is not
// c + a·b.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     vector.fma
// CHECK-COUNT-4: linalg.generic
func.func @left_alone(%a: memref<8x16xf32>, %bt: memref<32x16xf32>, %bs: memref<16x32xf32, strided<[?, ?]>>, %c: memref<8x32xf32>,
                      %ai: memref<8x16xi32>, %bi: memref<16x32xi32>, %ci: memref<8x32xi32>, %b: memref<16x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %bt : memref<8x16xf32>, memref<32x16xf32>) outs(%c : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %bs : memref<8x16xf32>, memref<16x32xf32, strided<[?, ?]>>) outs(%c : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ai, %bi : memref<8x16xi32>, memref<16x32xi32>) outs(%ci : memref<8x32xi32>) {
  ^bb0(%x: i32, %y: i32, %z: i32):
    %p = arith.muli %x, %y : i32
    %s = arith.addi %z, %p : i32
    linalg.yield %s : i32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.maximumf %z, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A GLU's gate and up projections, one generic with two outputs: one
// micro-kernel nest per output, both reading A.
// CHECK-LABEL: func.func @two_outputs
// CHECK-COUNT-2: scf.for %{{.*}} step %c32
// CHECK-NOT:     linalg.generic
func.func @two_outputs(%a: memref<?x8xf32>, %w: memref<8x64xf32>, %v: memref<8x64xf32>, %g: memref<?x64xf32>, %u: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>, affine_map<(m, k, n) -> (k, n)>, affine_map<(m, k, n) -> (m, n)>, affine_map<(m, k, n) -> (m, n)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %w, %v : memref<?x8xf32>, memref<8x64xf32>, memref<8x64xf32>) outs(%g, %u : memref<?x64xf32>, memref<?x64xf32>) {
  ^bb0(%x: f32, %y: f32, %y2: f32, %z: f32, %z2: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    %p2 = arith.mulf %x, %y2 : f32
    %s2 = arith.addf %z2, %p2 : f32
    linalg.yield %s, %s2 : f32, f32
  }
  return
}

// -----

// A constant B stored [N, K] (a Gemm's transB, a Linear layer's weight) is
// packed transposed: panel p, row k holds B[32p .. 32p + 31, k].
// CHECK-LABEL: memref.global "private" constant @wt_panels_t : memref<1x4x32xf32>
// CHECK-LABEL: func.func @transposed_const
// CHECK:         memref.get_global @wt_panels_t
// CHECK:         vector.fma
// CHECK-NOT:     linalg.generic
memref.global "private" constant @wt : memref<3x4xf32> = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]>
func.func @transposed_const(%a: memref<?x4xf32>, %c: memref<?x3xf32>) {
  %b = memref.get_global @wt : memref<3x4xf32>
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x4xf32>, memref<3x4xf32>) outs(%c : memref<?x3xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A SwiGLU: the gate and up products (one generic, two outputs, both
// starting as copies of a zero fill) read only by act(g)·u. One kernel
// nest: each register tile holds both outputs' accumulators (mr / 2 = 2
// rows x 2 vectors x 2 outputs) from zero over the whole k loop, and
// stores only silu(g)·u; the products' buffers, fill and copies are gone.
// Each k step prefetches the lines of the next block of both panels into
// L2 (locality 2).
// CHECK-LABEL: func.func @glu_epilogue
// CHECK-DAG:     %[[WP:.*]] = memref.get_global @wg_panels : memref<2x2x32xf32>
// CHECK-DAG:     %[[VP:.*]] = memref.get_global @wu_panels : memref<2x2x32xf32>
// CHECK-DAG:     %[[WF:.*]] = memref.collapse_shape %[[WP]] {{.}}[0, 1], [2]]
// CHECK-NOT:     linalg.fill
// CHECK-NOT:     memref.copy
// CHECK:         scf.for %{{.*}} step %c32
// CHECK:           scf.for %{{.*}} step %c2
// CHECK:             scf.for %{{.*}} iter_args(
// CHECK:               memref.prefetch %[[WF]][%{{.*}}, %c0{{.*}}], read, locality<2>, data
// CHECK:               memref.prefetch %[[WF]][%{{.*}}, %c16{{.*}}], read, locality<2>, data
// CHECK-COUNT-2:       vector.load %[[WP]]
// CHECK-COUNT-2:       vector.load %[[VP]]
// CHECK-COUNT-8:       vector.fma
// CHECK:             }
// CHECK:             math.exp %{{.*}} : vector<16xf32>
// CHECK:             vector.store %{{.*}}, %[[H:.*]][
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     scf.for %{{.*}} step %c32
// CHECK:         return
memref.global "private" constant @wg : memref<2x40xf32> = dense<[[-0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25], [0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25]]>
memref.global "private" constant @wu : memref<2x40xf32> = dense<[[0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75], [-0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50]]>
func.func @glu_epilogue(%a: memref<?x2xf32>) -> memref<?x40xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %m = memref.dim %a, %c0 : memref<?x2xf32>
  %w = memref.get_global @wg : memref<2x40xf32>
  %v = memref.get_global @wu : memref<2x40xf32>
  %z = memref.alloc(%m) : memref<?x40xf32>
  linalg.fill ins(%zero : f32) outs(%z : memref<?x40xf32>)
  %g = memref.alloc(%m) : memref<?x40xf32>
  memref.copy %z, %g : memref<?x40xf32> to memref<?x40xf32>
  %u = memref.alloc(%m) : memref<?x40xf32>
  memref.copy %z, %u : memref<?x40xf32> to memref<?x40xf32>
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>, affine_map<(m, k, n) -> (k, n)>, affine_map<(m, k, n) -> (m, n)>, affine_map<(m, k, n) -> (m, n)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %w, %v : memref<?x2xf32>, memref<2x40xf32>, memref<2x40xf32>) outs(%g, %u : memref<?x40xf32>, memref<?x40xf32>) {
  ^bb0(%x: f32, %y: f32, %y2: f32, %o: f32, %o2: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    %p2 = arith.mulf %x, %y2 : f32
    %s2 = arith.addf %o2, %p2 : f32
    linalg.yield %s, %s2 : f32, f32
  }
  %h = memref.alloc(%m) : memref<?x40xf32>
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]}
      ins(%g, %u : memref<?x40xf32>, memref<?x40xf32>) outs(%h : memref<?x40xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %d = arith.addf %e, %one : f32
    %sg = arith.divf %one, %d : f32
    %sl = arith.mulf %x, %sg : f32
    %r = arith.mulf %sl, %y : f32
    linalg.yield %r : f32
  }
  memref.dealloc %z : memref<?x40xf32>
  memref.dealloc %g : memref<?x40xf32>
  memref.dealloc %u : memref<?x40xf32>
  return %h : memref<?x40xf32>
}

// -----

// The same, but the gate product is also read after the epilogue: it must
// be stored, so the epilogue stays an op of its own (one nest per output).
// CHECK-LABEL: func.func @glu_product_kept
// CHECK-COUNT-2: scf.for %{{.*}} step %c32
// CHECK:         linalg.generic
// CHECK:         memref.copy %{{.*}}, %arg1
memref.global "private" constant @wg : memref<2x40xf32> = dense<[[-0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25], [0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25]]>
memref.global "private" constant @wu : memref<2x40xf32> = dense<[[0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75], [-0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50, 0.75, -0.75, -0.50, -0.25, 0.00, 0.25, 0.50]]>
func.func @glu_product_kept(%a: memref<?x2xf32>, %keep: memref<?x40xf32>) -> memref<?x40xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %a, %c0 : memref<?x2xf32>
  %w = memref.get_global @wg : memref<2x40xf32>
  %v = memref.get_global @wu : memref<2x40xf32>
  %g = memref.alloc(%m) : memref<?x40xf32>
  linalg.fill ins(%zero : f32) outs(%g : memref<?x40xf32>)
  %u = memref.alloc(%m) : memref<?x40xf32>
  linalg.fill ins(%zero : f32) outs(%u : memref<?x40xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>, affine_map<(m, k, n) -> (k, n)>, affine_map<(m, k, n) -> (m, n)>, affine_map<(m, k, n) -> (m, n)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %w, %v : memref<?x2xf32>, memref<2x40xf32>, memref<2x40xf32>) outs(%g, %u : memref<?x40xf32>, memref<?x40xf32>) {
  ^bb0(%x: f32, %y: f32, %y2: f32, %o: f32, %o2: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    %p2 = arith.mulf %x, %y2 : f32
    %s2 = arith.addf %o2, %p2 : f32
    linalg.yield %s, %s2 : f32, f32
  }
  %h = memref.alloc(%m) : memref<?x40xf32>
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]}
      ins(%g, %u : memref<?x40xf32>, memref<?x40xf32>) outs(%h : memref<?x40xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  }
  memref.copy %g, %keep : memref<?x40xf32> to memref<?x40xf32>
  return %h : memref<?x40xf32>
}
