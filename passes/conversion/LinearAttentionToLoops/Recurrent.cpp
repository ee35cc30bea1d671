//===- Recurrent.cpp - the recurrent form of linear attention -------------===//
//
// form = recurrent of gated.linear_attention: one step of the pass's loop
// per token, on the [Dk, Dv] state of one (batch, KV head): decay the state
// by exp(g_t), the delta rule's correction, the rank-1 write k uᵀ, then the
// read of the state by the query heads of the group. The reference form.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/LinearAttentionToLoops/Common.h"

namespace gatec::conversion::linear_attention {
namespace {

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
  maps.push_back(l.dimMap(n, outDims));
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

/// o [G, Dv] (or [G, C, Dv]) = x · S, contracting Dk.
/// `dest` is the slice of the output it is written to (computed in place).
Value readState(Builder &l, Value x, Value st, ArrayRef<int64_t> outShape,
                Value dest) {
  Value init = l.fill(dest, 0.0);
  int64_t dk = cast<RankedTensorType>(st.getType()).getDimSize(0);
  if (outShape.size() == 2) // (g, d, e)
    return contract(l, init, {x, st}, {{0, 1}, {1, 2}}, {0, 2}, 3, 1, dk);
  // (g, i, d, e)
  return contract(l, init, {x, st}, {{0, 1, 2}, {2, 3}}, {0, 1, 3}, 4, 2, dk);
}
} // namespace

/// One token of the recurrence for (batch bi, kv head h) at token t.
SmallVector<Value> recurrentStep(Builder &l, const Shapes &s, Value bi, Value h,
                                 Value t, Value q, Value k, Value v,
                                 Value decay, Value beta, Value out, Value st) {
  Location loc = l.loc;
  OpFoldResult z = l.b.getIndexAttr(0);
  Value hq0 = arith::MulIOp::create(l.b, loc, h, l.index(s.group));
  Value kt = headSlice(l, s.bthd, k, bi, h, t, 1, 1, s.dk, {1, 2});
  Value vt = headSlice(l, s.bthd, v, bi, h, t, 1, 1, s.dv, {1, 2});
  Value qt =
      scaled(l, s, headSlice(l, s.bthd, q, bi, hq0, t, s.group, 1, s.dk, {2}));
  if (s.decay) {
    // S = diag(exp(g_t)) S
    Value gt = headSlice(l, s.bthd, decay, bi, h, t, 1, 1, s.dd, {1, 2});
    st = l.generic(st, {gt},
                   {l.dimMap(2, {s.perChannel ? 0 : -1}), l.dimMap(2, {0, 1})},
                   {P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                     return mul(nb, loc, a[1], exp(nb, loc, a[0]));
                   });
  }
  Value u = vt;
  if (s.delta) {
    Value hb = s.betaHeads == 1 ? l.index(0) : h;
    Value bt =
        tensor::ExtractOp::create(l.b, loc, beta,
                                  s.bthd ? ValueRange{bi, t, hb, l.index(0)}
                                         : ValueRange{bi, hb, t, l.index(0)});
    // r = Sᵀ k, u = β (v − r)
    Value r =
        l.generic(l.zeros({s.dv}), {st, kt},
                  {l.dimMap(2, {0, 1}), l.dimMap(2, {0}), l.dimMap(2, {1})},
                  {R, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
                    return add(nb, loc, a[2], mul(nb, loc, a[0], a[1]));
                  });
    u = l.generic(r, {vt, r},
                  {l.dimMap(1, {0}), l.dimMap(1, {0}), l.dimMap(1, {0})}, {P},
                  [&](OpBuilder &nb, ValueRange a) -> Value {
                    return mul(nb, loc, bt, sub(nb, loc, a[0], a[1]));
                  });
  }
  // S = S + k uᵀ
  st = l.generic(st, {kt, u},
                 {l.dimMap(2, {0}), l.dimMap(2, {1}), l.dimMap(2, {0, 1})},
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

} // namespace gatec::conversion::linear_attention
