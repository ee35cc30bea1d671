//===- LinearAttentionToLoops.cpp - --convert-linear-attention-to-loops ---===//
//
// gated.linear_attention as scf.for loops (batch, key/value head, then token
// or chunk) over linalg.generic on tensors, in f32. See Passes.td for the
// algorithm of each form.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/Passes.h"

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"

namespace gatec::conversion {
#define GEN_PASS_DEF_CONVERTLINEARATTENTIONTOLOOPS
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

using namespace mlir;
using namespace gatec;

namespace {
using utils::IteratorType;
constexpr int64_t kDyn = ShapedType::kDynamic;
constexpr IteratorType P = IteratorType::parallel;
constexpr IteratorType R = IteratorType::reduction;

using BodyFn = llvm::function_ref<Value(OpBuilder &, ValueRange)>;

/// Builds the loops and linalg ops at one builder's insertion point.
struct Builder {
  OpBuilder &b;
  Location loc;
  Type f32;

  Builder(OpBuilder &b, Location loc) : b(b), loc(loc), f32(b.getF32Type()) {}

  Value cf(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value ci(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value dim(Value t, int64_t i) { return tensor::DimOp::create(b, loc, t, i); }

  /// tensor.empty / zeros of `shape` (f32), dynamic sizes in order.
  Value empty(ArrayRef<int64_t> shape, ValueRange dyn = {}) {
    return tensor::EmptyOp::create(b, loc, shape, f32, dyn);
  }
  Value zeros(ArrayRef<int64_t> shape, ValueRange dyn = {}) {
    return linalg::FillOp::create(b, loc, ValueRange{cf(0.0)},
                                  ValueRange{empty(shape, dyn)})
        .getResult(0);
  }

  /// An affine map of `n` dims onto the listed dims (-1: the constant 0).
  AffineMap map(unsigned n, ArrayRef<int64_t> dims) {
    SmallVector<AffineExpr> e;
    for (int64_t d : dims)
      e.push_back(d < 0 ? b.getAffineConstantExpr(0) : b.getAffineDimExpr(d));
    return AffineMap::get(n, 0, e, b.getContext());
  }

  /// linalg.generic with one output `init` (its map is the last of `maps`);
  /// the body gets the inputs' elements, then the output's, and returns the
  /// value to yield.
  ///
  /// Under --linalg-fuse-elementwise-ops: an all-parallel generic that may be
  /// fused into its consumer reads only its inputs (a producer that reads its
  /// output argument is fused wrongly), while the loop-carried state is
  /// updated in place by generics that read their output argument (else the
  /// output is replaced by a tensor.empty and the scf.for yield is no longer
  /// equivalent to its iter_arg).
  Value generic(Value init, ValueRange ins, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> its, BodyFn body) {
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps, its,
        [&](OpBuilder &nb, Location, ValueRange args) {
          linalg::YieldOp::create(nb, loc, ValueRange{body(nb, args)});
        });
    return g.getResult(0);
  }

  /// src broadcast to `shape` through `srcMap` (a copy, read only by a
  /// linalg.map).
  Value broadcast(Value src, ArrayRef<int64_t> shape, AffineMap srcMap) {
    unsigned n = shape.size();
    return generic(empty(shape), {src}, {srcMap, b.getMultiDimIdentityMap(n)},
                   SmallVector<IteratorType>(n, P),
                   [](OpBuilder &, ValueRange a) { return a[0]; });
  }

  /// linalg.map over inputs of `shape`. The exponentials of the chunked
  /// form are computed in linalg.map ops: elementwise fusion only fuses
  /// linalg.generic producers, which would recompute each exp once per
  /// iteration of the consuming contraction.
  Value mapOp(ArrayRef<int64_t> shape, ValueRange ins, BodyFn body) {
    auto m = linalg::MapOp::create(
        b, loc, ins, empty(shape),
        [&](OpBuilder &nb, Location, ValueRange args) {
          linalg::YieldOp::create(nb, loc, ValueRange{body(nb, args)});
        });
    return m->getResult(0);
  }

  /// x converted to f32 (and multiplied by `mul` if not 1).
  Value toF32(Value x, double mul = 1.0) {
    auto t = cast<RankedTensorType>(x.getType());
    if (t.getElementType() == f32 && mul == 1.0)
      return x;
    SmallVector<Value> dyn;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.isDynamicDim(i))
        dyn.push_back(dim(x, i));
    unsigned n = t.getRank();
    AffineMap id = b.getMultiDimIdentityMap(n);
    return generic(
        empty(t.getShape(), dyn), {x}, {id, id},
        SmallVector<IteratorType>(n, P), [&](OpBuilder &nb, ValueRange a) {
          Value v = a[0];
          if (v.getType() != nb.getF32Type())
            v = arith::ExtFOp::create(nb, loc, nb.getF32Type(), v);
          if (mul != 1.0)
            v = arith::MulFOp::create(
                nb, loc, v,
                arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(mul)));
          return v;
        });
  }

  /// x (f32) converted to element type e.
  Value fromF32(Value x, Type e) {
    auto t = cast<RankedTensorType>(x.getType());
    if (e == f32)
      return x;
    SmallVector<Value> dyn;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.isDynamicDim(i))
        dyn.push_back(dim(x, i));
    unsigned n = t.getRank();
    AffineMap id = b.getMultiDimIdentityMap(n);
    Value init = tensor::EmptyOp::create(b, loc, t.getShape(), e, dyn);
    return generic(init, {x}, {id, id}, SmallVector<IteratorType>(n, P),
                   [&](OpBuilder &nb, ValueRange a) -> Value {
                     return arith::TruncFOp::create(nb, loc, e, a[0]);
                   });
  }

  /// Static sizes (and dynamic offsets) of a slice; `drop` lists the dims
  /// removed from the result type (they have size 1).
  Value slice(Value src, ArrayRef<OpFoldResult> offsets,
              ArrayRef<int64_t> sizes, ArrayRef<int64_t> drop) {
    SmallVector<int64_t> shape;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (!llvm::is_contained(drop, (int64_t)i))
        shape.push_back(sizes[i]);
    SmallVector<OpFoldResult> sz, st;
    for (int64_t s : sizes) {
      sz.push_back(b.getIndexAttr(s));
      st.push_back(b.getIndexAttr(1));
    }
    auto rt = RankedTensorType::get(
        shape, cast<RankedTensorType>(src.getType()).getElementType());
    return tensor::ExtractSliceOp::create(b, loc, rt, src, offsets, sz, st);
  }
  Value insert(Value src, Value dest, ArrayRef<OpFoldResult> offsets,
               ArrayRef<int64_t> sizes) {
    SmallVector<OpFoldResult> sz, st;
    for (int64_t s : sizes) {
      sz.push_back(b.getIndexAttr(s));
      st.push_back(b.getIndexAttr(1));
    }
    return tensor::InsertSliceOp::create(b, loc, src, dest, offsets, sz, st);
  }

  /// scf.for from lb to ub (step 1) carrying `inits`; `fn` builds the body
  /// at the builder's insertion point and returns the values to yield.
  scf::ForOp
  loop(Value lb, Value ub, ValueRange inits,
       llvm::function_ref<SmallVector<Value>(Value, ValueRange)> fn) {
    auto f = scf::ForOp::create(b, loc, lb, ub, ci(1), inits);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(f.getBody());
    SmallVector<Value> ys = fn(f.getInductionVar(), f.getRegionIterArgs());
    scf::YieldOp::create(b, loc, ys);
    return f;
  }
};

