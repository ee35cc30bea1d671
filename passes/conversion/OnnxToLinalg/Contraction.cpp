//===- Contraction.cpp - MatMul, Gemm, Conv, Einsum -----------------------===//
//
// The contractions as linalg.generic ops with reduction loops, accumulated in
// f32 (or the element type) and converted back: MatMul (batch dims broadcast
// at run time), Gemm, Conv (any spatial rank and group) and Einsum, and the
// contraction the Attention lowering shares.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "passes/common/Broadcast.h"

#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

#include <map>

namespace gatec::conversion::onnx_to_linalg {

//===----------------------------------------------------------------------===//
// Contractions: MatMul, Einsum
//===----------------------------------------------------------------------===//

namespace {

/// Exprs reading the `n` leading (batch) dims of `t` broadcast to the
/// result batch dims [0, nb) of `out`.
void batchExprs(Lowerer &l, RankedTensorType t, int64_t n, int64_t nb,
                RankedTensorType out, SmallVectorImpl<AffineExpr> &exprs) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = nb - n + i;
    if (t.getDimSize(i) == 1 && out.getDimSize(d) != 1)
      exprs.push_back(l.b.getAffineConstantExpr(0));
    else
      exprs.push_back(l.b.getAffineDimExpr(d));
  }
}

} // namespace

Value contract(Lowerer &l, RankedTensorType out, ArrayRef<OpFoldResult> sizes,
               ValueRange ins, ArrayRef<AffineMap> maps, int64_t nLoops,
               bool keepAcc) {
  Type e = out.getElementType(), acc = accType(e);
  auto accT = RankedTensorType::get(out.getShape(), acc);
  Value init = l.filled(accT, sizes, scalarAttr(l.b, acc, 0));
  SmallVector<AffineExpr> outExprs;
  for (int64_t i = 0; i < out.getRank(); ++i)
    outExprs.push_back(l.b.getAffineDimExpr(i));
  SmallVector<AffineMap> all(maps);
  all.push_back(AffineMap::get(nLoops, 0, outExprs, l.b.getContext()));
  SmallVector<IteratorType> it(nLoops, IteratorType::reduction);
  std::fill_n(it.begin(), out.getRank(), IteratorType::parallel);
  auto g = linalg::GenericOp::create(
      l.b, TypeRange{accT}, ins, ValueRange{init}, all, it,
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        ImplicitLocOpBuilder ib(loc, nb);
        auto in = [&](Value v) { return toSignless(ib, convert(ib, v, acc)); };
        Value p = in(a[0]);
        for (Value v : a.drop_front().drop_back())
          p = isFloat(acc) ? (Value)arith::MulFOp::create(ib, p, in(v))
                           : (Value)arith::MulIOp::create(ib, p, in(v));
        Value o = toSignless(ib, a.back());
        Value s = isFloat(acc) ? (Value)arith::AddFOp::create(ib, o, p)
                               : (Value)arith::AddIOp::create(ib, o, p);
        linalg::YieldOp::create(ib, castScalar(ib, s, acc));
      });
  Value r = g.getResult(0);
  if (acc == e || keepAcc)
    return r;
  return l.elementwise(out, {r}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
    return convert(b, a[0], e);
  });
}

