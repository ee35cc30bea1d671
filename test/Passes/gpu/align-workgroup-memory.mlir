// RUN: gatec-opt %s --pass-pipeline="builtin.module(gpu.module(align-workgroup-memory))" | FileCheck %s
// RUN: gatec-opt %s --pass-pipeline="builtin.module(gpu.module(align-workgroup-memory{alignment=64}))" | FileCheck %s --check-prefix=A64

// Every workgroup attribution gets llvm.align (16 by default); a larger
// alignment already there is kept.
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: workgroup(%{{.*}} : memref<256xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<64xi8, #gpu.address_space<workgroup>> {llvm.align = 32 : i64})
// A64-LABEL: gpu.func @k
// A64-SAME: workgroup(%{{.*}} : memref<256xi8, #gpu.address_space<workgroup>> {llvm.align = 64 : i64}, %{{.*}} : memref<64xi8, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k() workgroup(%a : memref<256xi8, #gpu.address_space<workgroup>>, %b : memref<64xi8, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}) kernel {
      gpu.return
    }
  }
}
