//===- Attention.cpp - RotaryEmbedding, Attention -------------------------===//
//
// The attention ops that raising leaves as onnx ops: RotaryEmbedding (an
// element-wise generic over the input) and the ONNX Attention op (scores,
// masks and softmax in f32, then the weighted sum of the values).
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "passes/common/Broadcast.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include <cmath>

namespace gatec::conversion::onnx_to_linalg {

/// RotaryEmbedding (opset 23): an element-wise generic over X ([B, H, S, D],
/// or [B, S, H * D] with num_heads). Element d < rotary_dim of a head pairs
/// with d +- rotary_dim/2 (halves) or d ^ 1 (interleaved), both rotated by
/// the angle of pair j: y = cos_j x_d -+ sin_j x_partner (minus for the
/// first of the pair); cos/sin are cache[position_ids[b, s], j], or
/// cache[b, s, j] without position_ids; d >= rotary_dim is copied. In f32
/// for narrower floats.
LogicalResult lower(onnx::RotaryEmbeddingOp op, Lowerer &l) {
  Value x = l.in[0], cosC = l.in[1], sinC = l.in[2], pos = l.in[3];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank();
  if (r != 3 && r != 4)
    return l.fail("an input of rank other than 3 or 4");
  int64_t heads = op.getNumHeads() ? (int64_t)*op.getNumHeads() : 0;
  if (r == 3 && heads <= 0)
    return l.fail("a 3-D input without num_heads");
  if (pos ? l.rankOf(pos) != 2 || l.rankOf(cosC) != 2 || l.rankOf(sinC) != 2
          : l.rankOf(cosC) != 3 || l.rankOf(sinC) != 3)
    return l.fail("caches or position_ids of unexpected ranks");
  ImplicitLocOpBuilder &b = l.b;
  using P = arith::CmpIPredicate;
  Value D = r == 4
                ? l.val(l.dim(x, 3))
                : arith::DivUIOp::create(b, l.val(l.dim(x, 2)), cidx(b, heads));
  int64_t rdim = (int64_t)op.getRotaryEmbeddingDim();
  Value rd = rdim > 0 ? cidx(b, rdim) : D;
  Value half = arith::DivUIOp::create(b, rd, cidx(b, 2));
  bool inter = op.getInterleaved() != 0;
  Type e = rt.getElementType(), acc = accType(e);
  // What the body reads must be in bounds (onnxruntime checks the same and
  // fails the run): position_ids of x's [batch, sequence] with values in
  // [0, cache rows), or caches of x's [batch, sequence]; cache rows of at
  // least rotary_dim / 2. Checked at run time unless provable.
  std::string where = " in " + describeOp(op->getLoc()) + " (RotaryEmbedding)";
  auto same = [&](Value t, int64_t i, OpFoldResult size, Value &ok) {
    if (common::provablySameSize(t, i, size))
      return;
    Value eq = arith::CmpIOp::create(b, P::eq, l.val(l.dim(t, i)), l.val(size));
    ok = ok ? (Value)arith::AndIOp::create(b, ok, eq) : eq;
  };
  Value shapeOk, rowsOk;
  OpFoldResult B = l.dim(x, 0), S = l.dim(x, r == 4 ? 2 : 1);
  if (pos) {
    same(pos, 0, B, shapeOk);
    same(pos, 1, S, shapeOk);
  } else {
    for (Value c : {cosC, sinC}) {
      same(c, 0, B, shapeOk);
      same(c, 1, S, shapeOk);
    }
  }
  if (shapeOk)
    cf::AssertOp::create(b, shapeOk,
                         (pos ? "gatec: position_ids of another shape than "
                                "the input's [batch, sequence]"
                              : "gatec: cos/sin caches of another shape than "
                                "the input's [batch, sequence]") +
                             where);
  for (Value c : {cosC, sinC}) {
    OpFoldResult w = l.dim(c, l.rankOf(c) - 1);
    int64_t xd = l.typeOf(x).getDimSize(r - 1);
    std::optional<int64_t> ch;
    if (rdim > 0)
      ch = rdim / 2;
    else if (!ShapedType::isDynamic(xd))
      ch = (r == 4 ? xd : xd / heads) / 2;
    auto cw = getConstantIntValue(w);
    if (cw && ch) {
      if (*cw < *ch)
        return l.fail("cos/sin caches narrower than rotary_dim / 2");
      continue;
    }
    Value wide = arith::CmpIOp::create(b, P::uge, l.val(w), half);
    rowsOk = rowsOk ? (Value)arith::AndIOp::create(b, rowsOk, wide) : wide;
  }
  if (rowsOk)
    cf::AssertOp::create(b, rowsOk,
                         "gatec: cos/sin caches narrower than rotary_dim / 2" +
                             where);
  Value rows; // of the caches, read at the position ids
  if (pos) {
    rows =
        arith::MinUIOp::create(b, l.val(l.dim(cosC, 0)), l.val(l.dim(sinC, 0)));
    std::string message =
        "gatec: a position id out of range of the cos/sin caches" + where;
    l.checkIndexedDim(rows, pos, message);
    l.checkAll(
        pos,
        [&](ImplicitLocOpBuilder &ib, Value p) -> Value {
          Value v = arith::IndexCastOp::create(ib, ib.getIndexType(), p);
          return arith::CmpIOp::create(ib, P::ult, v, rows); // and >= 0
        },
        message, /*dataCheck=*/true);
  }
  return l.done(
      l.elementwise(rt, {x}, [&](ImplicitLocOpBuilder &ib, ValueRange a) {
        SmallVector<Value> at;
        for (int64_t i = 0; i < r; ++i)
          at.push_back(linalg::IndexOp::create(ib, i));
        Value bi = at[0], si = at[r == 4 ? 2 : 1], c = at[r - 1];
        // d within the head; the channel of its head's element 0
        Value d = r == 4 ? c : arith::RemUIOp::create(ib, c, D);
        Value base = arith::SubIOp::create(ib, c, d);
        Value rot = arith::CmpIOp::create(ib, P::ult, d, rd);
        Value first, j, partner;
        if (inter) {
          Value odd = arith::AndIOp::create(ib, d, cidx(ib, 1));
          first = arith::CmpIOp::create(ib, P::eq, odd, cidx(ib, 0));
          j = arith::DivUIOp::create(ib, d, cidx(ib, 2));
          partner = arith::XOrIOp::create(ib, d, cidx(ib, 1));
        } else {
          first = arith::CmpIOp::create(ib, P::ult, d, half);
          j = arith::SelectOp::create(ib, first, d,
                                      arith::SubIOp::create(ib, d, half));
          partner = arith::SelectOp::create(
              ib, first, arith::AddIOp::create(ib, d, half), j);
        }
        // Outside the rotated part: any in-bounds index, the value unused.
        j = arith::SelectOp::create(ib, rot, j, cidx(ib, 0));
        partner = arith::SelectOp::create(ib, rot, partner, d);
        SmallVector<Value> pat(at);
        pat[r - 1] = arith::AddIOp::create(ib, base, partner);
        Value xp = tensor::ExtractOp::create(ib, x, pat);
        auto cache = [&](Value t) -> Value {
          if (pos) {
            // In [0, rows - 1] (as unsigned: negative ones are past it).
            Value p = arith::MinUIOp::create(
                ib,
                arith::IndexCastOp::create(
                    ib, ib.getIndexType(),
                    tensor::ExtractOp::create(ib, pos, ValueRange{bi, si})),
                arith::SubIOp::create(ib, rows, cidx(ib, 1)));
            return tensor::ExtractOp::create(ib, t, ValueRange{p, j});
          }
          return tensor::ExtractOp::create(ib, t, ValueRange{bi, si, j});
        };
        Value cv = convert(ib, cache(cosC), acc);
        Value sv = convert(ib, cache(sinC), acc);
        Value xv = convert(ib, a[0], acc);
        Value sx = arith::MulFOp::create(ib, sv, convert(ib, xp, acc));
        Value cx = arith::MulFOp::create(ib, cv, xv);
        Value y = arith::SelectOp::create(ib, first,
                                          arith::SubFOp::create(ib, cx, sx),
                                          arith::AddFOp::create(ib, cx, sx));
        return convert(ib, arith::SelectOp::create(ib, rot, y, xv), e);
      }));
}

namespace {

/// [B, S, H * D] as [B, H, S, D] (the heads of a 3-D Attention input).
Value splitHeads(Lowerer &l, Value x, int64_t heads) {
  RankedTensorType t = l.typeOf(x);
  int64_t hid = t.getDimSize(2);
  int64_t d = hid == ShapedType::kDynamic ? ShapedType::kDynamic : hid / heads;
  auto t4 = RankedTensorType::get({t.getDimSize(0), t.getDimSize(1), heads, d},
                                  t.getElementType());
  OpFoldResult dd = l.divTrunc(l.dim(x, 2), l.idx(heads));
  Value e = tensor::ExpandShapeOp::create(
      l.b, t4, x, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}},
      SmallVector<OpFoldResult>{l.dim(x, 0), l.dim(x, 1), l.idx(heads), dd});
  SmallVector<OpFoldResult> sizes{l.dim(e, 0), l.idx(heads), l.dim(e, 1), dd};
  auto tt = RankedTensorType::get({t.getDimSize(0), heads, t.getDimSize(1), d},
                                  t.getElementType());
  return linalg::TransposeOp::create(l.b, e, l.empty(tt, sizes),
                                     ArrayRef<int64_t>{0, 2, 1, 3})
      .getResult()[0];
}

} // namespace

