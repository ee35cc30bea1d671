//===- Chunked.cpp - the chunked log-space form of linear attention -------===//
//
// form = chunked of gated.linear_attention: one step of the pass's loop per
// whole chunk of C tokens, read in place, and one on the zero-padded last
// T mod C tokens. A step computes the chunk's cumulative log-decays G, the
// intra-chunk scores, for the delta rules the UT system solved by forward
// substitution, the output (Q ⊙ exp(G)) S + A U and the new state, with the
// matrix products in register-blocked vector FMAs. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/LinearAttentionToLoops/Common.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace gatec::conversion::linear_attention {
namespace {
/// The floor of a token's log-decay in the chunked form (see the cumulative
/// log-decays G below): exp(-30) ≈ 9e-14, far below f32's precision, so a
/// token at the floor forgets the state before it. A lower floor makes the
/// cumulative sums larger and their differences less precise (−88 left
/// 1.5e-5 relative error at C = 64 after a few resets).
constexpr float kResetLogDecay = -30.0f;

// Scalar helpers for generic bodies.
/// j <= i (strict: j < i) from linalg.index of dims i and j.
Value causal(OpBuilder &b, Location l, int64_t i, int64_t j, bool strict) {
  Value vi = linalg::IndexOp::create(b, l, i);
  Value vj = linalg::IndexOp::create(b, l, j);
  return arith::CmpIOp::create(
      b, l, strict ? arith::CmpIPredicate::ult : arith::CmpIPredicate::ule, vj,
      vi);
}
/// k <= m inside a linalg body being built with `b`.
Value causal_(OpBuilder &b, Location l, unsigned m, unsigned k) {
  Value vm = linalg::IndexOp::create(b, l, m);
  Value vk = linalg::IndexOp::create(b, l, k);
  return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ule, vk, vm);
}
/// exp(gi − gj) where `keep`, else exp(0) (the exponent is never positive
/// for non-positive log-decays: gi − gj sums the log-decays j+1 … i).
Value decayFactor(OpBuilder &b, Location l, Value keep, Value gi, Value gj) {
  Value zero = arith::ConstantOp::create(b, l, b.getF32FloatAttr(0.0));
  return exp(b, l,
             arith::SelectOp::create(b, l, keep, sub(b, l, gi, gj), zero));
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
/// blockedMatmul's product as linalg ops (Builder::linalgProducts): the row
/// scales a map over acc, then one contraction over (g,) m, n, k whose
/// causal terms k > m are selected away.
Value linalgMatmul(Builder &l, Value acc, bool accumulate, Value rowScale,
                   Value a, bool aTransposed, Value bm, bool causal,
                   bool accMGN) {
  OpBuilder &b = l.b;
  MLIRContext *ctx = b.getContext();
  auto accT = cast<RankedTensorType>(acc.getType());
  bool batched = accT.getRank() == 3;
  unsigned n = batched ? 4 : 3;
  // Dims: (g,) m, n, k.
  unsigned g = 0, m = batched ? 1 : 0, nn = m + 1, k = m + 2;
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto map = [&](ArrayRef<AffineExpr> r) {
    return AffineMap::get(n, 0, r, ctx);
  };
  AffineMap accMap = !batched ? map({d(m), d(nn)})
                     : accMGN ? map({d(m), d(g), d(nn)})
                              : map({d(g), d(m), d(nn)});
  AffineMap aMap = aTransposed ? map({d(k), d(m)})
                   : batched   ? map({d(g), d(m), d(k)})
                               : map({d(m), d(k)});
  AffineMap bMap = map({d(k), d(nn)});
  if (!accumulate) {
    acc = l.fill(acc, 0.0);
  } else if (rowScale) {
    unsigned r = accT.getRank();
    int64_t sRows = cast<RankedTensorType>(rowScale.getType()).getDimSize(0);
    unsigned mDim = batched && !accMGN ? 1 : 0;
    AffineMap id = b.getMultiDimIdentityMap(r);
    AffineMap sMap =
        sRows == 1 ? AffineMap::get(r, 0, {getAffineConstantExpr(0, ctx)}, ctx)
                   : AffineMap::get(r, 0, {getAffineDimExpr(mDim, ctx)}, ctx);
    // In place (acc is its own init): a loop-carried state stays one
    // buffer through bufferization.
    acc =
        l.generic(acc, {rowScale}, {sMap, id}, SmallVector<IteratorType>(r, P),
                  [&](OpBuilder &nb, ValueRange v) -> Value {
                    return arith::MulFOp::create(nb, l.loc, v[1], v[0]);
                  });
  }
  SmallVector<IteratorType> iters(n, P);
  iters[k] = R;
  return l.generic(
      acc, {a, bm}, {aMap, bMap, accMap}, iters,
      [&](OpBuilder &nb, ValueRange v) -> Value {
        Value p = arith::MulFOp::create(nb, l.loc, v[0], v[1]);
        if (causal) {
          Value keep = causal_(nb, l.loc, m, k);
          p = arith::SelectOp::create(
              nb, l.loc, keep, p,
              arith::ConstantOp::create(nb, l.loc, nb.getF32FloatAttr(0.0)));
        }
        return arith::AddFOp::create(nb, l.loc, v[2], p);
      });
}

Value blockedMatmul(Builder &l, Value acc, bool accumulate, Value rowScale,
                    Value a, bool aTransposed, Value bm, bool causal,
                    bool accMGN = false) {
  if (l.linalgProducts)
    return linalgMatmul(l, acc, accumulate, rowScale, a, aTransposed, bm,
                        causal, accMGN);
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
  Value pad = l.cst(0.0);
  Value zeroV = vector::BroadcastOp::create(b, loc, vt, pad);
  int64_t sRows =
      rowScale ? cast<RankedTensorType>(rowScale.getType()).getDimSize(0) : 0;

  auto add = [&](Value x, int64_t c) -> Value {
    return c ? arith::AddIOp::create(b, loc, x, l.index(c)).getResult() : x;
  };

  auto product = [&](Value g, Value accIn) -> Value {
    auto idx = [&](Value r, Value c) -> SmallVector<Value> {
      if (batched && accMGN)
        return {r, g, c};
      if (batched)
        return {g, r, c};
      return {r, c};
    };
    auto mLoop = l.loop(
        l.index(0), l.index(M), {accIn},
        [&](Value m0, ValueRange mIt) -> SmallVector<Value> {
          auto nLoop = l.loop(
              l.index(0), l.index(N), {mIt[0]},
              [&](Value n0, ValueRange nIt) -> SmallVector<Value> {
                Value t = nIt[0];
                SmallVector<Value> init;
                for (int64_t r = 0; r < MR; ++r) {
                  Value sc;
                  if (accumulate && rowScale) {
                    Value si = sRows == 1 ? l.index(0) : add(m0, r);
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
                        b, loc, vt, t, idx(add(m0, r), add(n0, c * w)), pad,
                        inb);
                    if (sc)
                      v = arith::MulFOp::create(b, loc, v, sc);
                    init.push_back(v);
                  }
                }
                Value kEnd = causal ? add(m0, MR) : l.index(K);
                if (causal && M > K)
                  kEnd = arith::MinUIOp::create(b, loc, kEnd, l.index(K));
                auto kLoop = l.loop(
                    l.index(0), kEnd, init,
                    [&](Value k, ValueRange vs) -> SmallVector<Value> {
                      SmallVector<Value> bv;
                      for (int64_t c = 0; c < NR; ++c)
                        bv.push_back(vector::TransferReadOp::create(
                            b, loc, vt, bm, ValueRange{k, add(n0, c * w)}, pad,
                            inb));
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
                          out.push_back(vector::FMAOp::create(b, loc, x, bv[c],
                                                              vs[r * NR + c]));
                      }
                      return out;
                    },
                    1);
                for (int64_t r = 0; r < MR; ++r)
                  for (int64_t c = 0; c < NR; ++c)
                    t = vector::TransferWriteOp::create(
                            b, loc, kLoop.getResult(r * NR + c), t,
                            idx(add(m0, r), add(n0, c * w)), inb)
                            .getResult();
                return {t};
              },
              NR *w);
          return {nLoop.getResult(0)};
        },
        MR);
    return mLoop.getResult(0);
  };
  if (!batched)
    return product(Value(), acc);
  return l
      .loop(
          l.index(0), l.index(G), {acc},
          [&](Value g, ValueRange it) -> SmallVector<Value> {
            return {product(g, it[0])};
          },
          1)
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
  if (R % 8 != 0 || N % 8 != 0 || l.linalgProducts)
    return linalg::TransposeOp::create(b, loc, x, init, ArrayRef<int64_t>{1, 0})
        ->getResult(0);
  auto vt = VectorType::get({8}, l.f32);
  SmallVector<bool> inb{true};
  Value pad = l.cst(0.0);
  auto shuffle = [&](Value a, Value c, ArrayRef<int64_t> mask) -> Value {
    return vector::ShuffleOp::create(b, loc, a, c, mask);
  };
  auto addc = [&](Value v, int64_t c) -> Value {
    return c ? arith::AddIOp::create(b, loc, v, l.index(c)).getResult() : v;
  };
  auto rLoop = scf::ForOp::create(b, loc, l.index(0), l.index(R), l.index(8),
                                  ValueRange{init});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(rLoop.getBody());
    Value r0 = rLoop.getInductionVar();
    auto nLoop = scf::ForOp::create(b, loc, l.index(0), l.index(N), l.index(8),
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
        {l.dimMap(n, xi), l.dimMap(n, {D, J}), l.dimMap(n, {I, D}),
         l.dimMap(n, {D, J}), l.dimMap(n, out)},
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
      Value ek = l.mapOp({cb, s.dk},
                         {l.broadcast(gr, {cb, s.dk}, l.dimMap(2, {1})), gb},
                         [&](OpBuilder &nb, ValueRange a) {
                           return exp(nb, loc, sub(nb, loc, a[0], a[1]));
                         });
      Value kt = l.generic(
          l.empty({cb, s.dk}), {kb, ek},
          {l.dimMap(2, {0, 1}), l.dimMap(2, {0, 1}), l.dimMap(2, {0, 1})},
          {P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
            return mul(nb, loc, a[0], a[1]);
          });
      // x̃ [(G,) m, Dk], rows r+1 … C−1, exponents G_i − G_r.
      Value gi = l.slice(gc, {idx(r + 1), z}, {m, s.dk}, {});
      Value ex =
          l.mapOp({m, s.dk}, {gi, l.broadcast(gr, {m, s.dk}, l.dimMap(2, {1}))},
                  [&](OpBuilder &nb, ValueRange a) {
                    return exp(nb, loc, sub(nb, loc, a[0], a[1]));
                  });
      unsigned xn = batched ? 3 : 2;
      AffineMap xid = l.b.getMultiDimIdentityMap(xn);
      Value xt = l.generic(
          l.empty(block(m, s.dk)), {xRows(r + 1, m), ex},
          {xid, batched ? l.dimMap(3, {1, 2}) : l.dimMap(2, {0, 1}), xid},
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
  Value zero = l.cst(0.0);
  if (!s.decay) {
    Value one = l.cst(1.0);
    factor =
        l.generic(l.empty({C, C}), {}, {l.dimMap(2, {0, 1})}, {P, P},
                  [&](OpBuilder &nb, ValueRange) -> Value {
                    Value keep = causal(nb, loc, 0, 1, strict);
                    return arith::SelectOp::create(nb, loc, keep, one, zero);
                  });
    return sc;
  }
  // Scalar decay: the factors exp(G_i − G_j) [C, C] computed once (C² exps).
  Value gi = l.broadcast(gc, {C, C}, l.dimMap(2, {0, -1}));
  Value gj = l.broadcast(gc, {C, C}, l.dimMap(2, {1, -1}));
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
                   {l.b.getMultiDimIdentityMap(n), l.dimMap(n, em),
                    l.b.getMultiDimIdentityMap(n)},
                   SmallVector<IteratorType>(n, P),
                   [&](OpBuilder &nb, ValueRange a) -> Value {
                     return mul(nb, loc, a[0], a[1]);
                   });
}

