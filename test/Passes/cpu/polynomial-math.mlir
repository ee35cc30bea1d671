// RUN: gatec-opt %s --pass-pipeline="builtin.module(func.func(polynomial-math))" | FileCheck %s

// exp, expm1, tanh and erf (scalars, vectors, bf16 through f32) become
// arith polynomials; log stays a math op (a libm call later).
// CHECK-LABEL: func.func @math
// CHECK-NOT:     math.exp
// CHECK-NOT:     math.expm1
// CHECK-NOT:     math.tanh
// CHECK-NOT:     math.erf
// CHECK:         math.log
// CHECK-NOT:     math.exp
// CHECK-NOT:     math.erf
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

// erf: odd (the sign of x restored at the end), a rational polynomial of
// |x| whose coefficients are chosen by comparing |x| with 0.8 and 2, and
// ±1 from 3.75 on (an unordered compare: NaN stays NaN). On vectors and on
// bf16 (computed in f32).
// CHECK-LABEL: func.func @erf
// CHECK-NOT:     math.erf
// CHECK:         arith.cmpf olt, %arg0
// CHECK:         arith.cmpf olt, %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         arith.cmpf ult, %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         arith.divf {{.*}} : vector<16xf32>
// CHECK:         arith.extf %arg1 : bf16 to f32
// CHECK:         arith.truncf {{.*}} : f32 to bf16
// CHECK-NOT:     math.erf
// CHECK:         return
func.func @erf(%v: vector<16xf32>, %h: bf16) -> (vector<16xf32>, bf16) {
  %a = math.erf %v : vector<16xf32>
  %b = math.erf %h : bf16
  return %a, %b : vector<16xf32>, bf16
}
