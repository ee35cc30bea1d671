// RUN: gatec-opt %s --pass-pipeline="builtin.module(func.func(polynomial-math))" | FileCheck %s

// exp, expm1 and tanh (scalars, vectors, bf16 through f32) become arith
// polynomials; log and erf stay math ops (libm calls later).
// CHECK-LABEL: func.func @math
// CHECK-NOT:     math.exp
// CHECK-NOT:     math.expm1
// CHECK-NOT:     math.tanh
// CHECK:         math.log
// CHECK:         math.erf
// CHECK-NOT:     math.exp
// CHECK:         return
func.func @math(%x: f32, %v: vector<16xf32>, %h: bf16) -> (f32, vector<16xf32>, f32, bf16, f32, f32) {
  %a = math.exp %x : f32
  %b = math.exp %v : vector<16xf32>
  %c = math.expm1 %x : f32
  %d = math.tanh %h : bf16
  %e = math.log %x : f32
  %f = math.erf %x : f32
  return %a, %b, %c, %d, %e, %f : f32, vector<16xf32>, f32, bf16, f32, f32
}
