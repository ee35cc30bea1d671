// RUN: gatec-opt %s --outline-loop-nests | FileCheck %s
// RUN: gatec-opt %s --outline-loop-nests | FileCheck %s --check-prefix=TWO

// Two layers' kernels: the same nest over different weights (@w0, @w1)
// and sizes, and one nest that differs (a subtraction). The first two
// call one function, given each layer's weights; the third has its own.
// The constants the nests read (the step, 2.0) are cloned into the
// functions; the buffers, the dynamic size and the weights are arguments.
// TWO-COUNT-2: func.func private
// TWO-NOT:     func.func private

// CHECK-LABEL: func.func private @layers_kernel_0(
// CHECK-SAME:      %[[N:.*]]: index, %[[X:.*]]: memref<?x4xf32>, %[[W:.*]]: memref<4xf32>, %[[Y:.*]]: memref<?x4xf32>)
// CHECK-SAME:      attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK-DAG:     arith.constant 2.000000e+00 : f32
// CHECK:         scf.forall (%{{.*}}) in (%[[N]])
// CHECK:           memref.load %[[W]]
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         return
// CHECK-LABEL: func.func private @layers_kernel_1(
// CHECK:           arith.subf
// CHECK-LABEL: func.func @layers(
// CHECK-SAME:      %[[A:.*]]: memref<?x4xf32>, %[[B:.*]]: memref<?x4xf32>, %[[C:.*]]: memref<?x4xf32>, %[[D:.*]]: memref<?x4xf32>
// CHECK:         %[[W0:.*]] = memref.get_global @w0
// CHECK:         call @layers_kernel_0(%{{.*}}, %[[A]], %[[W0]], %[[B]])
// CHECK:         %[[W1:.*]] = memref.get_global @w1
// CHECK:         call @layers_kernel_0(%{{.*}}, %[[B]], %[[W1]], %[[C]])
// CHECK:         %[[W1B:.*]] = memref.get_global @w1
// CHECK:         call @layers_kernel_1(%{{.*}}, %[[C]], %[[W1B]], %[[D]])
// CHECK-NOT:     scf.forall
// CHECK:         return
memref.global "private" constant @w0 : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
memref.global "private" constant @w1 : memref<4xf32> = dense<[5.0, 6.0, 7.0, 8.0]>
func.func @layers(%a: memref<?x4xf32>, %b: memref<?x4xf32>,
                  %c: memref<?x4xf32>, %d: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %two = arith.constant 2.0 : f32
  %n = memref.dim %a, %c0 : memref<?x4xf32>
  scf.forall (%i) in (%n) {
    %w = memref.get_global @w0 : memref<4xf32>
    scf.for %j = %c0 to %c4 step %c1 {
      %x = memref.load %a[%i, %j] : memref<?x4xf32>
      %wj = memref.load %w[%j] : memref<4xf32>
      %p = arith.mulf %x, %two : f32
      %s = arith.addf %p, %wj : f32
      memref.store %s, %b[%i, %j] : memref<?x4xf32>
    }
  }
  scf.forall (%i) in (%n) {
    %w = memref.get_global @w1 : memref<4xf32>
    scf.for %j = %c0 to %c4 step %c1 {
      %x = memref.load %b[%i, %j] : memref<?x4xf32>
      %wj = memref.load %w[%j] : memref<4xf32>
      %p = arith.mulf %x, %two : f32
      %s = arith.addf %p, %wj : f32
      memref.store %s, %c[%i, %j] : memref<?x4xf32>
    }
  }
  scf.forall (%i) in (%n) {
    %w = memref.get_global @w1 : memref<4xf32>
    scf.for %j = %c0 to %c4 step %c1 {
      %x = memref.load %c[%i, %j] : memref<?x4xf32>
      %wj = memref.load %w[%j] : memref<4xf32>
      %p = arith.mulf %x, %two : f32
      %s = arith.subf %p, %wj : f32
      memref.store %s, %d[%i, %j] : memref<?x4xf32>
    }
  }
  return
}
