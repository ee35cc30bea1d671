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

Value applyNormEpilogue(Builder &l, const Shapes &s, const NormEpilogue &e,
                        Value bi, Value hq0, Value rows, Value t0,
                        OpFoldResult n) {
  if (!e.weight)
    return rows;
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