/// ONNX Attention-23/24/25 in the forms raising leaves (KV cache, softcap,
/// qk_matmul_output, nonpad_kv_seqlen, windows, ...), as the ONNX reference
/// computes it: K, V = concat(past, new) (the present outputs); scores =
/// scale * Q K^T in f32 (or f64), query head h reading KV head h / (Hq /
/// Hkv); softcap; + the mask (bool: -inf where false; padded with -inf where
/// shorter than the keys) and -inf where key j is hidden from query i at
/// the absolute position p = offset + i: offset is the past length with a
/// past_key, nonpad_kv_seqlen[b] - Sq with nonpad_kv_seqlen (an external
/// cache; negative makes the first rows fully masked), else 0; hidden are
/// j > p (is_causal), j < p - left_window_size, j > p + right_window_size
/// (each when >= 0) and j >= nonpad_kv_seqlen[b]; softmax over the keys
/// (a fully masked row gives zeros); Y = P V.
LogicalResult lower(onnx::AttentionOp op, Lowerer &l) {
  Value q = l.in[0], k = l.in[1], v = l.in[2], mask = l.in[3];
  Value pastK = l.in[4], pastV = l.in[5], nonpad = l.in[6];
  ImplicitLocOpBuilder &b = l.b;
  bool packed = l.rankOf(q) == 3;
  if (packed != (l.rankOf(k) == 3) || packed != (l.rankOf(v) == 3) ||
      (!packed && l.rankOf(q) != 4))
    return l.fail("Q, K, V not all 3-D or all 4-D");
  if (packed) {
    if (!op.getQNumHeads() || !op.getKvNumHeads() || *op.getQNumHeads() <= 0 ||
        *op.getKvNumHeads() <= 0)
      return l.fail("3-D inputs without q_num_heads and kv_num_heads");
    q = splitHeads(l, q, *op.getQNumHeads());
    k = splitHeads(l, k, *op.getKvNumHeads());
    v = splitHeads(l, v, *op.getKvNumHeads());
  }
  if (pastK)
    k = tensor::ConcatOp::create(b, 2, ValueRange{pastK, k});
  if (pastV)
    v = tensor::ConcatOp::create(b, 2, ValueRange{pastV, v});
  RankedTensorType qt = l.typeOf(q), kt = l.typeOf(k), vt = l.typeOf(v);
  int64_t hq = qt.getDimSize(1), hkv = kt.getDimSize(1);
  if (hq == ShapedType::kDynamic || hkv == ShapedType::kDynamic ||
      vt.getDimSize(1) != hkv || hq % hkv)
    return l.fail("head counts unknown or not a multiple of the KV heads'");
  int64_t reps = hq / hkv;
  double scale;
  if (op.getScale()) {
    scale = op.getScale()->convertToDouble();
  } else {
    if (qt.isDynamicDim(3))
      return l.fail("no scale and a head size unknown at compile time");
    scale = 1.0 / std::sqrt((double)qt.getDimSize(3));
  }
  Type e = qt.getElementType(), acc = accType(e);
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
  // scores [B, Hq, Sq, Skv] over the loops (b, h, i, j, d)
  OpFoldResult skv = l.dim(k, 2);
  SmallVector<OpFoldResult> ssizes{l.dim(q, 0), l.idx(hq), l.dim(q, 2), skv};
  auto st = RankedTensorType::get(
      {qt.getDimSize(0), hq, qt.getDimSize(2), kt.getDimSize(2)}, acc);
  Value scores = contract(
      l, st, l.sizesOf(st, ssizes), {q, k},
      {AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx),
       AffineMap::get(5, 0, {d(0), d(1).floorDiv(reps), d(3), d(4)}, ctx)},
      5, true);
  double softcap = op.getSoftcap().convertToDouble();
  int64_t mode = (int64_t)op.getQkMatmulOutputMode();
  // The absolute position of query 0 (the causal and window diagonals move
  // right by it): the past length, or per batch nonpad_kv_seqlen - Sq.
  Value pastLen = l.val(pastK ? l.dim(pastK, 2) : l.idx(0));
  Value qLen = l.val(l.dim(q, 2));
  int64_t left = (int64_t)op.getLeftWindowSize();
  int64_t right = (int64_t)op.getRightWindowSize();
  if (nonpad) {
    // nonpad_kv_seqlen is read at [b]: it must have the batch's size.
    if (l.rankOf(nonpad) != 1)
      return l.fail("nonpad_kv_seqlen of rank other than 1");
    OpFoldResult nb = l.dim(nonpad, 0), qb = l.dim(q, 0);
    auto cn = getConstantIntValue(nb), cq = getConstantIntValue(qb);
    if (cn && cq) {
      if (*cn != *cq)
        return l.fail("nonpad_kv_seqlen of another size than the batch");
    } else {
      Value eq = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, l.val(nb),
                                       l.val(qb));
      cf::AssertOp::create(
          b, eq,
          "gatec: nonpad_kv_seqlen of another size than the batch in " +
              describeOp(op->getLoc()) + " (Attention)");
    }
    // Each valid key count in [0, total keys] (onnxruntime fails the run):
    // a larger one would let query rows attend past the keys' end.
    if (!isa<IntegerType>(l.typeOf(nonpad).getElementType()))
      return l.fail("nonpad_kv_seqlen that is not an integer tensor");
    Value total = arith::IndexCastOp::create(
        b, l.typeOf(nonpad).getElementType(), l.val(skv));
    l.checkAll(
        nonpad,
        [&](ImplicitLocOpBuilder &ib, Value n) -> Value {
          Value zero =
              arith::ConstantOp::create(ib, ib.getIntegerAttr(n.getType(), 0));
          return arith::AndIOp::create(
              ib, arith::CmpIOp::create(ib, arith::CmpIPredicate::sge, n, zero),
              arith::CmpIOp::create(ib, arith::CmpIPredicate::sle, n, total));
        },
        "gatec: nonpad_kv_seqlen outside [0, the number of keys] in " +
            describeOp(op->getLoc()) + " (Attention)",
        /*dataCheck=*/true); // a key count: it only masks, never indexes
  }
  Value maskLen = mask ? l.val(l.dim(mask, l.rankOf(mask) - 1)) : Value();
  bool causal = op.getIsCausal() != 0;
  auto inf = [&](ImplicitLocOpBuilder &ib, bool negative) {
    return arith::ConstantOp::create(
        ib, ib.getFloatAttr(
                acc, APFloat::getInf(cast<FloatType>(acc).getFloatSemantics(),
                                     negative)));
  };
  // scale, then softcap (qk_matmul_output modes 0 and 1 return this)
  Value capped = l.elementwise(
      st, {scores}, [&](ImplicitLocOpBuilder &ib, ValueRange a) -> Value {
        Value x = arith::MulFOp::create(ib, a[0], scalar(ib, acc, scale));
        if (!(softcap > 0))
          return x;
        Value c = scalar(ib, acc, softcap);
        Value t = math::TanhOp::create(ib, arith::DivFOp::create(ib, x, c));
        return arith::MulFOp::create(ib, t, c);
      });
  Value biased =
      l.elementwise(st, {capped}, [&](ImplicitLocOpBuilder &ib, ValueRange a) {
        Value sc = a[0];
        SmallVector<Value> at;
        for (int64_t i = 0; i < 4; ++i)
          at.push_back(linalg::IndexOp::create(ib, i));
        Value ninf = inf(ib, true), zero = scalar(ib, acc, 0);
        Value bias = zero;
        if (mask) {
          RankedTensorType mt = l.typeOf(mask);
          int64_t mr = mt.getRank();
          SmallVector<Value> mi;
          for (int64_t m = 0; m < mr; ++m) {
            int64_t dd = 4 - mr + m;
            mi.push_back(mt.getDimSize(m) == 1 ? cidx(ib, 0) : at[dd]);
          }
          Value in = arith::CmpIOp::create(ib, arith::CmpIPredicate::ult, at[3],
                                           maskLen);
          mi.back() = arith::SelectOp::create(ib, in, at[3], cidx(ib, 0));
          Value mv = tensor::ExtractOp::create(ib, mask, mi);
          Value mb = mt.getElementType().isInteger(1)
                         ? (Value)arith::SelectOp::create(ib, mv, zero, ninf)
                         : convert(ib, mv, acc);
          bias = arith::SelectOp::create(ib, in, mb, ninf);
        }
        using P = arith::CmpIPredicate;
        Value n, offset = pastLen;
        if (nonpad) {
          n = arith::IndexCastOp::create(
              ib, ib.getIndexType(),
              tensor::ExtractOp::create(ib, nonpad, ValueRange{at[0]}));
          if (!pastK)
            offset = arith::SubIOp::create(ib, n, qLen);
        }
        // Signed: p is negative for the leading rows when offset < 0.
        Value p = arith::AddIOp::create(ib, at[2], offset), j = at[3];
        Value hidden;
        auto hide = [&](Value h) {
          hidden = hidden ? (Value)arith::OrIOp::create(ib, hidden, h) : h;
        };
        if (causal)
          hide(arith::CmpIOp::create(ib, P::sgt, j, p));
        if (left >= 0)
          hide(arith::CmpIOp::create(
              ib, P::slt, j, arith::SubIOp::create(ib, p, cidx(ib, left))));
        if (right >= 0)
          hide(arith::CmpIOp::create(
              ib, P::sgt, j, arith::AddIOp::create(ib, p, cidx(ib, right))));
        if (nonpad)
          hide(arith::CmpIOp::create(ib, P::sge, j, n));
        if (hidden)
          bias = arith::SelectOp::create(
              ib, hidden, arith::AddFOp::create(ib, bias, ninf), bias);
        return arith::AddFOp::create(ib, sc, bias);
      });
  // softmax over the keys
  Value mx = l.reduce(
      biased, {3}, acc, extremeAttr(b, acc, true), {},
      [&](ImplicitLocOpBuilder &ib, Value a, Value x, ValueRange) -> Value {
        return arith::MaximumFOp::create(ib, a, x);
      });
  Value sum = l.reduce(biased, {3}, acc, scalarAttr(b, acc, 0), {mx},
                       [&](ImplicitLocOpBuilder &ib, Value a, Value x,
                           ValueRange rows) -> Value {
                         Value ex = math::ExpOp::create(
                             ib, arith::SubFOp::create(ib, x, rows[0]));
                         return arith::AddFOp::create(ib, a, ex);
                       });
  AffineMap row = l.dropMap(4, {3});
  Value probs = l.generic(
      st, l.sizesOf(st, ssizes), {biased, mx, sum},
      {b.getMultiDimIdentityMap(4), row, row},
      [&](ImplicitLocOpBuilder &ib, ValueRange a) -> Value {
        Value ex =
            math::ExpOp::create(ib, arith::SubFOp::create(ib, a[0], a[1]));
        // A fully masked row (max -inf) attends to nothing: zeros, as
        // onnxruntime (the reference's 0/0 would give NaN).
        Value none = arith::CmpFOp::create(ib, arith::CmpFPredicate::OEQ, a[1],
                                           inf(ib, true));
        return arith::SelectOp::create(ib, none, scalar(ib, acc, 0),
                                       arith::DivFOp::create(ib, ex, a[2]));
      });
  // Y [B, Hq, Sq, Dv] over the loops (b, h, i, e, j)
  auto yt = RankedTensorType::get(
      {qt.getDimSize(0), hq, qt.getDimSize(2), vt.getDimSize(3)}, e);
  SmallVector<OpFoldResult> ysizes{l.dim(q, 0), l.idx(hq), l.dim(q, 2),
                                   l.dim(v, 3)};
  Value y = contract(
      l, yt, l.sizesOf(yt, ysizes), {probs, v},
      {AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx),
       AffineMap::get(5, 0, {d(0), d(1).floorDiv(reps), d(4), d(3)}, ctx)},
      5);
  if (packed) { // back to [B, Sq, Hq * Dv]
    auto tt = RankedTensorType::get(
        {qt.getDimSize(0), qt.getDimSize(2), hq, vt.getDimSize(3)}, e);
    SmallVector<OpFoldResult> tsizes{ysizes[0], ysizes[2], ysizes[1],
                                     ysizes[3]};
    y = linalg::TransposeOp::create(b, y, l.empty(tt, tsizes),
                                    ArrayRef<int64_t>{0, 2, 1, 3})
            .getResult()[0];
    y = tensor::CollapseShapeOp::create(
        b, y, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  }
  l.out.push_back(l.castTo(y, l.resultType(0)));
  l.out.push_back(l.resultType(1) ? l.castTo(k, l.resultType(1)) : Value());
  l.out.push_back(l.resultType(2) ? l.castTo(v, l.resultType(2)) : Value());
  if (RankedTensorType ot = l.resultType(3)) {
    Value qk = mode == 2 ? biased : mode == 3 ? probs : capped;
    l.out.push_back(
        l.castTo(l.elementwise(st.clone(ot.getElementType()), {qk},
                               [&](ImplicitLocOpBuilder &ib, ValueRange a) {
                                 return convert(ib, a[0], ot.getElementType());
                               }),
                 ot));
  } else {
    l.out.push_back(Value());
  }
  return success();
}

} // namespace gatec::conversion::onnx_to_linalg
