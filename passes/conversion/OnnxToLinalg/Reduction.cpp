//===- Reduction.cpp - Reduce*, Softmax, CumSum ---------------------------===//
//
// The reductions: ReduceSum / Mean / Max / Min / Prod / L2 over constant axes
// (a linalg.generic with reduction loops) or axes read at run time, Softmax
// and LogSoftmax over one axis, and CumSum.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "dialects/onnx/ConstantValues.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace gatec::conversion::onnx_to_linalg {

namespace {

/// The axes a Reduce* op reduces: its constant `axes` input, or all axes.
/// Empty with noop_with_empty_axes means none.
template <typename OpT>
std::optional<SmallVector<int64_t>> reduceAxes(OpT op, Lowerer &l) {
  int64_t r = l.rankOf(l.in[0]);
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < r; ++i)
    all.push_back(i);
  if (!l.in[1])
    return op.getNoopWithEmptyAxes() ? SmallVector<int64_t>{} : all;
  auto axes = constantAxes(op.getAxes(), r);
  if (!axes && l.typeOf(l.in[1]).getShape() == ArrayRef<int64_t>{0})
    axes = SmallVector<int64_t>{}; // no axes, known from the type
  if (axes && axes->empty() && !op.getNoopWithEmptyAxes())
    return all;
  return axes;
}