/// x [C, G, Dk] (a chunk's query slice, token-major) as [G, C, Dk],
/// multiplied by the scale.
Value scaledToGCD(Builder &l, const Shapes &s, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  Value c = l.cst(s.scale);
  Location loc = l.loc;
  return l.generic(l.empty({t.getDimSize(1), t.getDimSize(0), t.getDimSize(2)}),
                   {x}, {l.dimMap(3, {1, 0, 2}), l.dimMap(3, {0, 1, 2})},
                   {P, P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                     return s.scale == 1.0 ? a[0] : mul(nb, loc, a[0], c);
                   });
}
} // namespace

/// One chunk (tokens t0 … t0+C−1) for (batch bi, kv head h).
SmallVector<Value> chunkStep(Builder &l, const Shapes &s, Value bi, Value h,
                             Value c, Value q, Value k, Value v, Value decay,
                             Value beta, Value out, Value st) {
  Location loc = l.loc;
  OpBuilder &b = l.b;
  int64_t C = s.chunk;
  OpFoldResult z = b.getIndexAttr(0);
  Value t0 = arith::MulIOp::create(b, loc, c, l.index(C));
  Value hq0 = arith::MulIOp::create(b, loc, h, l.index(s.group));
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
    // G_i = Σ_{j ≤ i} max(g_j, kResetLogDecay) (inclusive, f32), dims
    // (i, j, d). A log-decay of -inf (a full reset of the state) would make
    // G_i − G_j = -inf − (-inf) = NaN: it is taken as kResetLogDecay, so
    // the state before it is forgotten to f32 precision. NaN stays NaN.
    Value g = headSlice(l, s.bthd, decay, bi, h, t0, 1, C, s.dd, {1});
    gc = l.generic(
        l.zeros({C, s.dd}), {g}, {l.dimMap(3, {1, 2}), l.dimMap(3, {0, 2})},
        {P, R, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
          Value keep = causal(nb, loc, 0, 1, false);
          Value gj = arith::MaximumFOp::create(
              nb, loc, a[0],
              arith::ConstantOp::create(nb, loc,
                                        nb.getF32FloatAttr(kResetLogDecay)));
          return arith::SelectOp::create(nb, loc, keep, add(nb, loc, a[1], gj),
                                         a[1]);
        });
    glast = l.slice(gc, {l.index(C - 1), z}, {1, s.dd}, {0});
  }
  // exp(G) [C, Dd]: C·Dd exps per chunk, read by the row scalings.
  Value eg = s.decay ? expOf(l, gc) : Value();
  // U: the values written (delta rules: the UT system), [C, Dv].
  Value U = V;
  if (s.delta) {
    Value hb = s.betaHeads == 1 ? l.index(0) : h;
    Value bt = headSlice(l, s.bthd, beta, bi, hb, t0, 1, C, 1, {1, 3});
    // M_ij = β_i Σ_d k_id k_jd exp(G_id − G_jd), j < i
    Value mf;
    Value M = scores(l, s, K, K, gc, /*batched=*/false, /*strict=*/true, mf);
    SmallVector<Value> mIns{bt, M};
    SmallVector<AffineMap> mMaps{l.dimMap(2, {0}), l.dimMap(2, {0, 1})};
    if (mf) {
      mIns.push_back(mf);
      mMaps.push_back(l.dimMap(2, {0, 1}));
    }
    mMaps.push_back(l.dimMap(2, {0, 1}));
    M = l.generic(l.empty({C, C}), mIns, mMaps, {P, P},
                  [&](OpBuilder &nb, ValueRange a) -> Value {
                    Value m = mul(nb, loc, a[1], a[0]);
                    return a.size() > 3 ? mul(nb, loc, m, a[2]) : m;
                  });
    // rhs = β ⊙ (V − (K ⊙ exp(G)) S)
    Value Kg = s.decay ? scaleRows(l, s, K, eg) : K;
    Value KS = blockedMatmul(l, l.empty({C, s.dv}), /*accumulate=*/false, {},
                             Kg, /*aTransposed=*/false, st, /*causal=*/false);
    Value rhs = l.generic(KS, {V, bt, KS},
                          {l.dimMap(2, {0, 1}), l.dimMap(2, {0}),
                           l.dimMap(2, {0, 1}), l.dimMap(2, {0, 1})},
                          {P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                            return mul(nb, loc, a[1], sub(nb, loc, a[0], a[2]));
                          });
    // Forward substitution: u_i = rhs_i − Σ_{j<i} M_ij u_j.
    U = l.loop(l.index(0), l.index(C), {rhs},
               [&](Value i, ValueRange it) -> SmallVector<Value> {
                 Value Uc = it[0];
                 Value mrow = l.slice(M, {i, z}, {1, C}, {0});
                 Value urow = l.slice(Uc, {i, z}, {1, s.dv}, {0});
                 Value nrow = l.generic(
                     urow, {mrow, Uc},
                     {l.dimMap(2, {0}), l.dimMap(2, {0, 1}), l.dimMap(2, {1})},
                     {R, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
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
    A = l.generic(
        l.empty({s.group, C, C}), {A, af},
        {l.dimMap(3, {0, 1, 2}), l.dimMap(3, {1, 2}), l.dimMap(3, {0, 1, 2})},
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
    Value gl = l.broadcast(glast, {C, s.dd}, l.dimMap(2, {1}));
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
  Value t0 = arith::MulIOp::create(b, loc, whole, l.index(C));
  Value rem = arith::SubIOp::create(b, loc, len, t0);
  Value any =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, rem, l.index(0));
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
  Value zero = l.index(0);
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

} // namespace gatec::conversion::linear_attention
