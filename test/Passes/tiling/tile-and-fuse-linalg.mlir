// RUN: gatec-opt %s --tile-and-fuse-linalg --canonicalize --cse | FileCheck %s
// RUN: gatec-opt %s --tile-and-fuse-linalg=rows=4 | FileCheck %s --check-prefix=ROWS

#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>

// A GEMM and its sigmoid-multiply epilogue (a G5 gate) become one loop over
// row blocks: the GEMM is computed tile by tile inside it, never whole.
// CHECK-LABEL: func.func @gemm_epilogue
// CHECK:         scf.forall (%[[I:.*]]) = (0) to (64) step (8)
// CHECK:           linalg.fill
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:             arith.negf
// CHECK:             math.exp
// CHECK:           tensor.parallel_insert_slice
// CHECK-NOT:     linalg.generic
// CHECK:         return
// ROWS-LABEL: func.func @gemm_epilogue
// ROWS:         scf.forall ({{.*}}) = (0) to (64) step (4)
func.func @gemm_epilogue(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>,
                         %g: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<64x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %y = linalg.generic {indexing_maps = [#mk, #kn, #mn],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<64x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%y, %g : tensor<64x16xf32>, tensor<64x16xf32>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %n = arith.negf %b : f32
    %x1 = math.exp %n : f32
    %d = arith.addf %one, %x1 : f32
    %s = arith.divf %a, %d : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

// A producer its consumer reads twice, with dynamic row counts: fused into
// the consumer's loop (the loop bounds' tensor.dim of the producer does not
// keep it out), its two tiles one after CSE: computed once per tile.
// CHECK-LABEL: func.func @shared_producer
// CHECK:         scf.forall
// CHECK:           %[[T:.*]] = linalg.generic
// CHECK:             math.tanh
// CHECK-NOT:         math.tanh
// CHECK:           ins(%[[T]], %[[T]] :
// CHECK-NOT:     scf.forall (
// CHECK:         return
func.func @shared_producer(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %v = math.tanh %a : f32
    linalg.yield %v : f32
  } -> tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %t : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// A residual h = r + x·W read by a row norm (s = Σ h², n = h·s) and by the
// residual add o = h + n. The root o refuses h first (its readers s and n
// are not fused yet), so h stays refused when s and n are fused: the GEMM
// runs once, in h's own loop (it was cloned into o's loop as well and
// computed twice, once per loop).
// CHECK-LABEL: func.func @refused_producer_once
// CHECK:         scf.forall
// CHECK:           iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT:       iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:         scf.forall
// CHECK-NOT:       iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           iterator_types = ["parallel", "reduction"]
// CHECK-NOT:       iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:         return
func.func @refused_producer_once(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>,
                                 %r: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %y = linalg.generic {indexing_maps = [#mk, #kn, #mn],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<64x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %y : tensor<64x16xf32>, tensor<64x16xf32>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<64x16xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id, affine_map<(m, n) -> (m)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<64x16xf32>) outs(%s0 : tensor<64xf32>) {
  ^bb0(%a: f32, %c: f32):
    %q = arith.mulf %a, %a : f32
    %v = arith.addf %c, %q : f32
    linalg.yield %v : f32
  } -> tensor<64xf32>
  %n = linalg.generic {indexing_maps = [#id, affine_map<(m, n) -> (m)>, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h, %s : tensor<64x16xf32>, tensor<64xf32>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<64x16xf32>
  %o = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %n : tensor<64x16xf32>, tensor<64x16xf32>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<64x16xf32>
  return %o : tensor<64x16xf32>
}

// Two GEMMs whose accumulators are one zero fill (CSE merges equal inits),
// each read by its own loop: the fill is recomputed in both loops, not left
// a whole-tensor fill of its own that each loop copies its tiles from.
// CHECK-LABEL: func.func @shared_fill
// CHECK-NOT:     linalg.fill
// CHECK:         scf.forall
// CHECK:           linalg.fill
// CHECK:           iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:         scf.forall
// CHECK:           linalg.fill
// CHECK:           iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:         return
func.func @shared_fill(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>,
                       %v: tensor<32x16xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %y = linalg.generic {indexing_maps = [#mk, #kn, #mn],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<64x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  %z = linalg.generic {indexing_maps = [#mk, #kn, #mn],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %v : tensor<64x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  return %y, %z : tensor<64x16xf32>, tensor<64x16xf32>
}

// One parallel dimension: left alone.
// CHECK-LABEL: func.func @vector
// CHECK-NOT:     scf.forall
// CHECK:         linalg.generic
func.func @vector(%x: tensor<128xf32>) -> tensor<128xf32> {
  %e = tensor.empty() : tensor<128xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<128xf32>) outs(%e : tensor<128xf32>) {
  ^bb0(%a: f32, %c: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<128xf32>
  return %r : tensor<128xf32>
}

// An empty tensor (a loop of static extent 0): left untiled (it has no
// iterations; MLIR's tiling crashed slicing the 0-sized dim), and so is an
// empty reduction, which only writes its init.
// CHECK-LABEL: func.func @empty
// CHECK-NOT:     scf.forall
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x0xf32>, tensor<0xf32>)
// CHECK-NOT:     scf.forall
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x0xf32>, tensor<0x3xf32>)
// CHECK-NOT:     scf.forall
// CHECK:         return
func.func @empty(%x: tensor<2x0xf32>, %b: tensor<0xf32>, %w: tensor<0x3xf32>)
    -> (tensor<2x0xf32>, tensor<2x3xf32>) {
  %e = tensor.empty() : tensor<2x0xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<2x0xf32>, tensor<0xf32>) outs(%e : tensor<2x0xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %v = arith.addf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<2x0xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<2x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = linalg.generic {indexing_maps = [#mk, #kn, #mn],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x0xf32>, tensor<0x3xf32>) outs(%init : tensor<2x3xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %r, %m : tensor<2x0xf32>, tensor<2x3xf32>
}
