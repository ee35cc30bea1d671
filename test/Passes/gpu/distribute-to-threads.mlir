// RUN: gatec-opt %s --split-input-file --verify-diagnostics --distribute-to-threads=threads=64 | FileCheck %s
// RUN: gatec-opt %s --split-input-file --verify-diagnostics --distribute-to-threads="threads=64 shared-memory=128" | FileCheck %s --check-prefix=BUDGET

// A row block of a GEMM with its epilogue, as --tile-and-fuse-linalg leaves
// it: the block's scratch tile becomes a slice of one buffer per loop (4
// blocks x 4x8 f32 = 128 bytes each), marked for workgroup memory (it fits
// in the default 48 KiB), each linalg op and copy a loop over 64 threads,
// the reduction a register loop per output element.
// CHECK-LABEL: func.func @gemm_rows
// CHECK: %[[SCRATCH:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64, gatec.workgroup_scratch = 128 : i64} : memref<?xi8>
// CHECK: scf.forall (%[[I:.*]]) = (0) to (16) step (4) {
// CHECK:   %[[TILE:.*]] = memref.view %[[SCRATCH]][%{{.*}}][] {gatec.workgroup_offset = 0 : i64} : memref<?xi8> to memref<4x8xf32>
// CHECK:   scf.forall (%[[T:.*]]) in (64) {
// CHECK:     scf.for %{{.*}} = %[[T]] to %{{.*}} step %{{.*}} {
// CHECK:       memref.store %{{.*}}, %[[TILE]]
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK:   scf.forall (%{{.*}}) in (64) {
// CHECK:       affine.delinearize_index
// CHECK:       %[[ACC:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK:         arith.mulf
// CHECK:         arith.addf
// CHECK:       memref.store %[[ACC]], %[[TILE]]
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK:   scf.forall (%{{.*}}) in (64) {
// CHECK:       memref.load %[[TILE]]
// CHECK:       math.exp
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK-NOT: memref.dealloc %[[TILE]]
// CHECK: }
// CHECK: memref.dealloc %[[SCRATCH]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @gemm_rows(%a: memref<16x32xf32>, %w: memref<32x8xf32>,
                     %out: memref<16x8xf32>) {
  %cst = arith.constant 0.0 : f32
  scf.forall (%i) = (0) to (16) step (4) {
    %as = memref.subview %a[%i, 0] [4, 32] [1, 1]
        : memref<16x32xf32> to memref<4x32xf32, strided<[32, 1], offset: ?>>
    %tile = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
    linalg.fill ins(%cst : f32) outs(%tile : memref<4x8xf32>)
    linalg.matmul ins(%as, %w : memref<4x32xf32, strided<[32, 1], offset: ?>>, memref<32x8xf32>)
                  outs(%tile : memref<4x8xf32>)
    %os = memref.subview %out[%i, 0] [4, 8] [1, 1]
        : memref<16x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%tile : memref<4x8xf32>) outs(%os : memref<4x8xf32, strided<[8, 1], offset: ?>>) {
    ^bb0(%in: f32, %o: f32):
      %e = math.exp %in : f32
      linalg.yield %e : f32
    }
    memref.dealloc %tile : memref<4x8xf32>
  }
  return
}

// -----

