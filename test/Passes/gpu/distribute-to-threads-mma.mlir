// RUN: gatec-opt %s --split-input-file --distribute-to-threads="threads=64 mma=sync" | FileCheck %s
// RUN: gatec-opt %s --split-input-file --distribute-to-threads="threads=64 mma=emulate" | FileCheck %s --check-prefix=EMU
// RUN: gatec-opt %s --split-input-file --distribute-to-threads="threads=64" | FileCheck %s --check-prefix=NONE
// RUN: not gatec-opt %s --split-input-file --distribute-to-threads="mma=wmma" 2>&1 | FileCheck %s --check-prefix=BAD

#a = affine_map<(b, m, k, n) -> (b, m, k)>
#w = affine_map<(b, m, k, n) -> (k, n)>
#o = affine_map<(b, m, k, n) -> (b, m, n)>

// A row block of the widened gate/up projections of a bf16 SwiGLU FFN
// (1x8 rows, k = 32, two outputs of n = 16): one tile of 16 rows (the last
// 8 masked) x 16 columns (two 8-column subtiles) per warp step, two k steps;
// per k step the lanes' A fragment (4 registers of two bf16, low half
// first) is loaded once and feeds 2 outputs x 2 subtiles mma.sync.
// CHECK-LABEL: func.func @swiglu_gate_up
// CHECK:      scf.forall (%[[T:.*]]) in (64) {
// CHECK:        %[[WARP:.*]] = affine.apply #{{.*}}(%[[T]])
// CHECK:        scf.for %{{.*}} = %[[WARP]] to %c1{{(_[0-9]+)?}} step %c2 {
// CHECK:          arith.cmpi ult, %{{.*}}, %c8{{(_[0-9]+)?}} : index
// CHECK:          arith.minui %{{.*}}, %c7{{(_[0-9]+)?}} : index
// CHECK:          %[[KL:.*]]:16 = scf.for %{{.*}} = %c0 to %c32 step %c16 iter_args(
// CHECK-COUNT-4:    arith.ori %{{.*}}, %{{.*}} : i32
// CHECK:            nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[{{.*}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-COUNT-3:    nvvm.mma.sync
// CHECK:            scf.yield
// CHECK:          scf.if %{{.*}} {
// CHECK-NEXT:       memref.store %[[KL]]#0
// CHECK:      } {mapping = [#gpu.thread<x>]}
// CHECK-NOT:  linalg.generic
// EMU-LABEL: func.func @swiglu_gate_up
// EMU-NOT:   nvvm.mma.sync
// EMU:       scf.for %{{.*}} = %c0 to %c32 step %c16 iter_args(
// EMU:         scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args(
// NONE-LABEL: func.func @swiglu_gate_up
// NONE-NOT:   nvvm.mma.sync
// BAD: --distribute-to-threads: mma must be none, sync or emulate, got 'wmma'
func.func @swiglu_gate_up(%x: memref<1x8x32xbf16>, %w1: memref<32x16xbf16>,
                          %w2: memref<32x16xbf16>, %g: memref<1x8x16xf32>,
                          %u: memref<1x8x16xf32>) {
  scf.forall (%i) in (1) {
    linalg.generic {indexing_maps = [#a, #w, #w, #o, #o],
                    iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
        ins(%x, %w1, %w2 : memref<1x8x32xbf16>, memref<32x16xbf16>, memref<32x16xbf16>)
        outs(%g, %u : memref<1x8x16xf32>, memref<1x8x16xf32>) {
    ^bb0(%in: bf16, %in1: bf16, %in2: bf16, %o1: f32, %o2: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %in1 : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %o1, %2 : f32
      %4 = arith.extf %in2 : bf16 to f32
      %5 = arith.mulf %0, %4 : f32
      %6 = arith.addf %o2, %5 : f32
      linalg.yield %3, %6 : f32, f32
    }
  }
  return
}

// -----

#a = affine_map<(m, k, n) -> (m, k)>
#w = affine_map<(m, k, n) -> (k, n)>
#o = affine_map<(m, k, n) -> (m, n)>

// fp16, 32 rows (no mask), n = 32 (4 subtiles per warp step): f16 pairs as
// vector<2xf16>; no row checks.
// CHECK-LABEL: func.func @f16_rows
// CHECK-NOT:   arith.cmpi ult
// CHECK:       vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK:       nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT:   scf.if
// CHECK:       } {mapping = [#gpu.thread<x>]}
func.func @f16_rows(%x: memref<32x16xf16>, %w: memref<16x32xf16>, %y: memref<32x32xf32>) {
  scf.forall (%i) in (1) {
    linalg.generic {indexing_maps = [#a, #w, #o],
                    iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%x, %w : memref<32x16xf16>, memref<16x32xf16>) outs(%y : memref<32x32xf32>) {
    ^bb0(%in: f16, %in1: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %in1 : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
  }
  return
}

// -----

#a = affine_map<(b, m, k, n) -> (b, m, k)>
#w = affine_map<(b, m, k, n) -> (k, n)>
#o = affine_map<(b, m, k, n) -> (b, m, n)>

// A dynamic number of rows (a row block at the end of a dynamic sequence):
// the tile count and the row mask come from the sizes at run time.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK:       %[[ROWS:.*]] = memref.dim %{{.*}}, %c1
// CHECK:       %[[TILES:.*]] = affine.apply #{{.*}}()[%[[ROWS]]]
// CHECK:       scf.for %{{.*}} = %{{.*}} to %[[TILES]] step %c2
// CHECK:         arith.cmpi ult, %{{.*}}, %[[ROWS]] : index
// CHECK:         nvvm.mma.sync
func.func @dynamic_rows(%x: memref<1x?x16xbf16>, %w: memref<16x8xbf16>, %y: memref<1x?x8xf32>) {
  scf.forall (%i) in (1) {
    linalg.generic {indexing_maps = [#a, #w, #o],
                    iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
        ins(%x, %w : memref<1x?x16xbf16>, memref<16x8xbf16>) outs(%y : memref<1x?x8xf32>) {
    ^bb0(%in: bf16, %in1: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %in1 : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
  }
  return
}

// -----

#a = affine_map<(m, k, n) -> (m, k)>
#w = affine_map<(m, k, n) -> (k, n)>
#o = affine_map<(m, k, n) -> (m, n)>

// Not for the tensor cores: fp32 operands (TF32 would miss fp32's
// tolerance), and k = 24 (not a multiple of 16). Both stay register loops.
// CHECK-LABEL: func.func @not_mma
// CHECK-NOT:   nvvm.mma.sync
// CHECK:       arith.mulf
// CHECK-NOT:   nvvm.mma.sync
// CHECK:       arith.extf
// CHECK-NOT:   nvvm.mma.sync
func.func @not_mma(%x: memref<16x16xf32>, %w: memref<16x8xf32>, %y: memref<16x8xf32>,
                   %xb: memref<16x24xbf16>, %wb: memref<24x8xbf16>) {
  scf.forall (%i) in (1) {
    linalg.generic {indexing_maps = [#a, #w, #o],
                    iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%x, %w : memref<16x16xf32>, memref<16x8xf32>) outs(%y : memref<16x8xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %0 = arith.mulf %in, %in1 : f32
      %1 = arith.addf %out, %0 : f32
      linalg.yield %1 : f32
    }
    linalg.generic {indexing_maps = [#a, #w, #o],
                    iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%xb, %wb : memref<16x24xbf16>, memref<24x8xbf16>) outs(%y : memref<16x8xf32>) {
    ^bb0(%in: bf16, %in1: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %in1 : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
  }
  return
}

// -----

#a = affine_map<(m, j, k) -> (m, k)>
#b = affine_map<(m, j, k) -> (k, m)>
#u = affine_map<(m, j, k) -> (j)>
#o = affine_map<(m, j, k) -> (m, m)>

// Not a GEMM although its body is one: the output is not indexed by every
// parallel dim once (a diagonal, repeated along j).
// CHECK-LABEL: func.func @diagonal_output
// CHECK-NOT:   nvvm.mma.sync
// CHECK:       } {mapping = [#gpu.thread<x>]}
func.func @diagonal_output(%x: memref<16x16xbf16>, %w: memref<16x16xbf16>,
                           %z: memref<8xbf16>, %y: memref<16x16xf32>) {
  scf.forall (%i) in (1) {
    linalg.generic {indexing_maps = [#a, #b, #u, #o],
                    iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w, %z : memref<16x16xbf16>, memref<16x16xbf16>, memref<8xbf16>)
        outs(%y : memref<16x16xf32>) {
    ^bb0(%in: bf16, %in1: bf16, %in2: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %in1 : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
  }
  return
}
