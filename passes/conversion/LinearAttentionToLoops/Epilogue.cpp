//===- Epilogue.cpp - the gated RMSNorm epilogue of linear attention ------===//
//
// norm_weight / norm_gate of gated.linear_attention (moved there by
// --fuse-linear-attention-epilogue): the rows a step has just written into
// its task's output rows are normalised over Dv, scaled by the weight and
// multiplied by act(gate), in place, while they are still in cache.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/LinearAttentionToLoops/Common.h"

#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/common/Activations.h"

namespace gatec::conversion::linear_attention {

NormEpilogue normEpilogue(Builder &l, const Shapes &s,
                          gated::LinearAttentionOp op, Value bsz, Value len) {
  NormEpilogue e;
  if (!op.getNormWeight())
    return e;
  Location loc = l.loc;
  OpBuilder &b = l.b;
  e.weight = l.toF32(op.getNormWeight());
  e.eps = op.getNormEpsilon()->convertToDouble();
  e.unitOffset = (bool)op.getNormUnitOffset();
  if (!op.getNormGate())
    return e;
  e.act = *op.getNormGateActivation();
  // The gate's rows as [B, T, Hq, Dv] (or [B, Hq, T, Dv]), the output's
  // physical shape. (A tensor.reshape: expand_shape into two dynamic dims
  // crashes MLIR 22's --expand-strided-metadata.)
  Value z = op.getNormGate();
  auto zt = cast<RankedTensorType>(z.getType());
  // One gate row per output row, checked at run time (a gate of one row
  // broadcast over the output's is not this fusion).
  Value zrows = l.index(1);
  for (int64_t i = 0; i + 1 < zt.getRank(); ++i)
    zrows = arith::MulIOp::create(b, loc, zrows, l.dim(z, i));
  Value rows = arith::MulIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bsz, len), l.index(s.hq));
  Value same =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, zrows, rows);
  cf::AssertOp::create(b, loc, same,
                       "gatec: the gate of the gated RMSNorm fused into " +
                           gatec::describeOp(loc) +
                           " does not have one row per output row");
  int64_t B = cast<RankedTensorType>(op.getQuery().getType()).getDimSize(0);
  SmallVector<Value> shape{bsz, l.index(s.hq), len, l.index(s.dv)};
  SmallVector<int64_t> st{B, s.hq, kDyn, s.dv};
  if (s.outBthd) {
    std::swap(shape[1], shape[2]);
    std::swap(st[1], st[2]);
  }
  Value shapeT = tensor::FromElementsOp::create(b, loc, shape);
  e.gate = tensor::ReshapeOp::create(
      b, loc, RankedTensorType::get(st, zt.getElementType()), z, shapeT);
  return e;
}

namespace {
/// The CPU form (products=vector): per row, Σ o² over Dv in vectors of w
/// lanes (one FMA each), one rsqrt, then o · rsqrt · w · act(z) in the same
/// vectors, read and written in place in the task's rows.
Value vectorEpilogue(Builder &l, const Shapes &s, const NormEpilogue &e,
                     Value bi, Value hq0, Value rows, Value t0, int64_t n) {
  Location loc = l.loc;
  OpBuilder &b = l.b;
  int64_t w = 1;
  for (int64_t c : {16, 8, 4, 2})
    if (s.dv % c == 0) {
      w = c;
      break;
    }
  auto vt = VectorType::get({w}, l.f32);
  SmallVector<bool> inb{true};
  Value zero = l.cst(0.0);
  Value zeroV = vector::BroadcastOp::create(b, loc, vt, zero);
  Value invDv = l.cst(1.0 / (double)s.dv), eps = l.cst(e.eps);
  Type gateElt = e.gate
                     ? cast<RankedTensorType>(e.gate.getType()).getElementType()
                     : Type();
  // One scf.for carrying one value (the task's rows or the sum).
  auto forStep = [&](Value lb, Value ub, int64_t step, Value init,
                     llvm::function_ref<Value(Value, Value)> fn) -> Value {
    return l
        .loop(
            lb, ub, {init},
            [&](Value iv, ValueRange it) -> SmallVector<Value> {
              return {fn(iv, it[0])};
            },
            step)
        .getResult(0);
  };
  Value c0 = l.index(0);
  // Rows (g, t0 + i) of the block, i < n, g < G.
  return forStep(c0, l.index(s.group), 1, rows, [&](Value g, Value gRows) {
    return forStep(c0, l.index(n), 1, gRows, [&](Value i, Value cur) {
      Value t = arith::AddIOp::create(b, loc, t0, i);
      auto at = [&](Value d) -> SmallVector<Value> {
        return s.outBthd ? SmallVector<Value>{t, g, d}
                         : SmallVector<Value>{g, t, d};
      };
      // Σ_d o², in w lanes.
      Value acc = forStep(c0, l.index(s.dv), w, zeroV, [&](Value d, Value a) {
        Value v =
            vector::TransferReadOp::create(b, loc, vt, cur, at(d), zero, inb);
        return vector::FMAOp::create(b, loc, v, v, a).getResult();
      });
      Value ss =
          vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, acc);
      Value rms = math::RsqrtOp::create(
          b, loc, math::FmaOp::create(b, loc, ss, invDv, eps));
      Value rmsV = vector::BroadcastOp::create(b, loc, vt, rms);
      Value hq = arith::AddIOp::create(b, loc, hq0, g);
      return forStep(c0, l.index(s.dv), w, cur, [&](Value d, Value dRows) {
        Value v =
            vector::TransferReadOp::create(b, loc, vt, dRows, at(d), zero, inb);
        Value wv = vector::TransferReadOp::create(b, loc, vt, e.weight,
                                                  ValueRange{d}, zero, inb);
        if (e.unitOffset)
          wv = arith::AddFOp::create(
              b, loc, common::floatConstant(b, loc, vt, 1.0), wv);
        Value o = arith::MulFOp::create(
            b, loc, arith::MulFOp::create(b, loc, v, rmsV), wv);
        if (e.gate) {
          SmallVector<Value> gidx = s.outBthd
                                        ? SmallVector<Value>{bi, t, hq, d}
                                        : SmallVector<Value>{bi, hq, t, d};
          auto gvt = VectorType::get({w}, gateElt);
          Value zv = vector::TransferReadOp::create(
              b, loc, gvt, e.gate, gidx,
              arith::ConstantOp::create(b, loc, b.getFloatAttr(gateElt, 0.0)),
              inb);
          if (gateElt != l.f32)
            zv = arith::ExtFOp::create(b, loc, vt, zv);
          o = arith::MulFOp::create(b, loc, o,
                                    common::gateActivation(b, loc, e.act, zv));
        }
        return vector::TransferWriteOp::create(b, loc, o, dRows, at(d), inb)
            .getResult();
      });
    });
  });
}
} // namespace

