//===- DataMovement.cpp - shapes and data movement ------------------------===//
//
// The ops that compute shapes (Shape, Size, ConstantOfShape, Range) and those
// that move data without arithmetic: Concat, Slice, Split, Expand, Gather,
// Tile and Trilu, as tensor slices and linalg ops, with sizes computed at
// run time where they are dynamic. The reshapes are in Reshape.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "passes/common/Broadcast.h"

#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include <cmath>

namespace gatec::conversion::onnx_to_linalg {

//===----------------------------------------------------------------------===//
// Shape computations: Shape, Size, ConstantOfShape, Range
//===----------------------------------------------------------------------===//

LogicalResult lower(onnx::ShapeOp op, Lowerer &l) {
  Value x = l.in[0];
  int64_t r = l.rankOf(x);
  auto norm = [&](int64_t v) {
    return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r);
  };
  int64_t start = norm((int64_t)op.getStart());
  int64_t end = norm(op.getEnd() ? (int64_t)*op.getEnd() : r);
  RankedTensorType rt = l.resultType();
  if (end <= start)
    return l.done(arith::ConstantOp::create(
        l.b, DenseElementsAttr::get(rt, ArrayRef<Attribute>{})));
  SmallVector<Value> elems;
  for (int64_t i = start; i < end; ++i) {
    OpFoldResult d = l.dim(x, i);
    if (auto c = getConstantIntValue(d))
      elems.push_back(scalar(l.b, l.b.getI64Type(), (double)*c));
    else
      elems.push_back(
          arith::IndexCastOp::create(l.b, l.b.getI64Type(), l.val(d)));
  }
  return l.done(tensor::FromElementsOp::create(l.b, rt, elems));
}

LogicalResult lower(onnx::SizeOp op, Lowerer &l) {
  Value n = arith::IndexCastOp::create(l.b, l.b.getI64Type(),
                                       l.val(l.numel(l.in[0])));
  return l.done(tensor::FromElementsOp::create(l.b, l.resultType(), n));
}

/// Whether the lowered size `v` is a tensor's dim (or a constant >= 0)
/// passed on through index casts and the elements of shape tensors
/// (from_elements, extract_slice, concat, as the lowered Shape, Slice and
/// Concat of a shape are).
bool provablyNonNegative(Value v, int depth) {
  if (depth > 16)
    return false;
  if (auto c = getConstantIntValue(v))
    return *c >= 0;
  Operation *d = v.getDefiningOp();
  if (!d)
    return false;
  if (isa<tensor::DimOp>(d))
    return true;
  if (auto cast = dyn_cast<arith::IndexCastOp>(d))
    return provablyNonNegative(cast.getIn(), depth + 1);
  if (auto sel = dyn_cast<arith::SelectOp>(d)) // Expand's unlessOne
    return provablyNonNegative(sel.getTrueValue(), depth + 1) &&
           provablyNonNegative(sel.getFalseValue(), depth + 1);
  if (isa<arith::MulIOp>(d)) // Tile's dim * repeat
    return provablyNonNegative(d->getOperand(0), depth + 1) &&
           provablyNonNegative(d->getOperand(1), depth + 1);
  auto extract = dyn_cast<tensor::ExtractOp>(d);
  if (!extract || extract.getIndices().size() != 1)
    return false;
  auto at = getConstantIntValue(extract.getIndices()[0]);
  if (!at)
    return false;
  // Element *at of the 1-D tensor t.
  std::function<bool(Value, int64_t)> element = [&](Value t, int64_t i) {
    Operation *p = t.getDefiningOp();
    if (auto fe = dyn_cast_or_null<tensor::FromElementsOp>(p))
      return i < (int64_t)fe.getElements().size() &&
             provablyNonNegative(fe.getElements()[i], depth + 1);
    if (auto sl = dyn_cast_or_null<tensor::ExtractSliceOp>(p)) {
      if (sl.getSourceType().getRank() != 1 || sl.hasUnitStride() == false)
        return false;
      auto off = getConstantIntValue(sl.getMixedOffsets()[0]);
      return off && element(sl.getSource(), *off + i);
    }
    if (auto cat = dyn_cast_or_null<tensor::ConcatOp>(p)) {
      for (Value in : cat.getInputs()) {
        int64_t n = cast<RankedTensorType>(in.getType()).getDimSize(0);
        if (ShapedType::isDynamic(n))
          return false;
        if (i < n)
          return element(in, i);
        i -= n;
      }
    }
    return false;
  };
  return element(extract.getTensor(), *at);
}

