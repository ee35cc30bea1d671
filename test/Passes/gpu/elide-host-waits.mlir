// RUN: gatec-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(elide-host-waits))" | FileCheck %s

// Shape arithmetic on a host buffer between two kernels: the wait before it
// goes, and the second launch is chained onto the first one's token.
// CHECK-LABEL: func.func @shape_math
// CHECK: %[[T1:.*]] = gpu.launch_func async [%{{.*}}] @k::@k
// CHECK-NOT: gpu.wait [
// CHECK: memref.store
// CHECK: memref.load
// CHECK: gpu.launch_func async [%[[T1]]] @k::@k
// CHECK: gpu.wait [%{{.*}}]
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%a: memref<4xf32>) kernel { gpu.return }
  }
  func.func @shape_math(%a: memref<4xf32>, %n: index) -> index {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %t1 = gpu.launch_func async [%t0] @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.wait [%t1]
    %shape = memref.alloc() : memref<2xindex>
    memref.store %n, %shape[%c0] : memref<2xindex>
    %m = memref.load %shape[%c0] : memref<2xindex>
    memref.dealloc %shape : memref<2xindex>
    %t2 = gpu.wait async
    %t3 = gpu.launch_func async [%t2] @k::@k blocks in (%m, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.wait [%t3]
    return %m : index
  }
}

// -----

// Reading what a gpu.memcpy copied to the host needs the wait; so does a
// call (it may touch anything).
// CHECK-LABEL: func.func @needs_the_gpu
// CHECK: gpu.memcpy
// CHECK-NEXT: gpu.wait [%{{.*}}]
// CHECK-NEXT: memref.load
// CHECK: gpu.launch_func
// CHECK-NEXT: gpu.wait [%{{.*}}]
// CHECK-NEXT: call @opaque
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%a: memref<4xf32>) kernel { gpu.return }
  }
  func.func private @opaque()
  func.func @needs_the_gpu(%a: memref<4xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %host = memref.alloc() : memref<4xf32>
    %t0 = gpu.wait async
    %t1 = gpu.memcpy async [%t0] %host, %a : memref<4xf32>, memref<4xf32>
    gpu.wait [%t1]
    %x = memref.load %host[%c0] : memref<4xf32>
    %t2 = gpu.wait async
    %t3 = gpu.launch_func async [%t2] @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.wait [%t3]
    call @opaque() : () -> ()
    %t4 = gpu.wait async
    %t5 = gpu.launch_func async [%t4] @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.wait [%t5]
    return %x : f32
  }
}