/// One step of a Reduce* op: the accumulator combined with an element.
Value reduceStep(Operation *op, ImplicitLocOpBuilder &b, Value acc0, Value v0) {
  if (isa<onnx::ReduceMaxOp>(op))
    return maxOf(b, acc0, v0);
  if (isa<onnx::ReduceMinOp>(op))
    return minOf(b, acc0, v0);
  Type t = acc0.getType();
  bool f = isFloat(t);
  Value acc = toSignless(b, acc0), v = toSignless(b, v0);
  auto add = [&](Value x, Value y) -> Value {
    if (f)
      return arith::AddFOp::create(b, x, y);
    return arith::AddIOp::create(b, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    if (f)
      return arith::MulFOp::create(b, x, y);
    return arith::MulIOp::create(b, x, y);
  };
  Value r = TypeSwitch<Operation *, Value>(op)
                .Case([&](onnx::ReduceProdOp) { return mul(acc, v); })
                .Case([&](onnx::ReduceL2Op) { return add(acc, mul(v, v)); })
                .Default([&](Operation *) { return add(acc, v); });
  return castScalar(b, r, t);
}

/// The final value of a Reduce* op from its accumulator: the mean divides
/// by the count `n` (of the accumulator's type), L2 takes the root. ONNX
/// leaves the mean of no elements undefined (numpy: NaN); gatec gives 0,
/// as onnxruntime does for floats and integers: its callers pass
/// max(count, 1), so the sum 0 is divided by 1 (an integer mean divided by
/// 0 died with SIGFPE, a float one gave NaN).
Value reduceFinish(Operation *op, ImplicitLocOpBuilder &b, Value v, Value n) {
  Type t = v.getType();
  if (isa<onnx::ReduceMeanOp>(op)) {
    if (isFloat(t))
      return arith::DivFOp::create(b, v, n);
    Value q = isUnsignedInt(t) ? (Value)arith::DivUIOp::create(
                                     b, toSignless(b, v), toSignless(b, n))
                               : (Value)arith::DivSIOp::create(b, v, n);
    return castScalar(b, q, t);
  }
  if (isa<onnx::ReduceL2Op>(op))
    return math::SqrtOp::create(b, v);
  return v;
}

TypedAttr reduceInit(Operation *op, Builder &b, Type acc) {
  if (isa<onnx::ReduceMaxOp>(op))
    return extremeAttr(b, acc, true);
  if (isa<onnx::ReduceMinOp>(op))
    return extremeAttr(b, acc, false);
  return scalarAttr(b, acc, isa<onnx::ReduceProdOp>(op) ? 1 : 0);
}

/// A Reduce* op whose axes come at run time. A flag per input dim says
/// whether the axes name it; the result with the reduced dims kept as 1s
/// is a generic over its elements whose body loops over the elements of
/// the reduced dims (extent: the input dim where flagged, 1 elsewhere, so
/// the input index is the output index plus the loop's). Without keepdims
/// that result is reshaped to the kept dims, whose number the result type
/// gives.
template <typename OpT> LogicalResult lowerReduceDynamic(OpT op, Lowerer &l) {
  Value x = l.in[0], axesT = l.in[1];
  RankedTensorType xt = l.typeOf(x), rt = l.resultType();
  int64_t r = xt.getRank();
  if (l.rankOf(axesT) != 1)
    return l.fail("axes that are not a 1-D tensor");
  bool keep = op.getKeepdims(), noop = op.getNoopWithEmptyAxes();
  if (keep ? rt.getRank() != r : rt.getRank() > r)
    return l.fail("a result rank that does not fit the input rank");
  Operation *o = op.getOperation();
  Type e = rt.getElementType(), acc = accType(e);
  if (isa<onnx::ReduceL2Op>(o) && !isFloat(acc))
    return l.fail("integer ReduceL2");
  ImplicitLocOpBuilder &b = l.b;
  Value zero = cidx(b, 0), one = cidx(b, 1), n = l.val(l.dim(axesT, 0));
  SmallVector<Value> flag = axisFlags(l, axesT, r);
  Value none = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, n, zero);
  if (!noop) // no axes: all of them
    for (Value &fd : flag)
      fd = arith::OrIOp::create(b, fd, none);
  SmallVector<Value> ext, inDims;
  SmallVector<OpFoldResult> outSizes;
  SmallVector<int64_t> keptShape;
  Value count = one;
  for (int64_t d = 0; d < r; ++d) {
    Value dd = l.val(l.dim(x, d));
    inDims.push_back(dd);
    ext.push_back(arith::SelectOp::create(b, flag[d], dd, one));
    outSizes.push_back(
        OpFoldResult(arith::SelectOp::create(b, flag[d], one, dd).getResult()));
    count = arith::MulIOp::create(b, count, ext[d]);
    keptShape.push_back(xt.getDimSize(d) == 1 ? 1 : ShapedType::kDynamic);
  }
  Value cnt; // at least 1: the mean of no elements is 0 (see reduceFinish)
  if (isa<onnx::ReduceMeanOp>(o))
    cnt = convert(b,
                  arith::IndexCastOp::create(
                      b, b.getI64Type(), arith::MaxUIOp::create(b, count, one)),
                  acc);
  TypedAttr initAttr = reduceInit(o, b, acc);
  auto keptT = RankedTensorType::get(keptShape, e);
  Value red = l.generic(
      keptT, outSizes, {}, {}, [&](ImplicitLocOpBuilder &ib, ValueRange) {
        SmallVector<Value> oi;
        for (int64_t d = 0; d < r; ++d)
          oi.push_back(linalg::IndexOp::create(ib, d));
        auto loop = scf::ForOp::create(
            ib, zero, count, one, ValueRange{constant(ib, initAttr)},
            [&](OpBuilder &nb, Location loc, Value k, ValueRange accs) {
              ImplicitLocOpBuilder jb(loc, nb);
              SmallVector<Value> at(r);
              Value rem = k;
              for (int64_t d = r - 1; d >= 0; --d) {
                Value kd = arith::RemUIOp::create(jb, rem, ext[d]);
                rem = arith::DivUIOp::create(jb, rem, ext[d]);
                at[d] = arith::AddIOp::create(jb, oi[d], kd);
              }
              Value v = tensor::ExtractOp::create(jb, x, at);
              scf::YieldOp::create(
                  jb, reduceStep(o, jb, accs[0], convert(jb, v, acc)));
            });
        return convert(ib, reduceFinish(o, ib, loop.getResult(0), cnt), e);
      });
  if (keep)
    return l.done(l.castTo(red, rt));
  int64_t R = rt.getRank();
  if (R == 0) {
    SmallVector<Value> at(r, zero);
    Value v = tensor::ExtractOp::create(b, red, at);
    return l.done(tensor::FromElementsOp::create(b, rt, v));
  }
  return l.done(reshapeTo(l, red, rt, keptSizes(b, flag, inDims, R)));
}

} // namespace