// Scalar helpers for generic bodies.
Value add(OpBuilder &b, Location l, Value x, Value y) {
  return arith::AddFOp::create(b, l, x, y);
}
Value sub(OpBuilder &b, Location l, Value x, Value y) {
  return arith::SubFOp::create(b, l, x, y);
}
Value mul(OpBuilder &b, Location l, Value x, Value y) {
  return arith::MulFOp::create(b, l, x, y);
}
Value exp(OpBuilder &b, Location l, Value x) {
  return math::ExpOp::create(b, l, x);
}
/// j <= i (strict: j < i) from linalg.index of dims i and j.
Value causal(OpBuilder &b, Location l, int64_t i, int64_t j, bool strict) {
  Value vi = linalg::IndexOp::create(b, l, i);
  Value vj = linalg::IndexOp::create(b, l, j);
  return arith::CmpIOp::create(
      b, l, strict ? arith::CmpIPredicate::ult : arith::CmpIPredicate::ule, vj,
      vi);
}
/// exp(gi − gj) where `keep`, else exp(0) (the exponent is never positive
/// for non-positive log-decays: gi − gj sums the log-decays j+1 … i).
Value decayFactor(OpBuilder &b, Location l, Value keep, Value gi, Value gj) {
  Value zero = arith::ConstantOp::create(b, l, b.getF32FloatAttr(0.0));
  return exp(b, l,
             arith::SelectOp::create(b, l, keep, sub(b, l, gi, gj), zero));
}

struct Shapes {
  int64_t hq, hkv, group, dk, dv, dd, betaHeads, chunk;
  bool decay, perChannel, delta;
  double scale;
  /// The inputs are read from the [B, T, H, D] sources of their head
  /// transposes (in place, strided along T), the output written in
  /// [B, T, Hq, Dv] order for the head transpose that consumed it.
  bool bthd = false, outBthd = false;
};

/// x[bi, h : h+nh, t : t+nt, 0 : d] of a [B, H, T, D] operand, or of its
/// [B, T, H, D] source when `bthd`; the batch dim and the dims listed in
/// `drop` (1: heads, 2: tokens, 3: channels; all of size 1) are dropped.
/// With bthd and neither heads nor tokens dropped the slice is
/// [nt, nh, d].
Value headSlice(Builder &l, bool bthd, Value x, Value bi, Value h, Value t,
                int64_t nh, int64_t nt, int64_t d, ArrayRef<int64_t> drop) {
  OpFoldResult z = l.b.getIndexAttr(0);
  SmallVector<int64_t> dr{0};
  for (int64_t i : drop)
    dr.push_back(bthd && i != 3 ? 3 - i : i);
  if (bthd)
    return l.slice(x, {bi, t, h, z}, {1, nt, nh, d}, dr);
  return l.slice(x, {bi, h, t, z}, {1, nh, nt, d}, dr);
}

/// A contraction over `n` loops: init (indexed by `outDims`) plus, summed
/// over the reduction loop `r` (static extent `size`), the product of the
/// inputs' elements (input i indexed by the loops `dims[i]`), multiplied
/// left to right. The reduction is unrolled by u (8, 4 or 2, dividing
/// `size`) inside the body: each input's dim along loop r is split into
/// [size/u, u] and read u times (its last part a constant), so that every
/// load and store of the output (the innermost loop runs along it, the
/// reduction outside) is shared by u multiply-adds. The terms are added in
/// the order of the loop, each by a fused multiply-add (math.fma: without
/// it the multiply and the add are separate instructions).
Value contract(Builder &l, Value init, ArrayRef<Value> ins,
               ArrayRef<SmallVector<int64_t>> dims, ArrayRef<int64_t> outDims,
               unsigned n, unsigned r, int64_t size) {
  int64_t u = 1;
  for (int64_t c : {8, 4, 2})
    if (size != kDyn && size > c && size % c == 0) {
      u = c;
      break;
    }
  SmallVector<IteratorType> its(n, P);
  its[r] = R;
  MLIRContext *ctx = l.b.getContext();
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  for (auto [x, ds] : llvm::zip(ins, dims)) {
    auto t = cast<RankedTensorType>(x.getType());
    int64_t p = -1;
    for (size_t q = 0; q < ds.size(); ++q)
      if (ds[q] == (int64_t)r)
        p = q;
    Value xe = x;
    if (u > 1) {
      assert(p >= 0 && "every input of a contraction reads the reduction");
      SmallVector<int64_t> shape;
      SmallVector<ReassociationIndices> re;
      for (int64_t q = 0; q < t.getRank(); ++q) {
        if (q == p) {
          re.push_back({(int64_t)shape.size(), (int64_t)shape.size() + 1});
          shape.append({size / u, u});
        } else {
          re.push_back({(int64_t)shape.size()});
          shape.push_back(t.getDimSize(q));
        }
      }
      xe = tensor::ExpandShapeOp::create(
          l.b, l.loc, RankedTensorType::get(shape, t.getElementType()), x, re);
    }
    for (int64_t k = 0; k < u; ++k) {
      SmallVector<AffineExpr> e;
      for (size_t q = 0; q < ds.size(); ++q) {
        e.push_back(ds[q] < 0 ? getAffineConstantExpr(0, ctx)
                              : getAffineDimExpr(ds[q], ctx));
        if (u > 1 && (int64_t)q == p)
          e.push_back(getAffineConstantExpr(k, ctx));
      }
      operands.push_back(xe);
      maps.push_back(AffineMap::get(n, 0, e, ctx));
    }
  }
  maps.push_back(l.map(n, outDims));
  Location loc = l.loc;
  size_t m = ins.size();
  return l.generic(
      init, operands, maps, its, [&](OpBuilder &nb, ValueRange a) -> Value {
        Value acc = a.back();
        for (int64_t k = 0; k < u; ++k) {
          Value t = a[k];
          for (size_t i = 1; i + 1 < m; ++i)
            t = mul(nb, loc, t, a[i * u + k]);
          acc = math::FmaOp::create(nb, loc, t, a[(m - 1) * u + k], acc);
        }
        return acc;
      });
}