LogicalResult lower(onnx::MatMulOp op, Lowerer &l) {
  Value a = l.in[0], bm = l.in[1];
  RankedTensorType at = l.typeOf(a), bt = l.typeOf(bm), rt = l.resultType();
  int64_t ra = at.getRank(), rb = bt.getRank(), r = rt.getRank();
  bool aVec = ra == 1, bVec = rb == 1;
  int64_t nb = r - (aVec ? 0 : 1) - (bVec ? 0 : 1);
  if (ra < 1 || rb < 1 || nb < 0)
    return l.fail("operands of rank 0");
  AffineExpr k = l.b.getAffineDimExpr(r);
  SmallVector<AffineExpr> ae, be;
  batchExprs(l, at, std::max<int64_t>(ra - 2, 0), nb, rt, ae);
  if (!aVec)
    ae.push_back(l.b.getAffineDimExpr(nb));
  ae.push_back(k);
  batchExprs(l, bt, std::max<int64_t>(rb - 2, 0), nb, rt, be);
  be.push_back(k);
  if (!bVec)
    be.push_back(l.b.getAffineDimExpr(r - 1));
  // Result sizes: the batch dims broadcast (ONNX multidirectional), then
  // the matrix dims.
  int64_t na = std::max<int64_t>(ra - 2, 0), nbb = std::max<int64_t>(rb - 2, 0);
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < nb; ++d) {
    SmallVector<std::pair<Value, int64_t>> dims;
    if (int64_t ia = d - (nb - na); ia >= 0)
      dims.push_back({a, ia});
    if (int64_t ib = d - (nb - nbb); ib >= 0)
      dims.push_back({bm, ib});
    sizes.push_back(rt.isDynamicDim(d)
                        ? common::broadcastSize(l.b, l.b.getLoc(), dims)
                        : l.idx(rt.getDimSize(d)));
  }
  if (!aVec)
    sizes.push_back(l.dim(a, ra - 2));
  if (!bVec)
    sizes.push_back(l.dim(bm, rb - 1));
  // The contraction dims must agree (a cf.assert unless provable): else the
  // loop over A's reads B out of bounds.
  common::checkEqualDim(l.b, l.b.getLoc(), bm, bVec ? 0 : rb - 2,
                        l.dim(a, ra - 1));
  // Batch dims that may be 1 while the result's is not: broadcast at run
  // time (the matrix dims, -1, are not broadcast).
  auto batchOutDims = [&](int64_t rank, int64_t n) {
    SmallVector<int64_t> o(rank, -1);
    for (int64_t i = 0; i < n; ++i)
      o[i] = nb - n + i;
    return o;
  };
  a = common::broadcastDimsAtRunTime(l.b, l.b.getLoc(), a, batchOutDims(ra, na),
                                     rt.getShape(), sizes);
  bm = common::broadcastDimsAtRunTime(
      l.b, l.b.getLoc(), bm, batchOutDims(rb, nbb), rt.getShape(), sizes);
  MLIRContext *ctx = l.b.getContext();
  return l.done(contract(
      l, rt, l.sizesOf(rt, sizes), {a, bm},
      {AffineMap::get(r + 1, 0, ae, ctx), AffineMap::get(r + 1, 0, be, ctx)},
      r + 1));
}

/// Gemm: Y = alpha * A' B' + beta * C (A', B' transposed where asked, C
/// broadcast to [M, N]); the product accumulates in accType. Integer Gemms
/// with alpha or beta other than 1 scale in f64 and truncate (as numpy's
/// astype of the reference).
LogicalResult lower(onnx::GemmOp op, Lowerer &l) {
  Value a = l.in[0], bm = l.in[1], c = l.in[2];
  RankedTensorType rt = l.resultType();
  if (l.rankOf(a) != 2 || l.rankOf(bm) != 2 || rt.getRank() != 2)
    return l.fail("A, B or Y not of rank 2");
  bool ta = op.getTransA() != 0, tb = op.getTransB() != 0;
  MLIRContext *ctx = l.b.getContext();
  AffineExpr m = l.b.getAffineDimExpr(0), n = l.b.getAffineDimExpr(1),
             k = l.b.getAffineDimExpr(2);
  AffineMap am =
      AffineMap::get(3, 0, ta ? ArrayRef{k, m} : ArrayRef{m, k}, ctx);
  AffineMap bmap =
      AffineMap::get(3, 0, tb ? ArrayRef{n, k} : ArrayRef{k, n}, ctx);
  SmallVector<OpFoldResult> sizes{l.dim(a, ta ? 1 : 0), l.dim(bm, tb ? 0 : 1)};
  common::checkEqualDim(l.b, l.b.getLoc(), bm, tb ? 1 : 0,
                        l.dim(a, ta ? 0 : 1));
  Value ab =
      contract(l, rt, l.sizesOf(rt, sizes), {a, bm}, {am, bmap}, 3, true);
  double alpha = op.getAlpha().convertToDouble(),
         beta = op.getBeta().convertToDouble();
  Type e = rt.getElementType(), acc = accType(e);
  bool f = isFloat(acc);
  Type sc = f ? acc : l.b.getF64Type(); // the type alpha and beta scale in
  bool scaled = alpha != 1.0 || (c && beta != 1.0);
  SmallVector<Value> ins{ab};
  if (c)
    ins.push_back(c);
  return l.done(
      l.elementwise(rt, ins, [&](ImplicitLocOpBuilder &b, ValueRange v) {
        if (!f && !scaled) // integers: exact
          return convert(b, c ? addOf(b, v[0], v[1]) : v[0], e);
        Value y = convert(b, v[0], sc);
        if (alpha != 1.0)
          y = arith::MulFOp::create(b, scalar(b, sc, alpha), y);
        if (c) {
          Value cv = convert(b, v[1], sc);
          if (beta != 1.0)
            cv = arith::MulFOp::create(b, scalar(b, sc, beta), cv);
          y = arith::AddFOp::create(b, y, cv);
        }
        return convert(b, y, e);
      }));
}

