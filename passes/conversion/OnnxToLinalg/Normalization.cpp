//===- Normalization.cpp - LayerNormalization, RMSNorm --------------------===//
//
// LayerNormalization and RMSNormalization over the trailing dims, in f32 (or
// f64): the mean and the inverse standard deviation (or root mean square) as
// reductions, then one element-wise generic.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

namespace gatec::conversion::onnx_to_linalg {

namespace {

/// Σ (x − center) over `axes` (dropped), squared with `square`, in `acc`;
/// without `center`, of x itself.
Value centeredSum(Lowerer &l, Value x, ArrayRef<int64_t> axes, Type acc,
                  Value center, bool square) {
  SmallVector<Value> rows;
  if (center)
    rows.push_back(center);
  return l.reduce(
      x, axes, acc, scalarAttr(l.b, acc, 0), rows,
      [&](ImplicitLocOpBuilder &b, Value a, Value v, ValueRange m) -> Value {
        Value d = convert(b, v, acc);
        if (!m.empty())
          d = arith::SubFOp::create(b, d, m[0]);
        return arith::AddFOp::create(
            b, a, square ? (Value)arith::MulFOp::create(b, d, d) : d);
      });
}

/// The mean of `x` over `axes` (dropped), in `acc`; `n` is their count.
/// Two passes: m = Σx/n, then m + Σ(x − m)/n. The correction removes the
/// rounding of the first sum where the row's offset is large against its
/// spread: a constant row of 1e20 has mean 1e20 exactly (so x − mean is 0
/// and the row normalises to the bias, as in onnxruntime), where one f32
/// sum of 1024 such values is off by ~1e13 and made the output off by ±1.
Value normMean(Lowerer &l, Value x, ArrayRef<int64_t> axes, Type acc, Value n) {
  auto meanOf = [&](Value shift) {
    Value sum = centeredSum(l, x, axes, acc, shift, /*square=*/false);
    SmallVector<Value> ins{sum};
    if (shift)
      ins.push_back(shift);
    return l.elementwise(l.typeOf(sum), ins,
                         [&](ImplicitLocOpBuilder &b, ValueRange a) -> Value {
                           Value m = arith::DivFOp::create(b, a[0], n);
                           return a.size() > 1
                                      ? (Value)arith::AddFOp::create(b, a[1], m)
                                      : m;
                         });
  };
  return meanOf(meanOf(Value()));
}

/// 1 / sqrt(mean((x - mean)^2) + eps) over `axes`; without `mean`, the
/// root mean square's reciprocal (RMSNormalization).
Value normInvStd(Lowerer &l, Value x, ArrayRef<int64_t> axes, Type acc, Value n,
                 Value mean, double eps) {
  Value ss = centeredSum(l, x, axes, acc, mean, /*square=*/true);
  Value epsV = scalar(l.b, acc, eps);
  return l.elementwise(
      l.typeOf(ss), {ss}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value var = arith::DivFOp::create(b, a[0], n);
        return math::RsqrtOp::create(b, arith::AddFOp::create(b, var, epsV));
      });
}

/// y = (x - mean) * inv * scale + bias, scale and bias broadcast to x.
Value normApply(Lowerer &l, RankedTensorType rt, ArrayRef<int64_t> axes,
                Value x, Value inv, Value scale, Value mean, Value bias) {
  int64_t r = rt.getRank();
  Type e = rt.getElementType(), acc = accType(e);
  AffineMap row = l.dropMap(r, axes);
  SmallVector<OpFoldResult> sizes = l.dims(x);
  SmallVector<Value> ins{x, inv, l.broadcastOperand(scale, rt, sizes)};
  SmallVector<AffineMap> maps{l.b.getMultiDimIdentityMap(r), row,
                              l.broadcastMap(l.typeOf(scale), rt.getShape())};
  if (mean) {
    ins.push_back(mean);
    maps.push_back(row);
  }
  if (bias) {
    ins.push_back(l.broadcastOperand(bias, rt, sizes));
    maps.push_back(l.broadcastMap(l.typeOf(bias), rt.getShape()));
  }
  return l.generic(
      rt, sizes, ins, maps, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value v = convert(b, a[0], acc);
        if (mean)
          v = arith::SubFOp::create(b, v, a[3]);
        v = arith::MulFOp::create(b, arith::MulFOp::create(b, v, a[1]),
                                  convert(b, a[2], acc));
        if (bias)
          v = arith::AddFOp::create(b, v, convert(b, a.back(), acc));
        return convert(b, v, e);
      });
}

/// A normalisation statistic (reduced dims dropped) as the result `i`:
/// the reduced dims back as 1s, its element type; null where unused.
Value normStat(Lowerer &l, unsigned i, Value v, ArrayRef<int64_t> axes) {
  auto t = l.resultType(i);
  if (!t)
    return Value();
  Value c = l.elementwise(l.typeOf(v).clone(t.getElementType()), {v},
                          [&](ImplicitLocOpBuilder &b, ValueRange a) {
                            return convert(b, a[0], t.getElementType());
                          });
  SmallVector<bool> unit(t.getRank(), false);
  for (int64_t a : axes)
    unit[a] = true;
  return l.insertUnitDims(c, t, unit);
}

} // namespace

/// LayerNormalization (Y, and Mean / InvStdDev where used) or, with
/// `rms`, RMSNormalization, over the dims [axis, rank), in f32 (or f64).
LogicalResult lowerNorm(int64_t onnxAxis, double eps, bool rms, Lowerer &l) {
  Value x = l.in[0], scale = l.in[1], bias = rms ? Value() : l.in[2];
  RankedTensorType rt = l.resultType();
  auto axis = normAxis(onnxAxis, rt.getRank());
  if (!axis)
    return l.fail("axis out of range");
  auto axes = llvm::to_vector(llvm::seq<int64_t>(*axis, rt.getRank()));
  Type acc = accType(rt.getElementType());
  Value n = l.countOf(x, axes, acc);
  Value mean = rms ? Value() : normMean(l, x, axes, acc, n);
  Value inv = normInvStd(l, x, axes, acc, n, mean, eps);
  l.out.push_back(normApply(l, rt, axes, x, inv, scale, mean, bias));
  if (!rms && l.op->getNumResults() == 3) {
    l.out.push_back(normStat(l, 1, mean, axes));
    l.out.push_back(normStat(l, 2, inv, axes));
  }
  return success();
}

} // namespace gatec::conversion::onnx_to_linalg