/// A register-blocked matrix product on tensors, in vector FMAs:
///
///   acc[(g,) m, n] ← σ_m · acc[(g,) m, n] + Σ_k a(m, k) · B[k, n]
///
/// acc [M, N] or [G, M, N] (a batch of G products sharing B; [M, G, N]
/// when `accMGN`: output rows in token-major order), B [K, N]
/// (contiguous along n), a(m, k) read from A [(G,) M, K] or, when
/// `aTransposed`, from A [K, M]. Without `accumulate` acc is only written
/// (the sum starts from 0); σ_m = rowScale[m] (rowScale [M], or [1]: one
/// factor for every row) when given, else 1. With `causal`, a(m, k) = 0 for
/// k > m is not read: row block m0 … m0+MR−1 stops at k = m0+MR−1.
///
/// The block of MR rows × NR vectors of w lanes is held in MR·NR vector
/// accumulators through the loop over k: each step loads NR vectors of B
/// (each used by MR FMAs) and broadcasts MR scalars of A (each used by NR
/// FMAs), so that for 4 × 2 vectors of 8 lanes, 6 loads feed 8 FMAs and acc
/// is read and written once per block, not once per k. f32 throughout.
Value blockedMatmul(Builder &l, Value acc, bool accumulate, Value rowScale,
                    Value a, bool aTransposed, Value bm, bool causal,
                    bool accMGN = false) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  auto accT = cast<RankedTensorType>(acc.getType());
  bool batched = accT.getRank() == 3;
  int64_t G = batched ? accT.getDimSize(accMGN ? 1 : 0) : 1;
  int64_t M = accT.getDimSize(batched && !accMGN ? 1 : 0);
  int64_t N = accT.getDimSize(batched ? 2 : 1);
  int64_t K = cast<RankedTensorType>(bm.getType()).getDimSize(0);
  // Lanes: all of n when it fits one vector, else the widest of 8, 4, 2, 1
  // dividing N; two vectors per block when they divide the row.
  int64_t w = N;
  if (N > 8) {
    w = 1;
    for (int64_t c : {8, 4, 2})
      if (N % c == 0) {
        w = c;
        break;
      }
  }
  int64_t NR = (N / w) % 2 == 0 ? 2 : 1;
  int64_t MR = M % 4 == 0 ? 4 : M % 2 == 0 ? 2 : 1;
  auto vt = VectorType::get({w}, l.f32);
  SmallVector<bool> inb{true};
  Value pad = l.cf(0.0);
  Value zeroV = vector::BroadcastOp::create(b, loc, vt, pad);
  int64_t sRows =
      rowScale ? cast<RankedTensorType>(rowScale.getType()).getDimSize(0) : 0;

  auto forStep =
      [&](Value lb, Value ub, int64_t step, ValueRange inits,
          llvm::function_ref<SmallVector<Value>(Value, ValueRange)> fn) {
        auto f = scf::ForOp::create(b, loc, lb, ub, l.ci(step), inits);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(f.getBody());
        scf::YieldOp::create(b, loc,
                             fn(f.getInductionVar(), f.getRegionIterArgs()));
        return f;
      };
  auto add = [&](Value x, int64_t c) -> Value {
    return c ? arith::AddIOp::create(b, loc, x, l.ci(c)).getResult() : x;
  };

  auto product = [&](Value g, Value accIn) -> Value {
    auto idx = [&](Value r, Value c) -> SmallVector<Value> {
      if (batched && accMGN)
        return {r, g, c};
      if (batched)
        return {g, r, c};
      return {r, c};
    };
    auto mLoop =
        forStep(l.ci(0), l.ci(M), MR, {accIn},
                [&](Value m0, ValueRange mIt) -> SmallVector<Value> {
                  auto nLoop = forStep(
                      l.ci(0), l.ci(N), NR * w, {mIt[0]},
                      [&](Value n0, ValueRange nIt) -> SmallVector<Value> {
                        Value t = nIt[0];
                        SmallVector<Value> init;
                        for (int64_t r = 0; r < MR; ++r) {
                          Value sc;
                          if (accumulate && rowScale) {
                            Value si = sRows == 1 ? l.ci(0) : add(m0, r);
                            sc = vector::BroadcastOp::create(
                                b, loc, vt,
                                tensor::ExtractOp::create(b, loc, rowScale,
                                                          ValueRange{si}));
                          }
                          for (int64_t c = 0; c < NR; ++c) {
                            if (!accumulate) {
                              init.push_back(zeroV);
                              continue;
                            }
                            Value v = vector::TransferReadOp::create(
                                b, loc, vt, t, idx(add(m0, r), add(n0, c * w)),
                                pad, inb);
                            if (sc)
                              v = arith::MulFOp::create(b, loc, v, sc);
                            init.push_back(v);
                          }
                        }
                        Value kEnd = causal ? add(m0, MR) : l.ci(K);
                        if (causal && M > K)
                          kEnd = arith::MinUIOp::create(b, loc, kEnd, l.ci(K));
                        auto kLoop = forStep(
                            l.ci(0), kEnd, 1, init,
                            [&](Value k, ValueRange vs) -> SmallVector<Value> {
                              SmallVector<Value> bv;
                              for (int64_t c = 0; c < NR; ++c)
                                bv.push_back(vector::TransferReadOp::create(
                                    b, loc, vt, bm,
                                    ValueRange{k, add(n0, c * w)}, pad, inb));
                              SmallVector<Value> out;
                              for (int64_t r = 0; r < MR; ++r) {
                                Value mi = add(m0, r);
                                SmallVector<Value> ai;
                                if (aTransposed)
                                  ai = {k, mi};
                                else if (batched)
                                  ai = {g, mi, k};
                                else
                                  ai = {mi, k};
                                Value x = vector::BroadcastOp::create(
                                    b, loc, vt,
                                    tensor::ExtractOp::create(b, loc, a, ai));
                                for (int64_t c = 0; c < NR; ++c)
                                  out.push_back(vector::FMAOp::create(
                                      b, loc, x, bv[c], vs[r * NR + c]));
                              }
                              return out;
                            });
                        for (int64_t r = 0; r < MR; ++r)
                          for (int64_t c = 0; c < NR; ++c)
                            t = vector::TransferWriteOp::create(
                                    b, loc, kLoop.getResult(r * NR + c), t,
                                    idx(add(m0, r), add(n0, c * w)), inb)
                                    .getResult();
                        return {t};
                      });
                  return {nLoop.getResult(0)};
                });
    return mLoop.getResult(0);
  };
  if (!batched)
    return product(Value(), acc);
  return forStep(l.ci(0), l.ci(G), 1, {acc},
                 [&](Value g, ValueRange it) -> SmallVector<Value> {
                   return {product(g, it[0])};
                 })
      .getResult(0);
}
/// x [R, N] transposed to [N, R]. When R and N are multiples of 8 (the
/// chunk's keys, C × Dk), by 8 × 8 blocks in registers: 8 row vectors
/// loaded, transposed by three rounds of shuffles (pairs of 32-bit lanes,
/// pairs of 64-bit lanes, 128-bit halves: unpcklps/unpckhps, shufps,
/// vperm2f128 on AVX) and stored as 8 column vectors, instead of one scalar
/// load and store per element through a strided column. Otherwise a
/// linalg.transpose.
Value transposed(Builder &l, Value x) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  auto t = cast<RankedTensorType>(x.getType());
  int64_t R = t.getDimSize(0), N = t.getDimSize(1);
  Value init = l.empty({N, R});
  if (R % 8 != 0 || N % 8 != 0)
    return linalg::TransposeOp::create(b, loc, x, init, ArrayRef<int64_t>{1, 0})
        ->getResult(0);
  auto vt = VectorType::get({8}, l.f32);
  SmallVector<bool> inb{true};
  Value pad = l.cf(0.0);
  auto shuffle = [&](Value a, Value c, ArrayRef<int64_t> mask) -> Value {
    return vector::ShuffleOp::create(b, loc, a, c, mask);
  };
  auto addc = [&](Value v, int64_t c) -> Value {
    return c ? arith::AddIOp::create(b, loc, v, l.ci(c)).getResult() : v;
  };
  auto rLoop =
      scf::ForOp::create(b, loc, l.ci(0), l.ci(R), l.ci(8), ValueRange{init});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(rLoop.getBody());
    Value r0 = rLoop.getInductionVar();
    auto nLoop = scf::ForOp::create(b, loc, l.ci(0), l.ci(N), l.ci(8),
                                    ValueRange{rLoop.getRegionIterArgs()[0]});
    b.setInsertionPointToStart(nLoop.getBody());
    Value n0 = nLoop.getInductionVar();
    SmallVector<Value> r(8), u(8), w(8);
    for (int64_t i = 0; i < 8; ++i)
      r[i] = vector::TransferReadOp::create(
          b, loc, vt, x, ValueRange{addc(r0, i), n0}, pad, inb);
    // u: rows 2p, 2p+1 interleaved (lanes 0 1 | 4 5 of each, then 2 3 | 6 7).
    for (int64_t p = 0; p < 4; ++p) {
      u[2 * p] = shuffle(r[2 * p], r[2 * p + 1], {0, 8, 1, 9, 4, 12, 5, 13});
      u[2 * p + 1] =
          shuffle(r[2 * p], r[2 * p + 1], {2, 10, 3, 11, 6, 14, 7, 15});
    }
    // w: 64-bit pairs of u from rows 0-3 (and 4-7): each 128-bit half holds
    // one column of 4 rows.
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t p = 0; p < 2; ++p) {
        Value a = u[4 * h + p], c = u[4 * h + 2 + p];
        w[4 * h + 2 * p] = shuffle(a, c, {0, 1, 8, 9, 4, 5, 12, 13});
        w[4 * h + 2 * p + 1] = shuffle(a, c, {2, 3, 10, 11, 6, 7, 14, 15});
      }
    // Column j: the low (j < 4) or high half of w[j mod 4] (rows 0-3) and
    // of w[4 + j mod 4] (rows 4-7).
    Value y = nLoop.getRegionIterArgs()[0];
    for (int64_t j = 0; j < 8; ++j) {
      int64_t o = j < 4 ? 0 : 4;
      Value col =
          shuffle(w[j % 4], w[4 + j % 4],
                  {o, o + 1, o + 2, o + 3, o + 8, o + 9, o + 10, o + 11});
      y = vector::TransferWriteOp::create(b, loc, col, y,
                                          ValueRange{addc(n0, j), r0}, inb)
              .getResult();
    }
    scf::YieldOp::create(b, loc, ValueRange{y});
    b.setInsertionPointAfter(nLoop);
    scf::YieldOp::create(b, loc, nLoop.getResults());
  }
  return rLoop.getResult(0);
}