/// Conv over any number of spatial dims and any group: X zero-padded
/// (explicit pads, or the SAME_UPPER / SAME_LOWER pads computed from the
/// sizes, at run time when they are dynamic), then one contraction over the
/// loops (n, m, o1..on | c, k1..kn), accumulated in accType:
///   Y[n, m, o] += Xp[n, (m floordiv M/G) * C/G + c, o * s + k * d] W[m, c, k]
/// and the bias added after. group = 1 is the dense conv, group = channels
/// the depthwise one (C/G = 1). W must have a static shape.
LogicalResult lower(onnx::ConvOp op, Lowerer &l) {
  Value x = l.in[0], w = l.in[1], bias = l.in[2];
  RankedTensorType xt = l.typeOf(x), wt = l.typeOf(w), rt = l.resultType();
  int64_t n = xt.getRank() - 2, g = op.getGroup();
  if (!rt || n < 1 || wt.getRank() != n + 2)
    return l.fail("X and W must be [N, C, D...] and [M, C/group, k...]");
  if (!wt.hasStaticShape())
    return l.fail("W (the kernel) has a dynamic shape");
  int64_t m = wt.getDimSize(0), cg = wt.getDimSize(1), mg = m / g;
  auto ints = [&](std::optional<ArrayRef<int64_t>> a, int64_t size,
                  int64_t dflt) {
    return a ? SmallVector<int64_t>(*a) : SmallVector<int64_t>(size, dflt);
  };
  SmallVector<int64_t> strides = ints(op.getStrides(), n, 1),
                       dilations = ints(op.getDilations(), n, 1),
                       pads = ints(op.getPads(), 2 * n, 0);
  StringRef autoPad = op.getAutoPad();
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  ImplicitLocOpBuilder &b = l.b;
  SmallVector<OpFoldResult> lo(n + 2, l.idx(0)), hi(n + 2, l.idx(0));
  SmallVector<OpFoldResult> psizes{l.dim(x, 0), l.dim(x, 1)};
  SmallVector<OpFoldResult> osizes{l.dim(x, 0), l.idx(m)};
  bool padded = false;
  for (int64_t i = 0; i < n; ++i) {
    OpFoldResult d = l.dim(x, 2 + i);
    int64_t s = strides[i],
            span = (wt.getDimSize(2 + i) - 1) * dilations[i] + 1;
    if (same) {
      OpFoldResult o = l.ceilDiv(d, l.idx(s));
      OpFoldResult total = l.max(
          l.idx(0),
          l.sub(l.add(l.mul(l.sub(o, l.idx(1)), l.idx(s)), l.idx(span)), d));
      OpFoldResult half = l.divTrunc(total, l.idx(2));
      bool upper = autoPad == "SAME_UPPER";
      lo[2 + i] = upper ? half : l.sub(total, half);
      hi[2 + i] = upper ? l.sub(total, half) : half;
    } else if (autoPad != "VALID") {
      lo[2 + i] = l.idx(pads[i]);
      hi[2 + i] = l.idx(pads[n + i]);
    }
    padded |=
        !isConstantIntValue(lo[2 + i], 0) || !isConstantIntValue(hi[2 + i], 0);
    OpFoldResult p = l.add(l.add(d, lo[2 + i]), hi[2 + i]);
    psizes.push_back(p);
    osizes.push_back(
        l.add(l.divTrunc(l.sub(p, l.idx(span)), l.idx(s)), l.idx(1)));
  }
  Type e = rt.getElementType();
  if (padded) { // zeros with X inserted at the low pads
    SmallVector<int64_t> shape;
    for (OpFoldResult p : psizes)
      shape.push_back(getConstantIntValue(p).value_or(ShapedType::kDynamic));
    auto pt = RankedTensorType::get(shape, e);
    Value zeros = l.filled(pt, psizes, scalarAttr(b, e, 0));
    SmallVector<OpFoldResult> ones(n + 2, l.idx(1));
    x = tensor::InsertSliceOp::create(b, x, zeros, lo, l.dims(x), ones);
  }
  MLIRContext *ctx = b.getContext();
  int64_t loops = 2 * n + 3;
  auto d = [&](int64_t i) { return b.getAffineDimExpr(i); };
  AffineExpr c = d(n + 2);
  SmallVector<AffineExpr> xe{d(0), g == 1 ? c : d(1).floorDiv(mg) * cg + c};
  SmallVector<AffineExpr> we{d(1), c};
  for (int64_t i = 0; i < n; ++i) {
    xe.push_back(d(2 + i) * strides[i] + d(n + 3 + i) * dilations[i]);
    we.push_back(d(n + 3 + i));
  }
  Value y = contract(
      l, rt, l.sizesOf(rt, osizes), {x, w},
      {AffineMap::get(loops, 0, xe, ctx), AffineMap::get(loops, 0, we, ctx)},
      loops, /*keepAcc=*/bias != nullptr);
  if (!bias)
    return l.done(y);
  int64_t r = rt.getRank();
  Type acc = accType(e);
  return l.done(l.generic(
      rt, l.sizesOf(rt, osizes), {y, bias},
      {b.getMultiDimIdentityMap(r), AffineMap::get(r, 0, {d(1)}, ctx)},
      [&](ImplicitLocOpBuilder &ib, ValueRange a) {
        return convert(
            ib, arith::AddFOp::create(ib, a[0], convert(ib, a[1], acc)), e);
      }));
}