// A reduction with at least 4 x 64 outputs: each thread computes 4
// consecutive outputs of the innermost parallel dimension together (the A
// element is loaded once per k for all four), 4 accumulators in registers.
// CHECK-LABEL: func.func @gemm_groups
// CHECK: scf.forall (%[[T:.*]]) in (64) {
// CHECK:   scf.for %[[E:.*]] = %[[T]] to %c64 step %{{.*}} {
// CHECK:     %[[G:.*]]:2 = affine.delinearize_index %[[E]] into (16, 4)
// CHECK:     %[[N0:.*]] = affine.apply #{{.*}}(%[[G]]#1)
// CHECK:     %[[N1:.*]] = affine.apply #{{.*}}(%[[G]]#1)
// CHECK:     %[[N2:.*]] = affine.apply #{{.*}}(%[[G]]#1)
// CHECK:     %[[N3:.*]] = affine.apply #{{.*}}(%[[G]]#1)
// CHECK:     %{{.*}}:4 = scf.for %[[K:.*]] = %c0 to %c32 step %c1 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32, f32, f32) {
// CHECK:       memref.load %{{.*}}[%[[G]]#0, %[[K]]]
// CHECK:       memref.load %{{.*}}[%[[K]], %[[N0]]]
// CHECK:       memref.load %{{.*}}[%[[K]], %[[N3]]]
// CHECK:       scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32, f32, f32, f32
// CHECK:     memref.store %{{.*}}#0, %{{.*}}[%[[G]]#0, %[[N0]]]
// CHECK:     memref.store %{{.*}}#3, %{{.*}}[%[[G]]#0, %[[N3]]]
// CHECK: } {mapping = [#gpu.thread<x>]}
func.func @gemm_groups(%a: memref<16x32xf32>, %w: memref<32x16xf32>,
                       %out: memref<16x16xf32>) {
  scf.forall (%i) in (1) {
    linalg.matmul ins(%a, %w : memref<16x32xf32>, memref<32x16xf32>)
                  outs(%out : memref<16x16xf32>)
  }
  return
}

// -----

// Two 128-byte scratch tiles with 128 bytes of shared memory per block: the
// first (in program order) goes to the workgroup buffer, the second to the
// global one.
// BUDGET-LABEL: func.func @two_tiles
// BUDGET-DAG: %[[GLOBAL:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xi8>
// BUDGET-DAG: %[[SHARED:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64, gatec.workgroup_scratch = 128 : i64} : memref<?xi8>
// BUDGET: scf.forall
// BUDGET:   memref.view %[[SHARED]][%{{.*}}][] {gatec.workgroup_offset = 0 : i64} : memref<?xi8> to memref<4x8xf32>
// BUDGET:   memref.view %[[GLOBAL]][%{{.*}}][] : memref<?xi8> to memref<4x8xf32>
// BUDGET-DAG: memref.dealloc %[[SHARED]]
// BUDGET-DAG: memref.dealloc %[[GLOBAL]]
func.func @two_tiles(%x: memref<8x8xf32>, %out: memref<8x8xf32>) {
  scf.forall (%i) = (0) to (8) step (4) {
    %xs = memref.subview %x[%i, 0] [4, 8] [1, 1]
        : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
    %a = memref.alloc() : memref<4x8xf32>
    memref.copy %xs, %a : memref<4x8xf32, strided<[8, 1], offset: ?>> to memref<4x8xf32>
    %b = memref.alloc() : memref<4x8xf32>
    memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
    %os = memref.subview %out[%i, 0] [4, 8] [1, 1]
        : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
    memref.copy %b, %os : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
  }
  return
}

// -----

// An op on a device buffer outside any loop (here a copy into the result)
// becomes a kernel of ceil(elements / (4 * threads)) blocks (here 1); a
// scalar store inside a kernel runs on one thread.
// CHECK-LABEL: func.func @host_ops
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK:   scf.forall (%{{.*}}) in (64) {
// CHECK:     memref.load %{{.*}} : memref<8xf32>
// CHECK:     memref.store %{{.*}} : memref<8xf32>
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK: }
// CHECK: scf.forall (%{{.*}}) in (2) {
// CHECK:   scf.forall (%{{.*}}) in (1) {
// CHECK:     memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<2xf32>
// CHECK:   } {mapping = [#gpu.thread<x>]}
func.func @host_ops(%x: memref<8xf32>, %y: memref<8xf32>, %s: memref<2xf32>) {
  memref.copy %x, %y : memref<8xf32> to memref<8xf32>
  %one = arith.constant 1.0 : f32
  scf.forall (%b) in (2) {
    memref.store %one, %s[%b] : memref<2xf32>
  }
  return
}