/// Intra-chunk scores of x [G, C, Dk] (or [C, Dk] when !batched) against
/// k [C, Dk]. With a per-channel decay: Σ_d x_id k_jd exp(G_id − G_jd) for
/// j ≤ i (j < i when strict), 0 elsewhere (`gc`, the chunk's cumulative
/// log-decay [C, Dk], enters every product). Otherwise the plain products
/// Σ_d x_id k_jd for every (i, j), and `factor` is set to the [C, C] matrix
/// the caller multiplies them by: exp(G_i − G_j) (or 1 without a decay) for
/// j ≤ i (j < i), 0 elsewhere. The contraction is then a dense, unmasked
/// one (a causal select in its body becomes a masked store per element).
Value scores(Builder &l, const Shapes &s, Value x, Value k, Value gc,
             bool batched, bool strict, Value &factor) {
  int64_t C = s.chunk;
  // Dims: (g,) i, d, j; the reduction over d is outside the loop over j,
  // which reads K (and G) transposed, contiguously.
  unsigned n = batched ? 4 : 3;
  int64_t o = batched ? 1 : 0, I = o, D = o + 1, J = o + 2;
  Value kT = transposed(l, k);
  SmallVector<int64_t> xi, out;
  if (batched) {
    xi.push_back(0);
    out.push_back(0);
  }
  xi.append({I, D});
  out.append({I, J});
  SmallVector<int64_t> outShape;
  if (batched)
    outShape.push_back(s.group);
  outShape.append({C, C});
  SmallVector<IteratorType> its(n, P);
  its[D] = R;
  Location loc = l.loc;
  factor = Value();
  bool channelDecay = s.decay && s.perChannel;
  // Σ_d x_id k_jd exp(G_id − G_jd), j ≤ i (j < i), of x rows against k
  // rows (given transposed, as is G for the k rows): one exp per term.
  auto exactScores = [&](Value init, Value xs, Value ksT, Value gx,
                         Value gkT) -> Value {
    // The factor is 0 outside the causal part (no select of the output).
    return l.generic(
        init, {xs, ksT, gx, gkT},
        {l.map(n, xi), l.map(n, {D, J}), l.map(n, {I, D}), l.map(n, {D, J}),
         l.map(n, out)},
        its, [&](OpBuilder &nb, ValueRange a) -> Value {
          Value keep = causal(nb, loc, I, J, strict);
          Value f = arith::SelectOp::create(
              nb, loc, keep, decayFactor(nb, loc, keep, a[2], a[3]),
              arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(0.0)));
          return add(nb, loc, a[4], mul(nb, loc, mul(nb, loc, a[0], a[1]), f));
        });
  };
  constexpr int64_t cb = 4;
  if (channelDecay && (C % cb != 0 || C == cb))
    return exactScores(l.zeros(outShape), x, kT, gc, transposed(l, gc));
  if (channelDecay) {
    // Reference-point split, by blocks of cb tokens. On the diagonal blocks
    // one exp per term (as above). Below them, for the rows i after block
    // J = [j0, r] and its columns j ≤ r:
    //   exp(G_id − G_jd) = exp(G_id − G_rd) · exp(G_rd − G_jd),
    // both exponents ≤ 0 (i > r ≥ j, G non-increasing), so the block is the
    // plain product of x̃_i = x_i ⊙ exp(G_i − G_r) and
    // k̃_j = k_j ⊙ exp(G_r − G_j): (C − r − 1 + cb)·Dk exps for the whole
    // column of blocks instead of (C − r − 1)·cb·Dk. For C = 16: 100·Dk
    // exps per score matrix instead of 256·Dk.
    OpBuilder &b = l.b;
    OpFoldResult z = b.getIndexAttr(0);
    auto idx = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
    auto xRows = [&](int64_t r0, int64_t m) -> Value {
      if (batched)
        return l.slice(x, {z, idx(r0), z}, {s.group, m, s.dk}, {});
      return l.slice(x, {idx(r0), z}, {m, s.dk}, {});
    };
    auto block = [&](int64_t m, int64_t nc) {
      SmallVector<int64_t> sh;
      if (batched)
        sh.push_back(s.group);
      sh.append({m, nc});
      return sh;
    };
    auto put = [&](Value src, Value dst, int64_t r0, int64_t c0, int64_t m,
                   int64_t nc) -> Value {
      if (batched)
        return l.insert(src, dst, {z, idx(r0), idx(c0)}, {s.group, m, nc});
      return l.insert(src, dst, {idx(r0), idx(c0)}, {m, nc});
    };
    Value A = l.zeros(outShape);
    for (int64_t j0 = 0; j0 < C; j0 += cb) {
      Value kb = l.slice(k, {idx(j0), z}, {cb, s.dk}, {});
      Value gb = l.slice(gc, {idx(j0), z}, {cb, s.dk}, {});
      A = put(exactScores(l.zeros(block(cb, cb)), xRows(j0, cb),
                          transposed(l, kb), gb, transposed(l, gb)),
              A, j0, j0, cb, cb);
      int64_t r = j0 + cb - 1, m = C - r - 1;
      if (m == 0)
        continue;
      Value gr = l.slice(gc, {idx(r), z}, {1, s.dk}, {0});
      // k̃ [cb, Dk], its exponents G_r − G_j.
      Value ek =
          l.mapOp({cb, s.dk}, {l.broadcast(gr, {cb, s.dk}, l.map(2, {1})), gb},
                  [&](OpBuilder &nb, ValueRange a) {
                    return exp(nb, loc, sub(nb, loc, a[0], a[1]));
                  });
      Value kt =
          l.generic(l.empty({cb, s.dk}), {kb, ek},
                    {l.map(2, {0, 1}), l.map(2, {0, 1}), l.map(2, {0, 1})},
                    {P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                      return mul(nb, loc, a[0], a[1]);
                    });
      // x̃ [(G,) m, Dk], rows r+1 … C−1, exponents G_i − G_r.
      Value gi = l.slice(gc, {idx(r + 1), z}, {m, s.dk}, {});
      Value ex =
          l.mapOp({m, s.dk}, {gi, l.broadcast(gr, {m, s.dk}, l.map(2, {1}))},
                  [&](OpBuilder &nb, ValueRange a) {
                    return exp(nb, loc, sub(nb, loc, a[0], a[1]));
                  });
      unsigned xn = batched ? 3 : 2;
      AffineMap xid = l.b.getMultiDimIdentityMap(xn);
      Value xt =
          l.generic(l.empty(block(m, s.dk)), {xRows(r + 1, m), ex},
                    {xid, batched ? l.map(3, {1, 2}) : l.map(2, {0, 1}), xid},
                    SmallVector<IteratorType>(xn, P),
                    [&](OpBuilder &nb, ValueRange a) -> Value {
                      return mul(nb, loc, a[0], a[1]);
                    });
      Value below = blockedMatmul(
          l, l.empty(block(m, cb)), /*accumulate=*/false, {}, xt,
          /*aTransposed=*/false, transposed(l, kt), /*causal=*/false);
      A = put(below, A, r + 1, j0, m, cb);
    }
    return A;
  }
  Value sc = blockedMatmul(l, l.empty(outShape), /*accumulate=*/false, {}, x,
                           /*aTransposed=*/false, kT, /*causal=*/false);
  Value zero = l.cf(0.0);
  if (!s.decay) {
    Value one = l.cf(1.0);
    factor =
        l.generic(l.empty({C, C}), {}, {l.map(2, {0, 1})}, {P, P},
                  [&](OpBuilder &nb, ValueRange) -> Value {
                    Value keep = causal(nb, loc, 0, 1, strict);
                    return arith::SelectOp::create(nb, loc, keep, one, zero);
                  });
    return sc;
  }
  // Scalar decay: the factors exp(G_i − G_j) [C, C] computed once (C² exps).
  Value gi = l.broadcast(gc, {C, C}, l.map(2, {0, -1}));
  Value gj = l.broadcast(gc, {C, C}, l.map(2, {1, -1}));
  factor = l.mapOp({C, C}, {gi, gj}, [&](OpBuilder &nb, ValueRange a) {
    Value keep = causal(nb, loc, 0, 1, strict);
    return arith::SelectOp::create(nb, loc, keep,
                                   decayFactor(nb, loc, keep, a[0], a[1]), zero)
        .getResult();
  });
  return sc;
}