namespace {

/// An einsum equation without ellipsis: one term per input, the output term.
struct Einsum {
  SmallVector<std::string> terms;
  std::string output;
};

/// An ellipsis stands for the leading dims a term's operand has beyond its
/// labels; they get labels of their own (unused characters), aligned from
/// the right across the operands. A label repeated in one term reads the
/// operand's diagonal.
FailureOr<Einsum> parseEinsum(StringRef equation, ArrayRef<int64_t> ranks,
                              std::string &why) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq.push_back(c);
  Einsum e;
  size_t arrow = eq.find("->");
  SmallVector<StringRef> parts;
  StringRef(eq).substr(0, arrow).split(parts, ',');
  if (parts.size() != ranks.size())
    return why = "einsum terms do not match the inputs", failure();
  std::string spare; // characters no term uses, for the ellipsis dims
  for (char c = '0'; c <= '9'; ++c)
    if (eq.find(c) == std::string::npos)
      spare.push_back(c);
  SmallVector<int64_t> nEll;
  int64_t ell = 0;
  for (auto [p, r] : llvm::zip(parts, ranks)) {
    size_t at = p.find("...");
    int64_t n = at == StringRef::npos ? 0 : r - ((int64_t)p.size() - 3);
    if (n < 0 || (at == StringRef::npos && (int64_t)p.size() != r))
      return why = "einsum term of another rank than its operand", failure();
    nEll.push_back(n);
    ell = std::max(ell, n);
  }
  if (ell > (int64_t)spare.size())
    return why = "einsum ellipsis of too many dims", failure();
  std::string ellLabels = spare.substr(0, ell);
  auto expand = [&](StringRef p, int64_t n) {
    size_t at = p.find("...");
    if (at == StringRef::npos)
      return p.str();
    return (p.substr(0, at) + StringRef(ellLabels).take_back(n) +
            p.substr(at + 3))
        .str();
  };
  std::map<char, int> count;
  for (auto [p, n] : llvm::zip(parts, nEll)) {
    e.terms.push_back(expand(p, n));
    for (char c : e.terms.back())
      ++count[c];
  }
  if (arrow != std::string::npos) {
    e.output = expand(StringRef(eq).substr(arrow + 2), ell);
  } else { // implicit form: the ellipsis, then labels seen once, sorted
    e.output = ellLabels;
    for (auto [c, n] : count)
      if (n == 1 && ellLabels.find(c) == std::string::npos)
        e.output.push_back(c);
  }
  for (char c : e.output)
    if (!count.count(c))
      return why = "einsum output label not in any input", failure();
  return e;
}

} // namespace