/// A cf.assert that the sizes `sizes` of a result, dim d read from element
/// `first + d` of the ONNX shape-like operand `shape` (ConstantOfShape's
/// shape, Expand's shape, Tile's repeats), are not negative: onnxruntime
/// refuses negative ones, and two of them would make a buffer of positive
/// size. Dims whose element is a constant >= 0 or a tensor's dim (Shape
/// chains, seen through the onnx operand or provablyNonNegative) are
/// not checked.
void checkSizesNonNegative(Lowerer &l, Operation *op, Value shape,
                           int64_t first, ArrayRef<OpFoldResult> sizes) {
  auto known = onnx::getShapeDims(shape);
  Value ok;
  for (auto [d, size] : llvm::enumerate(sizes)) {
    auto v = dyn_cast<Value>(size);
    if (!v || provablyNonNegative(v))
      continue;
    int64_t k = first + (int64_t)d;
    if (k < 0) // not read from the operand (Expand: x's own dim)
      continue;
    if (known && k < (int64_t)known->size() &&
        (((*known)[k].value && *(*known)[k].value >= 0) || (*known)[k].src))
      continue;
    Value nonNeg = arith::CmpIOp::create(l.b, arith::CmpIPredicate::sge,
                                         l.val(size), cidx(l.b, 0));
    ok = ok ? (Value)arith::AndIOp::create(l.b, ok, nonNeg) : nonNeg;
  }
  if (ok)
    cf::AssertOp::create(l.b, ok,
                         "gatec: a negative size in " +
                             describeOp(op->getLoc()) + " (" +
                             op->getName().stripDialect().str() + ")");
}

LogicalResult lower(onnx::ConstantOfShapeOp op, Lowerer &l) {
  RankedTensorType rt = l.resultType();
  TypedAttr v = scalarAttr(l.b, rt.getElementType(), 0);
  if (auto attr = op.getValueAttr()) {
    auto dense = dyn_cast<DenseElementsAttr>(attr);
    if (!dense || dense.getNumElements() != 1)
      return l.fail("value is not a one-element dense tensor");
    v = cast<TypedAttr>(*dense.value_begin<Attribute>());
    if (v.getType() != rt.getElementType())
      return l.fail("value of another element type than the result");
  }
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < rt.getRank(); ++i)
    sizes.push_back(rt.isDynamicDim(i) ? l.elementIndex(l.in[0], i)
                                       : l.idx(rt.getDimSize(i)));
  checkSizesNonNegative(l, op, op.getInput(), 0, sizes);
  return l.done(l.filled(rt, sizes, v));
}

/// The size, as an index value, of the tensor dim that `op`'s limit reads
/// (Gather(Shape(x), i), possibly Cast), where start is 0 and delta 1;
/// null otherwise.
Value rangeOverDim(onnx::RangeOp op, Lowerer &l) {
  auto start = onnx::getConstantDoubles(op->getOperand(0));
  auto delta = onnx::getConstantDoubles(op->getOperand(2));
  if (!l.map || !start || !delta || start->size() != 1 || delta->size() != 1 ||
      (*start)[0] != 0.0 || (*delta)[0] != 1.0)
    return Value();
  Value limit = op->getOperand(1);
  // An integer shape element cast to the Range's type.
  if (auto c = limit.getDefiningOp<onnx::CastOp>())
    if (getElementTypeOrSelf(c->getOperand(0).getType()).isInteger())
      limit = c->getOperand(0);
  auto dims = onnx::getShapeDims(limit);
  if (!dims || dims->size() != 1 || !(*dims)[0].src)
    return Value();
  Value src = l.map->lookupOrDefault((*dims)[0].src);
  if (!src || !isa<RankedTensorType>(src.getType()))
    return Value();
  return tensor::DimOp::create(l.b, src, (*dims)[0].dim);
}