template <typename OpT> LogicalResult lowerReduce(OpT op, Lowerer &l) {
  auto axes = reduceAxes(op, l);
  if (!axes)
    return lowerReduceDynamic(op, l);
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  Operation *o = op.getOperation();
  // No axes (noop_with_empty_axes): a reduction over none, as the ONNX
  // reference computes it: x itself, |x| for L2.
  if (axes->empty() && !isa<onnx::ReduceL2Op>(o))
    return l.done(x);
  Type e = rt.getElementType(), acc = accType(e);
  bool f = isFloat(acc), mean = isa<onnx::ReduceMeanOp>(o),
       l2 = isa<onnx::ReduceL2Op>(o);
  if (l2 && !f)
    return l.fail("integer ReduceL2");
  Value red =
      l.reduce(x, *axes, acc, reduceInit(o, l.b, acc), {},
               [&](ImplicitLocOpBuilder &b, Value a, Value v, ValueRange) {
                 return reduceStep(o, b, a, convert(b, v, acc));
               });
  // Mean divides by the count, L2 takes the root; back to the element type.
  Value n;
  if (mean) { // at least 1: the mean of no elements is 0 (see reduceFinish)
    OpFoldResult c = l.idx(1);
    for (int64_t a : *axes)
      c = l.mul(c, l.dim(x, a));
    c = l.max(c, l.idx(1));
    if (auto k = getConstantIntValue(c))
      n = scalar(l.b, acc, (double)*k);
    else
      n = convert(l.b,
                  arith::IndexCastOp::create(l.b, l.b.getI64Type(), l.val(c)),
                  acc);
  }
  auto redT = l.typeOf(red).clone(e);
  red = l.elementwise(redT, {red}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
    return convert(b, reduceFinish(o, b, a[0], n), e);
  });
  if (!op.getKeepdims() || axes->empty())
    return l.done(l.castTo(red, rt));
  SmallVector<bool> unit(rt.getRank(), false);
  SmallVector<int64_t> shape(rt.getShape());
  for (int64_t a : *axes)
    unit[a] = true, shape[a] = 1;
  return l.done(l.castTo(l.insertUnitDims(red, rt.clone(shape), unit), rt));
}

// The Reduce* ops dispatch() lowers.
template LogicalResult lowerReduce(onnx::ReduceSumOp, Lowerer &);
template LogicalResult lowerReduce(onnx::ReduceMeanOp, Lowerer &);
template LogicalResult lowerReduce(onnx::ReduceMaxOp, Lowerer &);
template LogicalResult lowerReduce(onnx::ReduceMinOp, Lowerer &);
template LogicalResult lowerReduce(onnx::ReduceProdOp, Lowerer &);
template LogicalResult lowerReduce(onnx::ReduceL2Op, Lowerer &);

/// Softmax / LogSoftmax over one axis, in f32 (or f64).
LogicalResult lowerSoftmax(int64_t onnxAxis, bool log, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank();
  auto ax = normAxis(onnxAxis, r);
  if (!ax)
    return l.fail("axis out of range");
  int64_t axis = *ax;
  Type e = rt.getElementType(), acc = accType(e);
  Value m = l.reduce(
      x, {axis}, acc, extremeAttr(l.b, acc, true), {},
      [&](ImplicitLocOpBuilder &b, Value a, Value v, ValueRange) -> Value {
        return arith::MaximumFOp::create(b, a, convert(b, v, acc));
      });
  Value s = l.reduce(
      x, {axis}, acc, scalarAttr(l.b, acc, 0), {m},
      [&](ImplicitLocOpBuilder &b, Value a, Value v, ValueRange rows) -> Value {
        Value d = arith::SubFOp::create(b, convert(b, v, acc), rows[0]);
        return arith::AddFOp::create(b, a, math::ExpOp::create(b, d));
      });
  AffineMap row = l.dropMap(r, {axis});
  return l.done(l.generic(
      rt, l.dims(x), {x, m, s}, {l.b.getMultiDimIdentityMap(r), row, row},
      [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value d = arith::SubFOp::create(b, convert(b, a[0], acc), a[1]);
        Value y = log ? (Value)arith::SubFOp::create(
                            b, d, math::LogOp::create(b, a[2]))
                      : (Value)arith::DivFOp::create(
                            b, math::ExpOp::create(b, d), a[2]);
        return convert(b, y, e);
      }));
}