LogicalResult lower(onnx::EinsumOp op, Lowerer &l) {
  std::string why;
  SmallVector<int64_t> ranks;
  for (Value v : l.in)
    ranks.push_back(l.rankOf(v));
  FailureOr<Einsum> e = parseEinsum(op.getEquation(), ranks, why);
  if (failed(e))
    return l.fail(why);
  // Loops: the output labels in order, then the summed labels.
  std::string loops = e->output;
  for (const std::string &t : e->terms)
    for (char c : t)
      if (loops.find(c) == std::string::npos)
        loops.push_back(c);
  MLIRContext *ctx = l.b.getContext();
  SmallVector<AffineMap> maps;
  for (const std::string &t : e->terms) {
    SmallVector<AffineExpr> exprs;
    for (char c : t)
      exprs.push_back(l.b.getAffineDimExpr(loops.find(c)));
    maps.push_back(AffineMap::get(loops.size(), 0, exprs, ctx));
  }
  // A label's operands must agree on its size (no broadcasting of 1s).
  std::map<char, int64_t> known;
  for (auto [t, v] : llvm::zip(e->terms, l.in))
    for (auto [p, c] : llvm::enumerate(t)) {
      int64_t n = l.typeOf(v).getDimSize(p);
      if (n == ShapedType::kDynamic)
        continue;
      auto [it, fresh] = known.insert({c, n});
      if (!fresh && it->second != n)
        return l.fail("einsum operands of different sizes for one label "
                      "(broadcasting)");
    }
  // Dims of one label that are not both static are checked at run time
  // (onnxruntime fails the run): different sizes would read past the
  // smaller operand.
  std::map<char, std::pair<Value, int64_t>> first;
  std::string where = " in " + describeOp(op->getLoc()) + " (Einsum)";
  for (auto [t, v] : llvm::zip(e->terms, l.in))
    for (auto [p, c] : llvm::enumerate(t)) {
      auto [it, fresh] = first.insert({c, {v, (int64_t)p}});
      if (fresh)
        continue;
      auto [v0, p0] = it->second;
      if (!l.typeOf(v).isDynamicDim(p) && !l.typeOf(v0).isDynamicDim(p0))
        continue;
      cf::AssertOp::create(
          l.b,
          arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq,
                                l.val(l.dim(v0, p0)), l.val(l.dim(v, p))),
          "gatec: Einsum operands of different sizes for label '" +
              std::string(1, c) + "'" + where);
    }
  SmallVector<OpFoldResult> sizes;
  for (char c : e->output)
    for (auto [t, v] : llvm::zip(e->terms, l.in))
      if (size_t p = t.find(c); p != std::string::npos) {
        sizes.push_back(l.dim(v, p));
        break;
      }
  RankedTensorType rt = l.resultType();
  SmallVector<Value> ins(l.in);
  return l.done(contract(l, rt, l.sizesOf(rt, sizes), ins, maps, loops.size()));
}

} // namespace gatec::conversion::onnx_to_linalg