LogicalResult lower(onnx::RangeOp op, Lowerer &l) {
  RankedTensorType rt = l.resultType();
  Type e = rt.getElementType();
  ImplicitLocOpBuilder &b = l.b;
  Value start = l.element(l.in[0], 0), limit = l.element(l.in[1], 0),
        delta = l.element(l.in[2], 0);
  // A delta of 0 read at run time, which onnxruntime refuses, is checked
  // (a constant one is an error).
  using P = arith::CmpIPredicate;
  std::string where = " in " + describeOp(op->getLoc()) + " (Range)";
  auto deltas = onnx::getConstantDoubles(op.getDelta());
  if (deltas && deltas->size() == 1 && (*deltas)[0] == 0)
    return l.fail("a delta of 0");
  if (!deltas || deltas->size() != 1) {
    Value isZero =
        isFloat(e)
            ? (Value)arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                           convert(b, delta, b.getF64Type()),
                                           scalar(b, b.getF64Type(), 0))
            : (Value)arith::CmpIOp::create(
                  b, P::eq, toSignless(b, delta),
                  scalar(b, toSignless(b, delta).getType(), 0));
    cf::AssertOp::create(
        b, arith::XOrIOp::create(b, isZero, scalar(b, b.getI1Type(), 1)),
        "gatec: a delta of 0" + where);
  }
  // n = max(ceil((limit - start) / delta), 0), the quotient in f64 as
  // onnxruntime computes it, integers in i128 (exact: no overflow of
  // limit - start, no trap). Unless the Range runs over a tensor's dim
  // (below), a count that is not finite or whose buffer would exceed 2^47
  // bytes (what x86-64 can address) is the run's error: onnxruntime fails
  // the run there too.
  Value dim = rangeOverDim(op, l);
  int64_t bytes = std::max<int64_t>(1, e.getIntOrFloatBitWidth() / 8);
  int64_t most = (int64_t(1) << 47) / bytes;
  std::string tooMany = "gatec: a Range whose number of elements is not "
                        "finite or needs a buffer over 2^47 bytes" +
                        where;
  Value n;
  if (isFloat(e)) {
    Type f64 = b.getF64Type();
    Value d = convert(b, arith::SubFOp::create(b, limit, start), f64);
    Value q = math::CeilOp::create(
        b, arith::DivFOp::create(b, d, convert(b, delta, f64)));
    if (!dim) {
      Value ok = arith::AndIOp::create(
          b,
          arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, q,
                                scalar(b, f64, (double)most)),
          arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, q,
                                scalar(b, f64, -INFINITY)));
      cf::AssertOp::create(b, ok, tooMany);
      q = arith::SelectOp::create(b, ok, q, scalar(b, f64, 0)); // NaN, inf
      q = arith::MaximumFOp::create(b, q, scalar(b, f64, 0));
    }
    n = arith::FPToSIOp::create(b, b.getI64Type(), q);
  } else if (dim) {
    Value q = arith::CeilDivSIOp::create(
        b, arith::SubIOp::create(b, limit, start), delta);
    n = convert(b, q, b.getI64Type());
  } else {
    Type i128 = b.getIntegerType(128);
    auto wide = [&](Value v) { return convert(b, v, i128); };
    Value dw = wide(delta);
    Value safe = arith::SelectOp::create(
        b, arith::CmpIOp::create(b, P::eq, dw, scalar(b, i128, 0)),
        scalar(b, i128, 1), dw);
    Value q = arith::CeilDivSIOp::create(
        b, arith::SubIOp::create(b, wide(limit), wide(start)), safe);
    Value ok = arith::CmpIOp::create(b, P::sle, q, scalar(b, i128, most));
    cf::AssertOp::create(b, ok, tooMany);
    q = arith::MaxSIOp::create(
        b, arith::SelectOp::create(b, ok, q, scalar(b, i128, 0)),
        scalar(b, i128, 0));
    n = arith::TruncIOp::create(b, b.getI64Type(), q);
  }
  n = arith::MaxSIOp::create(b, n, scalar(b, b.getI64Type(), 0));
  OpFoldResult size = OpFoldResult(
      arith::IndexCastOp::create(b, b.getIndexType(), n).getResult());
  // Range(0, n, 1) over a tensor's dynamic dim n (positions 0..T-1, as
  // exporters write them): its size is that dim, checked equal here once,
  // so that what it broadcasts against is provably the same size.
  if (dim) {
    cf::AssertOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, dim, l.val(size)),
        "gatec: a Range over a dim of a tensor has another length (" +
            describeOp(op->getLoc()) + ")");
    size = dim;
  }
  return l.done(
      l.generic(rt, l.sizesOf(rt, {size}), {}, {},
                [&](ImplicitLocOpBuilder &ib, ValueRange) {
                  Value i = arith::IndexCastOp::create(
                      ib, ib.getI64Type(), linalg::IndexOp::create(ib, 0));
                  if (isFloat(e)) { // in f32 for narrower floats
                    Type w = accType(e);
                    Value iv = convert(ib, i, w);
                    Value d = convert(ib, delta, w);
                    return convert(
                        ib,
                        arith::AddFOp::create(ib, convert(ib, start, w),
                                              arith::MulFOp::create(ib, iv, d)),
                        e);
                  }
                  Value iv = convert(ib, i, e);
                  return (Value)arith::AddIOp::create(
                      ib, start, arith::MulIOp::create(ib, iv, delta));
                }));
}

//===----------------------------------------------------------------------===//
// Data movement: Concat, Slice, Split, Expand, Gather, Tile, Trilu
//===----------------------------------------------------------------------===//