/// exp(x) of a small tensor (the chunk's cumulative log-decays, [C, Dd] or
/// [Dd]), in a linalg.map so that it is not fused into (and recomputed by)
/// its consumers.
Value expOf(Builder &l, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  Location loc = l.loc;
  return l.mapOp(t.getShape(), {x}, [&](OpBuilder &nb, ValueRange a) {
    return exp(nb, loc, a[0]);
  });
}

/// x [(G,) C, Dk] ⊙ e, e [C, Dd] (Dd = Dk or 1) the row (or element) factors.
Value scaleRows(Builder &l, const Shapes &s, Value x, Value e) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t n = t.getRank();
  SmallVector<int64_t> em{n - 2, s.perChannel ? n - 1 : int64_t(-1)};
  Location loc = l.loc;
  return l.generic(l.empty(t.getShape()), {x, e},
                   {l.b.getMultiDimIdentityMap(n), l.map(n, em),
                    l.b.getMultiDimIdentityMap(n)},
                   SmallVector<IteratorType>(n, P),
                   [&](OpBuilder &nb, ValueRange a) -> Value {
                     return mul(nb, loc, a[0], a[1]);
                   });
}

/// o [G, Dv] (or [G, C, Dv]) = x · S, contracting Dk.
/// `dest` is the slice of the output it is written to (computed in place).
Value readState(Builder &l, Value x, Value st, ArrayRef<int64_t> outShape,
                Value dest) {
  Location loc = l.loc;
  Value init =
      linalg::FillOp::create(l.b, loc, ValueRange{l.cf(0.0)}, ValueRange{dest})
          .getResult(0);
  int64_t dk = cast<RankedTensorType>(st.getType()).getDimSize(0);
  if (outShape.size() == 2) // (g, d, e)
    return contract(l, init, {x, st}, {{0, 1}, {1, 2}}, {0, 2}, 3, 1, dk);
  // (g, i, d, e)
  return contract(l, init, {x, st}, {{0, 1, 2}, {2, 3}}, {0, 1, 3}, 4, 2, dk);
}

/// x (a step's query slice) multiplied by the scale.
Value scaled(Builder &l, const Shapes &s, Value x) {
  if (s.scale == 1.0)
    return x;
  auto t = cast<RankedTensorType>(x.getType());
  unsigned n = t.getRank();
  AffineMap id = l.b.getMultiDimIdentityMap(n);
  Value c = l.cf(s.scale);
  Location loc = l.loc;
  return l.generic(l.empty(t.getShape()), {x}, {id, id},
                   SmallVector<IteratorType>(n, P),
                   [&](OpBuilder &nb, ValueRange a) -> Value {
                     return mul(nb, loc, a[0], c);
                   });
}

/// x [C, G, Dk] (a chunk's query slice, token-major) as [G, C, Dk],
/// multiplied by the scale.
Value scaledToGCD(Builder &l, const Shapes &s, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  Value c = l.cf(s.scale);
  Location loc = l.loc;
  return l.generic(l.empty({t.getDimSize(1), t.getDimSize(0), t.getDimSize(2)}),
                   {x}, {l.map(3, {1, 0, 2}), l.map(3, {0, 1, 2})}, {P, P, P},
                   [&](OpBuilder &nb, ValueRange a) -> Value {
                     return s.scale == 1.0 ? a[0] : mul(nb, loc, a[0], c);
                   });
}