Value applyNormEpilogue(Builder &l, const Shapes &s, const NormEpilogue &e,
                        Value bi, Value hq0, Value rows, Value t0,
                        OpFoldResult n) {
  if (!e.weight)
    return rows;
  if (!l.linalgProducts)
    if (std::optional<int64_t> c = getConstantIntValue(n))
      return vectorEpilogue(l, s, e, bi, hq0, rows, t0, *c);
  Location loc = l.loc;
  OpBuilder &b = l.b;
  OpFoldResult z = b.getIndexAttr(0), one = b.getIndexAttr(1);
  // rows [G, T', Dv] (or [T', G, Dv]): the step's block of rows.
  SmallVector<OpFoldResult> off{z, t0, z},
      size{b.getIndexAttr(s.group), n, b.getIndexAttr(s.dv)};
  if (s.outBthd) {
    std::swap(off[0], off[1]);
    std::swap(size[0], size[1]);
  }
  SmallVector<OpFoldResult> ones(3, one);
  Value block = tensor::ExtractSliceOp::create(b, loc, rows, off, size, ones);
  auto bt = cast<RankedTensorType>(block.getType());
  SmallVector<Value> dyn;
  SmallVector<int64_t> rowShape;
  for (int64_t i = 0; i < 2; ++i) {
    rowShape.push_back(bt.getDimSize(i));
    if (bt.isDynamicDim(i))
      dyn.push_back(l.dim(block, i));
  }
  // Σ_e o², one per row.
  Value ss = l.fill(l.empty(rowShape, dyn), 0.0);
  ss = l.generic(ss, {block}, {l.dimMap(3, {0, 1, 2}), l.dimMap(3, {0, 1})},
                 {P, P, R}, [&](OpBuilder &nb, ValueRange a) -> Value {
                   return math::FmaOp::create(nb, loc, a[0], a[0], a[1]);
                 });
  SmallVector<Value> ins{ss, e.weight};
  SmallVector<AffineMap> maps{l.dimMap(3, {0, 1}), l.dimMap(3, {2})};
  if (e.gate) {
    // The gate's block: [1, G, n, Dv] (or [1, n, G, Dv]) at (bi, hq0, t0).
    SmallVector<OpFoldResult> goff{bi, hq0, t0, z},
        gsize{one, b.getIndexAttr(s.group), n, b.getIndexAttr(s.dv)};
    if (s.outBthd) {
      std::swap(goff[1], goff[2]);
      std::swap(gsize[1], gsize[2]);
    }
    auto gt = cast<RankedTensorType>(e.gate.getType());
    auto blockType = RankedTensorType::get(bt.getShape(), gt.getElementType());
    Value g =
        tensor::ExtractSliceOp::create(b, loc, blockType, e.gate, goff, gsize,
                                       SmallVector<OpFoldResult>(4, one));
    ins.push_back(g);
    maps.push_back(l.dimMap(3, {0, 1, 2}));
  }
  maps.push_back(l.dimMap(3, {0, 1, 2}));
  Value inv = l.cst(1.0 / (double)s.dv), eps = l.cst(e.eps);
  Value c1 = l.cst(1.0);
  // In place: the block is read through the generic's output argument.
  Value normed = l.generic(
      block, ins, maps, {P, P, P}, [&](OpBuilder &nb, ValueRange a) -> Value {
        Value rms = math::RsqrtOp::create(
            nb, loc, math::FmaOp::create(nb, loc, a[0], inv, eps));
        Value w = e.unitOffset ? add(nb, loc, c1, a[1]) : a[1];
        Value v = mul(nb, loc, mul(nb, loc, a.back(), rms), w);
        if (e.gate) {
          Value g = a[2];
          if (g.getType() != nb.getF32Type())
            g = arith::ExtFOp::create(nb, loc, nb.getF32Type(), g);
          v = mul(nb, loc, v, common::gateActivation(nb, loc, e.act, g));
        }
        return v;
      });
  return tensor::InsertSliceOp::create(b, loc, normed, rows, off, size, ones);
}

} // namespace gatec::conversion::linear_attention