/// The most elements of a Concat that builds a shape vector element by
/// element (a rank is at most this in practice).
constexpr int64_t kShapeVectorElements = 16;

LogicalResult lower(onnx::ConcatOp op, Lowerer &l) {
  RankedTensorType rt = l.resultType();
  auto axis = normAxis((int64_t)op.getAxis(), rt.getRank());
  if (!axis)
    return l.fail("axis out of range");
  // The operands' other dims must agree (onnxruntime fails the run
  // otherwise; tensor.concat would write out of bounds): checked at run time
  // where they are not provably equal.
  for (int64_t d = 0; d < rt.getRank(); ++d) {
    if (d == *axis)
      continue;
    Value ref = l.in[0];
    for (Value v : l.in)
      if (!l.typeOf(v).isDynamicDim(d))
        ref = v;
    OpFoldResult size = l.dim(ref, d);
    for (Value v : l.in) {
      if (v == ref || common::provablySameSize(v, d, size))
        continue;
      cf::AssertOp::create(
          l.b,
          arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq,
                                l.val(l.dim(v, d)), l.val(size)),
          "gatec: run-time sizes that differ in dim " + std::to_string(d) +
              " of the operands of " + describeOp(op->getLoc()) + " (Concat)");
    }
  }
  SmallVector<Value> ins; // operands empty along the axis add nothing
  for (Value v : l.in)
    if (l.typeOf(v).getDimSize(*axis) != 0)
      ins.push_back(v);
  if (ins.empty())
    ins.push_back(l.in[0]);
  if (ins.size() == 1)
    return l.done(l.castTo(ins[0], rt));
  // A shape vector (small, 1-D, integer): its elements, so that the shapes
  // built from it fold to scalars and no copy kernel is left.
  if (rt.getRank() == 1 && rt.hasStaticShape() &&
      rt.getNumElements() <= kShapeVectorElements &&
      rt.getElementType().isInteger() && llvm::all_of(ins, [&](Value v) {
        return l.typeOf(v).hasStaticShape();
      })) {
    SmallVector<Value> elems;
    for (Value v : ins)
      for (int64_t i = 0; i < l.typeOf(v).getDimSize(0); ++i)
        elems.push_back(l.element(v, i));
    return l.done(tensor::FromElementsOp::create(l.b, rt, elems));
  }
  return l.done(l.castTo(tensor::ConcatOp::create(l.b, *axis, ins), rt));
}