/// One token of the recurrence for (batch bi, kv head h) at token t.
SmallVector<Value> recurrentStep(Builder &l, const Shapes &s, Value bi, Value h,
                                 Value t, Value q, Value k, Value v,
                                 Value decay, Value beta, Value out, Value st) {
  Location loc = l.loc;
  OpFoldResult z = l.b.getIndexAttr(0);
  Value hq0 = arith::MulIOp::create(l.b, loc, h, l.ci(s.group));
  Value kt = headSlice(l, s.bthd, k, bi, h, t, 1, 1, s.dk, {1, 2});
  Value vt = headSlice(l, s.bthd, v, bi, h, t, 1, 1, s.dv, {1, 2});
  Value qt =
      scaled(l, s, headSlice(l, s.bthd, q, bi, hq0, t, s.group, 1, s.dk, {2}));
  if (s.decay) {
    // S = diag(exp(g_t)) S
    Value gt = headSlice(l, s.bthd, decay, bi, h, t, 1, 1, s.dd, {1, 2});
    st = l.generic(st, {gt},
                   {l.map(2, {s.perChannel ? 0 : -1}), l.map(2, {0, 1})},
                   {P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                     return mul(nb, loc, a[1], exp(nb, loc, a[0]));
                   });
  }
  Value u = vt;
  if (s.delta) {
    Value hb = s.betaHeads == 1 ? l.ci(0) : h;
    Value bt =
        tensor::ExtractOp::create(l.b, loc, beta,
                                  s.bthd ? ValueRange{bi, t, hb, l.ci(0)}
                                         : ValueRange{bi, hb, t, l.ci(0)});
    // r = Sᵀ k, u = β (v − r)
    Value r = l.generic(l.zeros({s.dv}), {st, kt},
                        {l.map(2, {0, 1}), l.map(2, {0}), l.map(2, {1})},
                        {R, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                          return add(nb, loc, a[2], mul(nb, loc, a[0], a[1]));
                        });
    u = l.generic(r, {vt, r}, {l.map(1, {0}), l.map(1, {0}), l.map(1, {0})},
                  {P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                    return mul(nb, loc, bt, sub(nb, loc, a[0], a[1]));
                  });
  }
  // S = S + k uᵀ
  st = l.generic(st, {kt, u}, {l.map(2, {0}), l.map(2, {1}), l.map(2, {0, 1})},
                 {P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                   return add(nb, loc, a[2], mul(nb, loc, a[0], a[1]));
                 });
  Value o =
      readState(l, qt, st, {s.group, s.dv},
                s.outBthd ? l.slice(out, {t, z, z}, {1, s.group, s.dv}, {0})
                          : l.slice(out, {z, t, z}, {s.group, 1, s.dv}, {1}));
  out = s.outBthd ? l.insert(o, out, {t, z, z}, {1, s.group, s.dv})
                  : l.insert(o, out, {z, t, z}, {s.group, 1, s.dv});
  return {out, st};
}

/// One chunk (tokens t0 … t0+C−1) for (batch bi, kv head h).
SmallVector<Value> chunkStep(Builder &l, const Shapes &s, Value bi, Value h,
                             Value c, Value q, Value k, Value v, Value decay,
                             Value beta, Value out, Value st) {
  Location loc = l.loc;
  OpBuilder &b = l.b;
  int64_t C = s.chunk;
  OpFoldResult z = b.getIndexAttr(0);
  Value t0 = arith::MulIOp::create(b, loc, c, l.ci(C));
  Value hq0 = arith::MulIOp::create(b, loc, h, l.ci(s.group));
  Value K = headSlice(l, s.bthd, k, bi, h, t0, 1, C, s.dk, {1});
  Value V = headSlice(l, s.bthd, v, bi, h, t0, 1, C, s.dv, {1});
  // Q [G, C, Dk] (scaled): from a [C, G, Dk] slice of the token-major
  // source, the copy that applies the scale also reorders it.
  Value Q =
      s.bthd
          ? scaledToGCD(
                l, s, headSlice(l, true, q, bi, hq0, t0, s.group, C, s.dk, {}))
          : scaled(l, s,
                   headSlice(l, false, q, bi, hq0, t0, s.group, C, s.dk, {}));
  Value gc, glast;
  if (s.decay) {
    // G_i = Σ_{j ≤ i} g_j (inclusive, f32), dims (i, j, d).
    Value g = headSlice(l, s.bthd, decay, bi, h, t0, 1, C, s.dd, {1});
    gc =
        l.generic(l.zeros({C, s.dd}), {g}, {l.map(3, {1, 2}), l.map(3, {0, 2})},
                  {P, R, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                    Value keep = causal(nb, loc, 0, 1, false);
                    return arith::SelectOp::create(
                        nb, loc, keep, add(nb, loc, a[1], a[0]), a[1]);
                  });
    glast = l.slice(gc, {l.ci(C - 1), z}, {1, s.dd}, {0});
  }
  // exp(G) [C, Dd]: C·Dd exps per chunk, read by the row scalings.
  Value eg = s.decay ? expOf(l, gc) : Value();
  // U: the values written (delta rules: the UT system), [C, Dv].
  Value U = V;
  if (s.delta) {
    Value hb = s.betaHeads == 1 ? l.ci(0) : h;
    Value bt = headSlice(l, s.bthd, beta, bi, hb, t0, 1, C, 1, {1, 3});
    // M_ij = β_i Σ_d k_id k_jd exp(G_id − G_jd), j < i
    Value mf;
    Value M = scores(l, s, K, K, gc, /*batched=*/false, /*strict=*/true, mf);
    SmallVector<Value> mIns{bt, M};
    SmallVector<AffineMap> mMaps{l.map(2, {0}), l.map(2, {0, 1})};
    if (mf) {
      mIns.push_back(mf);
      mMaps.push_back(l.map(2, {0, 1}));
    }
    mMaps.push_back(l.map(2, {0, 1}));
    M = l.generic(l.empty({C, C}), mIns, mMaps, {P, P},
                  [&](OpBuilder &nb, ValueRange a) -> Value {
                    Value m = mul(nb, loc, a[1], a[0]);
                    return a.size() > 3 ? mul(nb, loc, m, a[2]) : m;
                  });
    // rhs = β ⊙ (V − (K ⊙ exp(G)) S)
    Value Kg = s.decay ? scaleRows(l, s, K, eg) : K;
    Value KS = blockedMatmul(l, l.empty({C, s.dv}), /*accumulate=*/false, {},
                             Kg, /*aTransposed=*/false, st, /*causal=*/false);
    Value rhs = l.generic(
        KS, {V, bt, KS},
        {l.map(2, {0, 1}), l.map(2, {0}), l.map(2, {0, 1}), l.map(2, {0, 1})},
        {P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
          return mul(nb, loc, a[1], sub(nb, loc, a[0], a[2]));
        });
    // Forward substitution: u_i = rhs_i − Σ_{j<i} M_ij u_j.
    U = l.loop(l.ci(0), l.ci(C), {rhs},
               [&](Value i, ValueRange it) -> SmallVector<Value> {
                 Value Uc = it[0];
                 Value mrow = l.slice(M, {i, z}, {1, C}, {0});
                 Value urow = l.slice(Uc, {i, z}, {1, s.dv}, {0});
                 Value nrow = l.generic(
                     urow, {mrow, Uc},
                     {l.map(2, {0}), l.map(2, {0, 1}), l.map(2, {1})}, {R, P},
                     [&](OpBuilder &nb, ValueRange a) -> Value {
                       return sub(nb, loc, a[2], mul(nb, loc, a[0], a[1]));
                     });
                 return {l.insert(nrow, Uc, {i, z}, {1, s.dv})};
               })
            .getResult(0);
  }
  // Output: (Q ⊙ exp(G)) S + A U, A the causal decayed scores.
  // A_ij = (q_i · k_j) · factor_ij unless the decay is per channel.
  Value af;
  Value A = scores(l, s, Q, K, gc, /*batched=*/true, /*strict=*/false, af);
  Value Qg = s.decay ? scaleRows(l, s, Q, eg) : Q;
  // O = (Q ⊙ exp(G)) S, written into the output rows (not read).
  // (The output rows are [C, G, Dv] when written token-major.)
  Value O = blockedMatmul(
      l,
      s.outBthd ? l.slice(out, {t0, z, z}, {C, s.group, s.dv}, {})
                : l.slice(out, {z, t0, z}, {s.group, C, s.dv}, {}),
      /*accumulate=*/false, {}, Qg, /*aTransposed=*/false, st,
      /*causal=*/false, s.outBthd);
  // A ⊙ factor (0 above the diagonal), then O += A U over j ≤ i only.
  if (af)
    A = l.generic(l.empty({s.group, C, C}), {A, af},
                  {l.map(3, {0, 1, 2}), l.map(3, {1, 2}), l.map(3, {0, 1, 2})},
                  {P, P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                    return mul(nb, loc, a[0], a[1]);
                  });
  O = blockedMatmul(l, O, /*accumulate=*/true, {}, A, /*aTransposed=*/false, U,
                    /*causal=*/true, s.outBthd);
  out = s.outBthd ? l.insert(O, out, {t0, z, z}, {C, s.group, s.dv})
                  : l.insert(O, out, {z, t0, z}, {s.group, C, s.dv});
  // State: exp(G_C) ⊙ S + (K ⊙ exp(G_C − G))ᵀ U.
  Value Kh = K, el;
  if (s.decay) {
    // exp(G_C − G_i) [C, Dd] (C·Dd exps), exp(G_C) [Dd] (Dd exps).
    Value gl = l.broadcast(glast, {C, s.dd}, l.map(2, {1}));
    Value ekh = l.mapOp({C, s.dd}, {gl, gc}, [&](OpBuilder &nb, ValueRange a) {
      return exp(nb, loc, sub(nb, loc, a[0], a[1]));
    });
    Kh = scaleRows(l, s, K, ekh);
    // exp(G_C) [Dd], the factor of each state row (one for all rows when
    // the decay is per head), applied as the rows are loaded.
    el = expOf(l, glast);
  }
  // S[d, e] = exp(G_C,d) S[d, e] + Σ_i Kh[i, d] U[i, e]: a [Dk, C] × [C, Dv]
  // product reading Kh transposed.
  st = blockedMatmul(l, st, /*accumulate=*/true, el, Kh, /*aTransposed=*/true,
                     U, /*causal=*/false);
  return {out, st};
}