// -----

// Buffers chosen at run time (the run-time broadcast of a size-1 dim) that a
// kernel reads are device buffers, and so is everything they may be: the
// copies in the branches become one-block kernels too (they were left as
// host loops reading device memory).
// CHECK-LABEL: func.func @chosen_at_run_time
// CHECK: scf.if
// CHECK:   scf.forall (%{{.*}}) in (1) {
// CHECK:     scf.forall (%{{.*}}) in (64) {
// CHECK: scf.if
// CHECK:   scf.forall (%{{.*}}) in (1) {
// CHECK:     scf.forall (%{{.*}}) in (64) {
func.func @chosen_at_run_time(%x: memref<8xf32>, %c: i1, %d: i1, %out: memref<8xf32>) {
  %b = scf.if %c -> (memref<8xf32>) {
    %a = memref.alloc() : memref<8xf32>
    memref.copy %x, %a : memref<8xf32> to memref<8xf32>
    scf.yield %a : memref<8xf32>
  } else {
    scf.yield %x : memref<8xf32>
  }
  %e = scf.if %d -> (memref<8xf32>) {
    %t = memref.alloc() : memref<8xf32>
    memref.copy %b, %t : memref<8xf32> to memref<8xf32>
    scf.yield %t : memref<8xf32>
  } else {
    scf.yield %b : memref<8xf32>
  }
  scf.forall (%i) in (2) {
    memref.copy %e, %out : memref<8xf32> to memref<8xf32>
  }
  return
}

// -----

// Over data sized at run time (a concat's copy into its slice of the
// result), the kernel has ceil(n * 1024 / (4 * 64)) blocks, at most 65536,
// and they share the elements: block b's thread t starts at b * 64 + t and
// steps by blocks * 64 (a grid-stride loop), so no one-block kernel walks
// megabytes.
// CHECK-DAG: #[[BLOCKS:.*]] = affine_map<()[s0] -> (s0 * 4, 65536)>
// CHECK-DAG: #[[START:.*]] = affine_map<(d0, d1) -> (d0 * 64 + d1)>
// CHECK-DAG: #[[STEP:.*]] = affine_map<(d0) -> (d0 * 64)>
// CHECK-LABEL: func.func @grid_stride
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK: %[[B:.*]] = affine.min #[[BLOCKS]]()[%[[N]]]
// CHECK: scf.forall (%[[BID:.*]]) in (%[[B]]) {
// CHECK:   scf.forall (%[[T:.*]]) in (64) {
// CHECK:     %[[FIRST:.*]] = affine.apply #[[START]](%[[BID]], %[[T]])
// CHECK:     %[[STRIDE:.*]] = affine.apply #[[STEP]](%[[B]])
// CHECK:     scf.for %{{.*}} = %[[FIRST]] to %{{.*}} step %[[STRIDE]] {
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK: } {gatec.grid_stride}
func.func @grid_stride(%x: memref<?x1024xf32>, %y: memref<?x2048xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x1024xf32>
  %v = memref.subview %y[0, 1024] [%n, 1024] [1, 1] : memref<?x2048xf32> to memref<?x1024xf32, strided<[2048, 1], offset: 1024>>
  memref.copy %x, %v : memref<?x1024xf32> to memref<?x1024xf32, strided<[2048, 1], offset: 1024>>
  return
}

// -----

// A scratch buffer whose size has no constant bound cannot be hoisted.
func.func @unbounded(%n: index, %out: memref<?xf32>) {
  scf.forall (%b) in (2) {
    // expected-error @below {{has no constant upper bound on its size}}
    %t = memref.alloc(%n) : memref<?xf32>
    memref.copy %t, %out : memref<?xf32> to memref<?xf32>
    memref.dealloc %t : memref<?xf32>
  }
  return
}