namespace {

/// [start, end) of a Slice with step `step` along a dim of size `d`, as an
/// offset and a size (steps > 0).
std::pair<OpFoldResult, OpFoldResult> sliceRange(Lowerer &l, OpFoldResult d,
                                                 int64_t start, int64_t end,
                                                 int64_t step) {
  auto norm = [&](int64_t v) {
    return v < 0 ? l.max(l.add(d, l.idx(v)), l.idx(0)) : l.min(l.idx(v), d);
  };
  OpFoldResult s = norm(start), e = norm(end);
  OpFoldResult n = l.ceilDiv(l.max(l.sub(e, s), l.idx(0)), l.idx(step));
  return {s, n};
}

/// Slice with starts/ends/axes/steps read at run time, or negative steps:
/// per dim, the start and step of the entry whose axis names it (0 and 1
/// if none) and the end, clamped as the ONNX spec says; the result is a
/// generic reading x[start + i * step] along each dim.
LogicalResult lowerSliceGeneral(onnx::SliceOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  int64_t r = l.rankOf(x);
  RankedTensorType st = l.typeOf(l.in[1]);
  if (st.getRank() != 1 || st.isDynamicDim(0))
    return l.fail("starts of unknown length");
  int64_t n = st.getDimSize(0);
  ImplicitLocOpBuilder &b = l.b;
  using P = arith::CmpIPredicate;
  SmallVector<Value> dims, start, end, step;
  for (int64_t d = 0; d < r; ++d) {
    dims.push_back(l.val(l.dim(x, d)));
    start.push_back(cidx(b, 0));
    end.push_back(dims[d]);
    step.push_back(cidx(b, 1));
  }
  // Axes and steps read at run time are checked (onnxruntime fails the run
  // on either): an axis outside [-r, r-1] would name no dim, a step of 0
  // divide by 0. Constant ones were checked by the verifier.
  std::string where = " in " + describeOp(op->getLoc()) + " (Slice)";
  bool runTimeAxes = l.in[3] && !onnx::getConstantInts(op.getAxes());
  bool runTimeSteps = l.in[4] && !onnx::getConstantInts(op.getSteps());
  // Repeated axes (onnxruntime refuses them): a constant repeat is an
  // error here, one read at run time the run's.
  if (auto ca = l.in[3] ? onnx::getConstantInts(op.getAxes()) : std::nullopt)
    for (size_t i = 0; i < ca->size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (normAxis((*ca)[i], r) &&
            normAxis((*ca)[i], r) == normAxis((*ca)[j], r))
          return l.fail("repeated axes (axis " + Twine(*normAxis((*ca)[i], r)) +
                        " twice)");
  SmallVector<Value> seen;
  for (int64_t i = 0; i < n; ++i) {
    Value ci = cidx(b, i);
    Value a = l.in[3] ? normAxisValue(b, indexAt(b, l.in[3], ci), r) : ci;
    if (runTimeAxes) {
      for (Value prev : seen)
        cf::AssertOp::create(b, arith::CmpIOp::create(b, P::ne, a, prev),
                             "gatec: repeated Slice axes" + where);
      seen.push_back(a);
    }
    if (runTimeAxes)
      cf::AssertOp::create(b,
                           arith::AndIOp::create(
                               b,
                               arith::CmpIOp::create(b, P::sge, a, cidx(b, 0)),
                               arith::CmpIOp::create(b, P::slt, a, cidx(b, r))),
                           "gatec: a Slice axis out of range" + where);
    Value si = indexAt(b, l.in[1], ci), ei = indexAt(b, l.in[2], ci);
    Value pi = l.in[4] ? indexAt(b, l.in[4], ci) : cidx(b, 1);
    if (runTimeSteps) {
      Value isZero = arith::CmpIOp::create(b, P::eq, pi, cidx(b, 0));
      cf::AssertOp::create(
          b, arith::XOrIOp::create(b, isZero, scalar(b, b.getI1Type(), 1)),
          "gatec: a Slice step of 0" + where);
      pi = arith::SelectOp::create(b, isZero, cidx(b, 1), pi); // no trap
    }
    for (int64_t d = 0; d < r; ++d) {
      Value is = arith::CmpIOp::create(b, P::eq, a, cidx(b, d));
      start[d] = arith::SelectOp::create(b, is, si, start[d]);
      end[d] = arith::SelectOp::create(b, is, ei, end[d]);
      step[d] = arith::SelectOp::create(b, is, pi, step[d]);
    }
  }
  auto clamp = [&](Value v, Value lo, Value hi) {
    return arith::MinSIOp::create(b, arith::MaxSIOp::create(b, v, lo), hi);
  };
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < r; ++d) {
    Value D = dims[d], zero = cidx(b, 0);
    Value pos = arith::CmpIOp::create(b, P::sgt, step[d], zero);
    auto wrap = [&](Value v) {
      Value neg = arith::CmpIOp::create(b, P::slt, v, zero);
      return arith::SelectOp::create(b, neg, arith::AddIOp::create(b, v, D), v);
    };
    Value dm1 = arith::SubIOp::create(b, D, cidx(b, 1));
    Value s = wrap(start[d]), e = wrap(end[d]);
    s = arith::SelectOp::create(b, pos, clamp(s, zero, D), clamp(s, zero, dm1));
    e = arith::SelectOp::create(b, pos, clamp(e, zero, D),
                                clamp(e, cidx(b, -1), dm1));
    // count = ceil((e - s) / step), at least 0 (for both signs of step)
    Value q =
        arith::CeilDivSIOp::create(b, arith::SubIOp::create(b, e, s), step[d]);
    sizes.push_back(
        OpFoldResult(arith::MaxSIOp::create(b, q, zero).getResult()));
    start[d] = s;
  }
  return l.done(
      l.generic(rt, l.sizesOf(rt, sizes), {}, {},
                [&](ImplicitLocOpBuilder &ib, ValueRange) {
                  SmallVector<Value> at;
                  for (int64_t d = 0; d < r; ++d)
                    at.push_back(arith::AddIOp::create(
                        ib, start[d],
                        arith::MulIOp::create(
                            ib, linalg::IndexOp::create(ib, d), step[d])));
                  return tensor::ExtractOp::create(ib, x, at);
                }));
}

} // namespace