/// The last T mod C tokens (if any) of (batch bi, kv head h), after the
/// `whole` chunks: their inputs (all heads of batch bi) copied into
/// [1, H, C, D] tensors (or [1, C, H, D]) padded with zeros (k = v = 0,
/// log-decay 0, β = 0: the padding leaves the state alone), one chunkStep on
/// them writing a [G, C, Dv] (or [C, G, Dv]) tile of which the first
/// T mod C rows are copied into the head's output rows. Only the tail is
/// copied: the whole chunks are read in place, and the output needs no
/// slicing of padded rows.
SmallVector<Value> tailChunk(Builder &l, const Shapes &s, Value bi, Value whole,
                             Value len, Value q, Value k, Value v, Value decay,
                             Value beta, Value rows, Value st, Value h) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  int64_t C = s.chunk;
  Value t0 = arith::MulIOp::create(b, loc, whole, l.ci(C));
  Value rem = arith::SubIOp::create(b, loc, len, t0);
  Value any =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, rem, l.ci(0));
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{rows.getType(), st.getType()},
                                any, /*withElse=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, ValueRange{rows, st});
  b.setInsertionPointToStart(ifOp.thenBlock());
  OpFoldResult z = b.getIndexAttr(0);
  SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
  // x[bi, :, t0 : T, :] zero-padded to C tokens.
  auto tail = [&](Value x) -> Value {
    if (!x)
      return x;
    auto t = cast<RankedTensorType>(x.getType());
    int64_t hx = t.getDimSize(s.bthd ? 2 : 1), dx = t.getDimSize(3);
    SmallVector<OpFoldResult> off{bi, z, t0, z},
        sz{b.getIndexAttr(1), b.getIndexAttr(hx), rem, b.getIndexAttr(dx)};
    SmallVector<int64_t> shape{1, hx, C, dx};
    if (s.bthd) {
      std::swap(off[1], off[2]);
      std::swap(sz[1], sz[2]);
      std::swap(shape[1], shape[2]);
    }
    Value part = tensor::ExtractSliceOp::create(b, loc, x, off, sz, ones);
    Value padded = l.zeros(shape);
    SmallVector<OpFoldResult> at(4, z);
    return tensor::InsertSliceOp::create(b, loc, part, padded, at, sz, ones);
  };
  SmallVector<int64_t> tileShape{s.group, C, s.dv};
  if (s.outBthd)
    std::swap(tileShape[0], tileShape[1]);
  Value zero = l.ci(0);
  SmallVector<Value> r =
      chunkStep(l, s, zero, h, zero, tail(q), tail(k), tail(v), tail(decay),
                tail(beta), l.empty(tileShape), st);
  // The first T mod C rows of the tile into the head's output rows.
  SmallVector<OpFoldResult> off{z, z, z},
      sz{b.getIndexAttr(s.group), rem, b.getIndexAttr(s.dv)};
  SmallVector<OpFoldResult> dst{z, t0, z};
  if (s.outBthd) {
    std::swap(sz[0], sz[1]);
    std::swap(dst[0], dst[1]);
  }
  SmallVector<OpFoldResult> ones3(3, b.getIndexAttr(1));
  Value part = tensor::ExtractSliceOp::create(b, loc, r[0], off, sz, ones3);
  Value newRows =
      tensor::InsertSliceOp::create(b, loc, part, rows, dst, sz, ones3);
  scf::YieldOp::create(b, loc, ValueRange{newRows, r[1]});
  return {ifOp.getResult(0), ifOp.getResult(1)};
}

/// The [B, T, H, D] source of a head transpose (onnx.Transpose with perm
/// [0, 2, 1, 3]) producing x, if x is one.
Value headTransposeSource(Value x) {
  auto t = x ? x.getDefiningOp<onnx::TransposeOp>() : onnx::TransposeOp();
  if (!t || !t.getPerm() ||
      SmallVector<int64_t>(t.getPerm()->begin(), t.getPerm()->end()) !=
          SmallVector<int64_t>{0, 2, 1, 3})
    return Value();
  auto st = dyn_cast<RankedTensorType>(t.getData().getType());
  return st && st.getRank() == 4 ? t.getData() : Value();
}

/// The head transpose that is the only user of the output, if any.
onnx::TransposeOp outputHeadTranspose(Value out) {
  if (!out.hasOneUse())
    return {};
  auto t = dyn_cast<onnx::TransposeOp>(*out.getUsers().begin());
  if (!t || !t.getPerm() ||
      SmallVector<int64_t>(t.getPerm()->begin(), t.getPerm()->end()) !=
          SmallVector<int64_t>{0, 2, 1, 3} ||
      !isa<RankedTensorType>(t.getType()))
    return {};
  return t;
}

LogicalResult lower(gated::LinearAttentionOp op) {
  OpBuilder b(op);
  Builder l(b, op.getLoc());
  Location loc = op.getLoc();
  for (Value v : op->getOperands())
    if (!isa<RankedTensorType>(v.getType()))
      return op.emitOpError() << "cannot be lowered: unranked operand";
  auto qt = cast<RankedTensorType>(op.getQuery().getType());
  auto kt = cast<RankedTensorType>(op.getKey().getType());
  auto vt = cast<RankedTensorType>(op.getValue().getType());
  Shapes s;
  s.hq = qt.getDimSize(1);
  s.hkv = kt.getDimSize(1);
  s.dk = qt.getDimSize(3);
  s.dv = vt.getDimSize(3);
  s.decay = (bool)op.getDecay();
  s.delta = (bool)op.getBeta();
  s.dd = s.decay ? cast<RankedTensorType>(op.getDecay().getType()).getDimSize(3)
                 : 1;
  s.perChannel = s.decay && s.dd != 1;
  if (s.dk == 1)
    s.perChannel = false, s.dd = 1;
  s.betaHeads =
      s.delta ? cast<RankedTensorType>(op.getBeta().getType()).getDimSize(1)
              : 1;
  bool chunked = op.getForm() == gated::LinearAttentionForm::chunked;
  s.chunk = op.getChunkSize();
  if (s.hq == kDyn || s.hkv == kDyn || s.dk == kDyn || s.dv == kDyn ||
      s.dd == kDyn || s.betaHeads == kDyn)
    return op.emitOpError() << "cannot be lowered: head counts and head "
                               "dims must be static";
  s.group = s.hq / s.hkv;

  // The scale is applied to each step's query slice (scaled()), not by a
  // pass over the whole query tensor.
  s.scale = op.getScale().convertToDouble();
  // Inputs that are head transposes of [B, T, H, D] tensors (all of them)
  // are read from those tensors in place, strided along T: no transposed
  // copy of the sequence. Likewise the output is written in the order of
  // the head transpose that consumes it.
  SmallVector<Value> ins{op.getQuery(), op.getKey(), op.getValue()};
  if (s.decay)
    ins.push_back(op.getDecay());
  if (s.delta)
    ins.push_back(op.getBeta());
  s.bthd =
      llvm::all_of(ins, [](Value x) { return (bool)headTransposeSource(x); });
  if (s.bthd)
    for (Value &x : ins)
      x = headTransposeSource(x);
  onnx::TransposeOp outT = outputHeadTranspose(op.getOutput());
  s.outBthd = (bool)outT;
  Value q = l.toF32(ins[0]);
  Value k = l.toF32(ins[1]), v = l.toF32(ins[2]);
  Value decay = s.decay ? l.toF32(ins[3]) : Value();
  Value beta = s.delta ? l.toF32(ins.back()) : Value();
  Value bsz = l.dim(q, 0), len = l.dim(q, s.bthd ? 1 : 2);
  Value state0 = op.getInitialState()
                     ? l.toF32(op.getInitialState())
                     : l.zeros({kDyn, s.hkv, s.dk, s.dv}, {bsz});
  OpFoldResult z = b.getIndexAttr(0);
  // The batch size, static when the query's is (then the results of the
  // forall and of the scf.if below have static batch dims too, and their
  // buffers the identity layout the function returns without a copy).
  int64_t B = cast<RankedTensorType>(q.getType()).getDimSize(0);
  auto bdyn = [&](ArrayRef<Value> rest) {
    SmallVector<Value> d;
    if (B == kDyn)
      d.push_back(bsz);
    d.append(rest.begin(), rest.end());
    return d;
  };
  // The loops, on inputs of tp tokens in `steps` steps.
  auto outEmpty = [&](Value tp) {
    return s.outBthd ? l.empty({B, kDyn, s.hq, s.dv}, bdyn({tp}))
                     : l.empty({B, s.hq, kDyn, s.dv}, bdyn({tp}));
  };
  auto emit = [&](Value q, Value k, Value v, Value decay, Value beta, Value tp,
                  Value steps) -> SmallVector<Value> {
    Value out0 = outEmpty(tp);
    Value fstate0 = l.empty({B, s.hkv, s.dk, s.dv}, bdyn({}));
    // One task per (batch, KV head): an scf.forall whose iteration runs the
    // sequential loop over tokens or chunks on the head's state and writes its
    // query heads' output rows [G, T', Dv] and its final state.
    auto outer = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{bsz, b.getIndexAttr(s.hkv)},
        ValueRange{out0, fstate0}, std::nullopt);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(outer.getTerminator());
      Value bi = outer.getInductionVars()[0], h = outer.getInductionVars()[1];
      Value outShared = outer.getRegionIterArgs()[0];
      Value fsShared = outer.getRegionIterArgs()[1];
      Value hq0 = arith::MulIOp::create(b, loc, h, l.ci(s.group));
      // The head's output rows: [G, T', Dv] (or [T', G, Dv]).
      auto rowsType = s.outBthd
                          ? RankedTensorType::get({kDyn, s.group, s.dv}, l.f32)
                          : RankedTensorType::get({s.group, kDyn, s.dv}, l.f32);
      SmallVector<OpFoldResult> rowsOff{bi, hq0, z, z};
      SmallVector<OpFoldResult> rowsSize{
          b.getIndexAttr(1), b.getIndexAttr(s.group), tp, b.getIndexAttr(s.dv)};
      if (s.outBthd) {
        std::swap(rowsOff[1], rowsOff[2]);
        std::swap(rowsSize[1], rowsSize[2]);
      }
      SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
      Value rows = tensor::ExtractSliceOp::create(b, loc, rowsType, outShared,
                                                  rowsOff, rowsSize, ones);
      Value st = l.slice(state0, {bi, h, z, z}, {1, 1, s.dk, s.dv}, {0, 1});
      auto seq = l.loop(l.ci(0), steps, {rows, st},
                        [&](Value t, ValueRange it) -> SmallVector<Value> {
                          if (chunked)
                            return chunkStep(l, s, bi, h, t, q, k, v, decay,
                                             beta, it[0], it[1]);
                          return recurrentStep(l, s, bi, h, t, q, k, v, decay,
                                               beta, it[0], it[1]);
                        });
      SmallVector<Value> fin(seq.getResults());
      if (chunked)
        fin = tailChunk(l, s, bi, steps, len, q, k, v, decay, beta, fin[0],
                        fin[1], h);
      b.setInsertionPointToStart(outer.getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(b, loc, fin[0], outShared, rowsOff,
                                            rowsSize, ones);
      SmallVector<OpFoldResult> stOff{bi, h, z, z};
      SmallVector<OpFoldResult> stSize{b.getIndexAttr(1), b.getIndexAttr(1),
                                       b.getIndexAttr(s.dk),
                                       b.getIndexAttr(s.dv)};
      tensor::ParallelInsertSliceOp::create(b, loc, fin[1], fsShared, stOff,
                                            stSize, ones);
    }
    return {outer.getResult(0), outer.getResult(1)};
  };
  SmallVector<Value> res;
  if (!chunked) {
    res = emit(q, k, v, decay, beta, len, len);
  } else {
    // floor(T / C) whole chunks read in place; the last T mod C tokens, if
    // any, by tailChunk in each task.
    Value steps = arith::DivUIOp::create(b, loc, len, l.ci(s.chunk));
    res = emit(q, k, v, decay, beta, len, steps);
  }

  Value out = res[0];
  auto finish = [&](Value x, Type want) -> Value {
    auto wt = llvm::cast<RankedTensorType>(want);
    x = l.fromF32(x, wt.getElementType());
    if (x.getType() != want)
      x = tensor::CastOp::create(b, loc, want, x);
    return x;
  };
  Value fs = finish(res[1], op.getFinalState().getType());
  if (outT) {
    // The output in [B, T, Hq, Dv] order replaces its head transpose.
    outT.getResult().replaceAllUsesWith(finish(out, outT.getType()));
    outT.erase();
  } else {
    op.getOutput().replaceAllUsesWith(finish(out, op.getOutput().getType()));
  }
  op.getFinalState().replaceAllUsesWith(fs);
  op.erase();
  return success();
}

struct ConvertLinearAttentionToLoopsPass
    : conversion::impl::ConvertLinearAttentionToLoopsBase<
          ConvertLinearAttentionToLoopsPass> {
  void runOnOperation() override {
    SmallVector<gated::LinearAttentionOp> ops;
    getOperation().walk(
        [&](gated::LinearAttentionOp op) { ops.push_back(op); });
    for (gated::LinearAttentionOp op : ops)
      if (failed(lower(op)))
        return signalPassFailure();
  }
};
} // namespace
