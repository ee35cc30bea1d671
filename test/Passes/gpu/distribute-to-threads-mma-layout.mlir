// RUN: gatec-opt %s --split-input-file --distribute-to-threads="threads=32 mma=sync" --canonicalize --cse | FileCheck %s
// RUN: gatec-opt %s --split-input-file --distribute-to-threads="threads=32 mma=sync tf32=true" --canonicalize --cse | FileCheck %s --check-prefix=TF32

// The lane layout of mma.sync.m16n8k16 (.f16/.bf16 operands, .f32
// accumulators), pinned to the PTX ISA's figures ("Matrix Fragments for
// mma.m16n8k16 with floating point type"): with g = laneid / 4 and
// t = laneid % 4,
//   A (16x16, row): a0,a1 (g, 2t..2t+1)    a2,a3 (g+8, 2t..2t+1)
//                   a4,a5 (g, 2t+8..2t+9)  a6,a7 (g+8, 2t+8..2t+9)
//   B (16x8, col):  b0,b1 (k 2t..2t+1, n g)  b2,b3 (k 2t+8..2t+9, n g)
//   C/D (16x8):     c0,c1 (g, 2t..2t+1)    c2,c3 (g+8, 2t..2t+1)
// two 16-bit elements per 32-bit register, the lower index in the lower
// half. One warp, one tile: every index is a function of the lane alone.

// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0 * 16 + (d1 mod 32) floordiv 4)>
// CHECK-DAG: #[[ROW8:.*]] = affine_map<(d0, d1) -> (d0 * 16 + (d1 mod 32) floordiv 4 + 8)>
// CHECK-DAG: #[[T2:.*]] = affine_map<(d0) -> (d0 * 2 - (d0 floordiv 4) * 8)>
// CHECK-DAG: #[[T21:.*]] = affine_map<(d0) -> (d0 * 2 - (d0 floordiv 4) * 8 + 1)>
// CHECK-DAG: #[[T28:.*]] = affine_map<(d0) -> (d0 * 2 - (d0 floordiv 4) * 8 + 8)>
// CHECK-DAG: #[[T29:.*]] = affine_map<(d0) -> (d0 * 2 - (d0 floordiv 4) * 8 + 9)>
// CHECK-DAG: #[[G:.*]] = affine_map<(d0) -> ((d0 mod 32) floordiv 4)>
// CHECK-LABEL: func.func @layout
// CHECK:      scf.forall (%[[L:.*]]) in (32) {
// CHECK:        scf.for %[[TILE:.*]] = %{{.*}} to %c1 step %c1 {
// CHECK-DAG:      %[[R:.*]] = affine.apply #[[ROW]](%[[TILE]], %[[L]])
// CHECK-DAG:      %[[R8:.*]] = affine.apply #[[ROW8]](%[[TILE]], %[[L]])
// CHECK-DAG:      %[[C:.*]] = affine.apply #[[T2]](%[[L]])
// CHECK-DAG:      %[[C1:.*]] = affine.apply #[[T21]](%[[L]])
// CHECK-DAG:      %[[C8:.*]] = affine.apply #[[T28]](%[[L]])
// CHECK-DAG:      %[[C9:.*]] = affine.apply #[[T29]](%[[L]])
// CHECK-DAG:      %[[N:.*]] = affine.apply #[[G]](%[[L]])
// CHECK-DAG:      %[[ACC0:.*]] = memref.load %arg2[%[[R]], %[[C]]]
// CHECK-DAG:      %[[ACC1:.*]] = memref.load %arg2[%[[R]], %[[C1]]]
// CHECK-DAG:      %[[ACC2:.*]] = memref.load %arg2[%[[R8]], %[[C]]]
// CHECK-DAG:      %[[ACC3:.*]] = memref.load %arg2[%[[R8]], %[[C1]]]
// CHECK-DAG:      %[[A0:.*]] = memref.load %arg0[%[[R]], %[[C]]]
// CHECK-DAG:      %[[A1:.*]] = memref.load %arg0[%[[R]], %[[C1]]]
// CHECK-DAG:      %[[A2:.*]] = memref.load %arg0[%[[R8]], %[[C]]]
// CHECK-DAG:      %[[A3:.*]] = memref.load %arg0[%[[R8]], %[[C1]]]
// CHECK-DAG:      %[[A4:.*]] = memref.load %arg0[%[[R]], %[[C8]]]
// CHECK-DAG:      %[[A5:.*]] = memref.load %arg0[%[[R]], %[[C9]]]
// CHECK-DAG:      %[[A6:.*]] = memref.load %arg0[%[[R8]], %[[C8]]]
// CHECK-DAG:      %[[A7:.*]] = memref.load %arg0[%[[R8]], %[[C9]]]
// CHECK-DAG:      %[[B0:.*]] = memref.load %arg1[%[[C]], %[[N]]]
// CHECK-DAG:      %[[B1:.*]] = memref.load %arg1[%[[C1]], %[[N]]]
// CHECK-DAG:      %[[B2:.*]] = memref.load %arg1[%[[C8]], %[[N]]]
// CHECK-DAG:      %[[B3:.*]] = memref.load %arg1[%[[C9]], %[[N]]]
// CHECK-DAG:      %[[RA0:.*]] = vector.from_elements %[[A0]], %[[A1]] : vector<2xf16>
// CHECK-DAG:      %[[RA1:.*]] = vector.from_elements %[[A2]], %[[A3]] : vector<2xf16>
// CHECK-DAG:      %[[RA2:.*]] = vector.from_elements %[[A4]], %[[A5]] : vector<2xf16>
// CHECK-DAG:      %[[RA3:.*]] = vector.from_elements %[[A6]], %[[A7]] : vector<2xf16>
// CHECK-DAG:      %[[RB0:.*]] = vector.from_elements %[[B0]], %[[B1]] : vector<2xf16>
// CHECK-DAG:      %[[RB1:.*]] = vector.from_elements %[[B2]], %[[B3]] : vector<2xf16>
// CHECK:          %[[D:.*]] = nvvm.mma.sync A[%[[RA0]], %[[RA1]], %[[RA2]], %[[RA3]]]  B[%[[RB0]], %[[RB1]]]  C[%[[ACC0]], %[[ACC1]], %[[ACC2]], %[[ACC3]]]
// CHECK-DAG:      %[[D0:.*]] = llvm.extractvalue %[[D]][0]
// CHECK-DAG:      %[[D1:.*]] = llvm.extractvalue %[[D]][1]
// CHECK-DAG:      %[[D2:.*]] = llvm.extractvalue %[[D]][2]
// CHECK-DAG:      %[[D3:.*]] = llvm.extractvalue %[[D]][3]
// CHECK-DAG:      memref.store %[[D0]], %arg2[%[[R]], %[[C]]]
// CHECK-DAG:      memref.store %[[D1]], %arg2[%[[R]], %[[C1]]]
// CHECK-DAG:      memref.store %[[D2]], %arg2[%[[R8]], %[[C]]]
// CHECK-DAG:      memref.store %[[D3]], %arg2[%[[R8]], %[[C1]]]
#a = affine_map<(m, k, n) -> (m, k)>
#w = affine_map<(m, k, n) -> (k, n)>
#o = affine_map<(m, k, n) -> (m, n)>
func.func @layout(%x: memref<16x16xf16>, %w: memref<16x8xf16>, %y: memref<16x8xf32>) {
  scf.forall (%i) in (1) {
    linalg.generic {indexing_maps = [#a, #w, #o],
                    iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%x, %w : memref<16x16xf16>, memref<16x8xf16>) outs(%y : memref<16x8xf32>) {
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

// The lane layout of mma.sync.m16n8k8 with .tf32 operands (fp32 in memory,
// rounded by cvt.rna.tf32.f32, one element per 32-bit register), pinned to
// the PTX ISA's figures ("Matrix Fragments for mma.m16n8k8" .tf32): with
// g = laneid / 4 and t = laneid % 4,
//   A (16x8, row): a0 (g, t)  a1 (g+8, t)  a2 (g, t+4)  a3 (g+8, t+4)
//   B (8x8, col):  b0 (k t, n g)  b1 (k t+4, n g)
//   C/D (16x8):    as for m16n8k16.
// Without tf32=true the fp32 GEMM stays on the FMA units.
// TF32-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0 * 16 + (d1 mod 32) floordiv 4)>
// TF32-DAG: #[[ROW8:.*]] = affine_map<(d0, d1) -> (d0 * 16 + (d1 mod 32) floordiv 4 + 8)>
// TF32-DAG: #[[T:.*]] = affine_map<(d0) -> (d0 mod 4)>
// TF32-DAG: #[[T4:.*]] = affine_map<(d0) -> (d0 mod 4 + 4)>
// TF32-DAG: #[[G:.*]] = affine_map<(d0) -> ((d0 mod 32) floordiv 4)>
// TF32-LABEL: func.func @layout_tf32
// TF32:      scf.forall (%[[L:.*]]) in (32) {
// TF32:        scf.for %[[TILE:.*]] = %{{.*}} to %c1 step %c1 {
// TF32-DAG:      %[[R:.*]] = affine.apply #[[ROW]](%[[TILE]], %[[L]])
// TF32-DAG:      %[[R8:.*]] = affine.apply #[[ROW8]](%[[TILE]], %[[L]])
// TF32-DAG:      %[[K:.*]] = affine.apply #[[T]](%[[L]])
// TF32-DAG:      %[[K4:.*]] = affine.apply #[[T4]](%[[L]])
// TF32-DAG:      %[[N:.*]] = affine.apply #[[G]](%[[L]])
// TF32-DAG:      %[[A0:.*]] = memref.load %arg0[%[[R]], %[[K]]]
// TF32-DAG:      %[[A1:.*]] = memref.load %arg0[%[[R8]], %[[K]]]
// TF32-DAG:      %[[A2:.*]] = memref.load %arg0[%[[R]], %[[K4]]]
// TF32-DAG:      %[[A3:.*]] = memref.load %arg0[%[[R8]], %[[K4]]]
// TF32-DAG:      %[[B0:.*]] = memref.load %arg1[%[[K]], %[[N]]]
// TF32-DAG:      %[[B1:.*]] = memref.load %arg1[%[[K4]], %[[N]]]
// TF32-DAG:      %[[RA0:.*]] = nvvm.convert.float.to.tf32 %[[A0]] {rnd = #nvvm.fp_rnd_mode<rna>}
// TF32-DAG:      %[[RA1:.*]] = nvvm.convert.float.to.tf32 %[[A1]] {rnd = #nvvm.fp_rnd_mode<rna>}
// TF32-DAG:      %[[RA2:.*]] = nvvm.convert.float.to.tf32 %[[A2]] {rnd = #nvvm.fp_rnd_mode<rna>}
// TF32-DAG:      %[[RA3:.*]] = nvvm.convert.float.to.tf32 %[[A3]] {rnd = #nvvm.fp_rnd_mode<rna>}
// TF32-DAG:      %[[RB0:.*]] = nvvm.convert.float.to.tf32 %[[B0]] {rnd = #nvvm.fp_rnd_mode<rna>}
// TF32-DAG:      %[[RB1:.*]] = nvvm.convert.float.to.tf32 %[[B1]] {rnd = #nvvm.fp_rnd_mode<rna>}
// TF32:          nvvm.mma.sync A[%[[RA0]], %[[RA1]], %[[RA2]], %[[RA3]]]  B[%[[RB0]], %[[RB1]]]  C[{{.*}}] {{{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>}
// CHECK-LABEL: func.func @layout_tf32
// CHECK-NOT: nvvm.mma.sync
#a = affine_map<(m, k, n) -> (m, k)>
#w = affine_map<(m, k, n) -> (k, n)>
#o = affine_map<(m, k, n) -> (m, n)>
func.func @layout_tf32(%x: memref<16x8xf32>, %w: memref<8x8xf32>, %y: memref<16x8xf32>) {
  scf.forall (%i) in (1) {
    linalg.generic {indexing_maps = [#a, #w, #o],
                    iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%x, %w : memref<16x8xf32>, memref<8x8xf32>) outs(%y : memref<16x8xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %2 = arith.mulf %in, %in1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
  }
  return
}