LogicalResult lower(onnx::SliceOp op, Lowerer &l) {
  Value x = l.in[0];
  int64_t r = l.rankOf(x);
  auto starts = onnx::getConstantInts(op.getStarts());
  auto ends = onnx::getConstantInts(op.getEnds());
  if (!starts || !ends || starts->size() != ends->size())
    return lowerSliceGeneral(op, l);
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  for (size_t i = 0; i < starts->size(); ++i)
    axes.push_back(i);
  if (l.in[3]) {
    auto a = constantAxes(op.getAxes(), r);
    if (!a || a->size() != starts->size())
      return lowerSliceGeneral(op, l);
    axes = *a;
  }
  if (l.in[4]) {
    auto s = onnx::getConstantInts(op.getSteps());
    if (!s || s->size() != starts->size())
      return lowerSliceGeneral(op, l);
    steps = *s;
  }
  SmallVector<OpFoldResult> offsets(r, l.idx(0)), sizes = l.dims(x),
                                                  strides(r, l.idx(1));
  for (auto [a, s, e, st] : llvm::zip(axes, *starts, *ends, steps)) {
    if (st <= 0)
      return lowerSliceGeneral(op, l);
    auto [off, n] = sliceRange(l, l.dim(x, a), s, e, st);
    if (isConstantIntValue(n, 0)) // empty: any offset in bounds
      off = l.idx(0);
    offsets[a] = off, sizes[a] = n, strides[a] = l.idx(st);
  }
  if (llvm::is_contained(l.resultType().getShape(), 0) ||
      llvm::is_contained(l.typeOf(x).getShape(), 0)) // nothing to read
    return l.done(l.empty(l.resultType(), sizes));
  Value v = tensor::ExtractSliceOp::create(l.b, x, offsets, sizes, strides);
  return l.done(l.castTo(v, l.resultType()));
}

LogicalResult lower(onnx::SplitOp op, Lowerer &l) {
  Value x = l.in[0];
  auto ax = normAxis((int64_t)op.getAxis(), l.rankOf(x));
  if (!ax)
    return l.fail("axis out of range");
  int64_t r = l.rankOf(x), axis = *ax, n = op->getNumResults();
  OpFoldResult d = l.dim(x, axis);
  SmallVector<OpFoldResult> parts;
  if (l.in[1]) {
    auto split = onnx::getConstantInts(op.getSplit());
    RankedTensorType st = l.typeOf(l.in[1]);
    if (split && (int64_t)split->size() != n)
      return l.fail("split sizes do not match the outputs");
    if (!split && (st.getRank() != 1 || st.getDimSize(0) != n))
      return l.fail("a run-time split of another length than the outputs");
    for (int64_t i = 0; i < n; ++i) // sizes read at run time if need be
      parts.push_back(split ? l.idx((*split)[i]) : l.elementIndex(l.in[1], i));
    // Sizes that are negative or do not sum to the dim (onnxruntime fails
    // the run) would slice out of bounds: checked where not constant.
    OpFoldResult sum = l.idx(0);
    Value ok;
    for (OpFoldResult p : parts) {
      sum = l.add(sum, p);
      if (getConstantIntValue(p))
        continue;
      Value nonNeg = arith::CmpIOp::create(l.b, arith::CmpIPredicate::sge,
                                           l.val(p), cidx(l.b, 0));
      ok = ok ? (Value)arith::AndIOp::create(l.b, ok, nonNeg) : nonNeg;
    }
    auto cs = getConstantIntValue(sum), cd = getConstantIntValue(d);
    if (cs && cd && *cs != *cd)
      return l.fail("split sizes that sum to " + Twine(*cs) + ", not to the " +
                    "dim's " + Twine(*cd));
    if (!cs || !cd) {
      Value eq = arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq,
                                       l.val(sum), l.val(d));
      ok = ok ? (Value)arith::AndIOp::create(l.b, ok, eq) : eq;
    }
    if (ok)
      cf::AssertOp::create(l.b, ok,
                           "gatec: Split sizes that are negative or do not "
                           "sum to dim " +
                               std::to_string(axis) + " in " +
                               describeOp(op->getLoc()) + " (Split)");
  } else { // equal parts of ceil(d / n), the last one smaller
    OpFoldResult chunk = l.ceilDiv(d, l.idx(n));
    for (int64_t i = 0; i < n; ++i)
      parts.push_back(i + 1 < n ? chunk : l.sub(d, l.mul(chunk, l.idx(n - 1))));
    // ... but not negative (d = 5 in 4 parts: 2, 2, 2, -1), which
    // onnxruntime refuses.
    if (auto c = getConstantIntValue(parts.back())) {
      if (*c < 0)
        return l.fail("a dim split in " + Twine(n) +
                      " parts of ceil(d / n) leaves a negative last part");
    } else if (n > 1) {
      cf::AssertOp::create(
          l.b,
          arith::CmpIOp::create(l.b, arith::CmpIPredicate::sge,
                                l.val(parts.back()), cidx(l.b, 0)),
          "gatec: a Split of dim " + std::to_string(axis) + " in " +
              std::to_string(n) + " parts of ceil(d / " + std::to_string(n) +
              ") leaves a negative last part in " + describeOp(op->getLoc()) +
              " (Split)");
    }
  }
  SmallVector<OpFoldResult> offsets(r, l.idx(0)), sizes = l.dims(x),
                                                  strides(r, l.idx(1));
  for (int64_t i = 0; i < n; ++i) {
    sizes[axis] = parts[i];
    SmallVector<OpFoldResult> at(offsets);
    if (isConstantIntValue(parts[i], 0)) // empty: any offset in bounds
      at[axis] = l.idx(0);
    RankedTensorType ri = l.resultType(i);
    // Nothing to read: an empty part, or an input with a static 0 dim (its
    // parts are all empty; extract_slice refuses any offset into it).
    Value v =
        llvm::is_contained(ri.getShape(), 0) ||
                llvm::is_contained(l.typeOf(x).getShape(), 0)
            ? l.empty(ri, sizes)
            : (Value)tensor::ExtractSliceOp::create(l.b, x, at, sizes, strides);
    l.out.push_back(l.castTo(v, ri));
    offsets[axis] = l.add(offsets[axis], parts[i]);
  }
  return success();
}