/// CumSum along an axis that may come at run time: each output element
/// sums its run of the axis ([0, i] forward, [i, n) reversed, without i
/// itself when exclusive) in accType, in a loop of the generic's body.
LogicalResult lower(onnx::CumSumOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank();
  if (r == 0)
    return l.fail("a scalar input");
  if (l.typeOf(l.in[1]).getNumElements() != 1)
    return l.fail("an axis that is not one element");
  ImplicitLocOpBuilder &b = l.b;
  Value a =
      arith::IndexCastOp::create(b, b.getIndexType(), l.element(l.in[1], 0));
  if (auto c = onnx::getConstantInts(op.getAxis())) {
    if (!normAxis((*c)[0], r))
      return l.fail("axis out of range");
  } else { // read at run time: checked (onnxruntime fails the run)
    cf::AssertOp::create(
        b,
        arith::AndIOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::sge, a, cidx(b, -r)),
            arith::CmpIOp::create(b, arith::CmpIPredicate::slt, a, cidx(b, r))),
        axisOutOfRange(op));
  }
  Value zero = arith::ConstantIndexOp::create(b, 0),
        one = arith::ConstantIndexOp::create(b, 1);
  Value neg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, a, zero);
  a = arith::SelectOp::create(
      b, neg, arith::AddIOp::create(b, a, arith::ConstantIndexOp::create(b, r)),
      a);
  SmallVector<Value> isAxis;
  Value len = zero;
  for (int64_t d = 0; d < r; ++d) {
    isAxis.push_back(arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq, a, arith::ConstantIndexOp::create(b, d)));
    len = arith::SelectOp::create(b, isAxis[d], l.val(l.dim(x, d)), len);
  }
  bool excl = op.getExclusive() != 0, rev = op.getReverse() != 0;
  Type e = rt.getElementType(), acc = accType(e);
  return l.done(l.generic(
      rt, l.dims(x), {}, {}, [&](ImplicitLocOpBuilder &ib, ValueRange) {
        SmallVector<Value> oi;
        Value pos = zero;
        for (int64_t d = 0; d < r; ++d) {
          oi.push_back(linalg::IndexOp::create(ib, d));
          pos = arith::SelectOp::create(ib, isAxis[d], oi[d], pos);
        }
        Value next = arith::AddIOp::create(ib, pos, one);
        Value lo = rev ? (excl ? next : pos) : zero;
        Value hi = rev ? len : (excl ? pos : next);
        auto loop = scf::ForOp::create(
            ib, lo, hi, one, ValueRange{scalar(ib, acc, 0)},
            [&](OpBuilder &nb, Location loc, Value t, ValueRange s) {
              ImplicitLocOpBuilder jb(loc, nb);
              SmallVector<Value> at;
              for (int64_t d = 0; d < r; ++d)
                at.push_back(arith::SelectOp::create(jb, isAxis[d], t, oi[d]));
              Value v = tensor::ExtractOp::create(jb, x, at);
              scf::YieldOp::create(jb, addOf(jb, s[0], convert(jb, v, acc)));
            });
        return convert(ib, loop.getResult(0), e);
      }));
}

} // namespace gatec::conversion::onnx_to_linalg