LogicalResult lower(onnx::ExpandOp op, Lowerer &l) {
  Value x = l.in[0], shape = l.in[1];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank(), rx = l.rankOf(x);
  RankedTensorType st = l.typeOf(shape);
  if (st.getRank() != 1 || st.isDynamicDim(0))
    return l.fail("a shape operand of unknown length");
  int64_t m = st.getDimSize(0);
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < r; ++d) {
    if (!rt.isDynamicDim(d)) {
      // A static dim taken from x (a shape entry read at run time): that
      // entry must be 1 or the same size (onnxruntime fails the run).
      if (d >= r - m && !onnx::getConstantInts(op.getShape())) {
        Value want = l.val(l.elementIndex(shape, d - (r - m)));
        Value n = cidx(l.b, rt.getDimSize(d));
        cf::AssertOp::create(
            l.b,
            arith::OrIOp::create(
                l.b,
                arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq, want, n),
                arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq, want,
                                      cidx(l.b, 1))),
            "gatec: an Expand shape entry that is neither 1 nor " +
                std::to_string(rt.getDimSize(d)) + " in dim " +
                std::to_string(d) + " in " + describeOp(op->getLoc()) +
                " (Expand)");
      }
      sizes.push_back(l.idx(rt.getDimSize(d)));
      continue;
    }
    // shape[d] unless it is 1, then x's dim: one of the two is 1 or they
    // are equal (a 0 against a 1 stays 0).
    OpFoldResult s = d >= r - m ? l.elementIndex(shape, d - (r - m)) : l.idx(1);
    if (d >= r - rx)
      s = l.unlessOne(s, l.dim(x, d - (r - rx)));
    sizes.push_back(s);
  }
  checkSizesNonNegative(l, op, op.getShape(), m - r, sizes);
  Value xb = l.broadcastOperand(x, rt, sizes);
  return l.done(
      l.generic(rt, sizes, {xb}, {l.broadcastMap(l.typeOf(x), rt.getShape())},
                [](ImplicitLocOpBuilder &, ValueRange a) { return a[0]; }));
}

namespace {

/// ONNX Gather's indices must lie in [-n, n-1] for the data's dim n along
/// the axis (negative ones count from the end); outside that onnxruntime
/// fails the run, and reading there would be out of bounds. Constant
/// indices against a static dim are checked here (a compile error); against
/// a dynamic dim, their extremes are checked once at run time; indices read
/// at run time (token ids into an embedding) are all checked at run time.
/// A failed run-time check is the run's error, naming the node.
LogicalResult checkGatherIndices(onnx::GatherOp op, Lowerer &l, int64_t axis,
                                 Value axisDim) {
  ImplicitLocOpBuilder &b = l.b;
  int64_t n = l.typeOf(l.in[0]).getDimSize(axis);
  std::string message = "gatec: an index out of range of data dim " +
                        std::to_string(axis) + " in " +
                        describeOp(op->getLoc()) + " (Gather)";
  using P = arith::CmpIPredicate;
  if (auto c = onnx::getConstantInts(op.getIndices())) {
    if (c->empty())
      return success();
    int64_t lo = *llvm::min_element(*c), hi = *llvm::max_element(*c);
    if (!ShapedType::isDynamic(n)) {
      if (lo < -n || hi >= n)
        return l.fail("an index out of range of data dim " + Twine(axis) +
                      " (" + Twine(lo < -n ? lo : hi) + " not in [" +
                      Twine(-n) + ", " + Twine(n - 1) + "])");
      return success();
    }
    // hi < n and -n <= lo, as n > max(hi, -lo - 1).
    int64_t need = std::max(hi, -lo - 1);
    if (need < 0)
      return success();
    cf::AssertOp::create(
        b, arith::CmpIOp::create(b, P::sgt, axisDim, cidx(b, need)), message);
    return success();
  }
  l.checkIndexedDim(axisDim, l.in[1], message);
  l.checkAll(
      l.in[1],
      [&](ImplicitLocOpBuilder &ib, Value i) -> Value {
        Value v = arith::IndexCastOp::create(ib, ib.getIndexType(), i);
        Value neg = arith::SubIOp::create(ib, cidx(ib, 0), axisDim);
        return arith::AndIOp::create(
            ib, arith::CmpIOp::create(ib, P::sge, v, neg),
            arith::CmpIOp::create(ib, P::slt, v, axisDim));
      },
      message, /*dataCheck=*/true);
  return success();
}

} // namespace

LogicalResult lower(onnx::GatherOp op, Lowerer &l) {
  Value data = l.in[0], indices = l.in[1];
  int64_t r = l.rankOf(data), q = l.rankOf(indices);
  auto ax = normAxis((int64_t)op.getAxis(), r);
  if (!ax)
    return l.fail("axis out of range");
  int64_t axis = *ax;
  RankedTensorType rt = l.resultType();
  Value axisDim = l.val(l.dim(data, axis));
  if (failed(checkGatherIndices(op, l, axis, axisDim)))
    return failure();
  if (r == 1 && q == 0) { // one element of a vector (of a shape, mostly)
    Value i = clampedIndex(l.b, l.element(indices, 0), axisDim);
    Value v = tensor::ExtractOp::create(l.b, data, i);
    return l.done(tensor::FromElementsOp::create(l.b, rt, v));
  }
  SmallVector<OpFoldResult> sizes;
  for (int64_t j = 0; j < axis; ++j)
    sizes.push_back(l.dim(data, j));
  for (int64_t j = 0; j < q; ++j)
    sizes.push_back(l.dim(indices, j));
  for (int64_t j = axis + 1; j < r; ++j)
    sizes.push_back(l.dim(data, j));
  SmallVector<AffineExpr> ie;
  for (int64_t j = 0; j < q; ++j)
    ie.push_back(l.b.getAffineDimExpr(axis + j));
  AffineMap im = AffineMap::get(rt.getRank(), 0, ie, l.b.getContext());
  return l.done(l.generic(
      rt, sizes, {indices}, {im}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value i = clampedIndex(b, a[0], axisDim);
        SmallVector<Value> at;
        for (int64_t j = 0; j < axis; ++j)
          at.push_back(linalg::IndexOp::create(b, j));
        at.push_back(i);
        for (int64_t j = axis + 1; j < r; ++j)
          at.push_back(linalg::IndexOp::create(b, j - 1 + q));
        return tensor::ExtractOp::create(b, data, at);
      }));
}

LogicalResult lower(onnx::TileOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  SmallVector<OpFoldResult> sizes;
  SmallVector<Value> xDims;
  for (int64_t d = 0; d < rt.getRank(); ++d) {
    xDims.push_back(l.val(l.dim(x, d)));
    sizes.push_back(rt.isDynamicDim(d)
                        ? l.mul(l.dim(x, d), l.elementIndex(l.in[1], d))
                        : l.idx(rt.getDimSize(d)));
  }
  checkSizesNonNegative(l, op, op.getRepeats(), 0, sizes);
  return l.done(
      l.generic(rt, sizes, {}, {}, [&](ImplicitLocOpBuilder &b, ValueRange) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rt.getRank(); ++d)
          at.push_back(arith::RemUIOp::create(b, linalg::IndexOp::create(b, d),
                                              xDims[d]));
        return tensor::ExtractOp::create(b, x, at);
      }));
}

LogicalResult lower(onnx::TriluOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank();
  if (r < 2)
    return l.fail("input of rank < 2");
  Value k = l.in[1] ? l.element(l.in[1], 0) : scalar(l.b, l.b.getI64Type(), 0);
  bool upper = op.getUpper();
  Type e = rt.getElementType();
  return l.done(
      l.elementwise(rt, {x}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        auto i64 = [&](int64_t d) {
          return arith::IndexCastOp::create(b, b.getI64Type(),
                                            linalg::IndexOp::create(b, d));
        };
        Value diff = arith::SubIOp::create(b, i64(r - 1), i64(r - 2));
        Value keep = arith::CmpIOp::create(
            b, upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle,
            diff, k);
        return arith::SelectOp::create(b, keep, a[0], scalar(b, e, 0));
      }));
}

} // namespace gatec::conversion::onnx_to_linalg
