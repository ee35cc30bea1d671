//===- Common.cpp - shared by the onnx-to-linalg lowerings ----------------===//
//
// The scalar maths, the Lowerer's helpers and the axis and reshape helpers
// that Common.h declares.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "passes/common/Broadcast.h"
#include "passes/conversion/Passes.h"

#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

namespace gatec::conversion::onnx_to_linalg {

//===----------------------------------------------------------------------===//
// Scalar maths (inside linalg bodies)
//===----------------------------------------------------------------------===//

bool isFloat(Type t) { return isa<FloatType>(t); }

bool isUnsignedInt(Type t) {
  auto i = dyn_cast<IntegerType>(t);
  return i && i.isUnsigned();
}

namespace {

Type signless(Type t) {
  if (isUnsignedInt(t))
    return IntegerType::get(t.getContext(), t.getIntOrFloatBitWidth());
  return t;
}

} // namespace

Value castScalar(ImplicitLocOpBuilder &b, Value v, Type to) {
  if (v.getType() == to)
    return v;
  return UnrealizedConversionCastOp::create(b, TypeRange{to}, ValueRange{v})
      .getResult(0);
}

Value toSignless(ImplicitLocOpBuilder &b, Value v) {
  return castScalar(b, v, signless(v.getType()));
}

Type accType(Type e) {
  auto f = dyn_cast<FloatType>(e);
  if (f && f.getWidth() < 32)
    return Float32Type::get(e.getContext());
  return e;
}

TypedAttr scalarAttr(Builder &b, Type t, double v) {
  if (isFloat(t))
    return b.getFloatAttr(t, v);
  if (t.isIndex())
    return b.getIndexAttr((int64_t)v);
  return b.getIntegerAttr(t, (int64_t)v);
}

Value scalar(ImplicitLocOpBuilder &b, Type t, double v) {
  Value c = arith::ConstantOp::create(b, scalarAttr(b, signless(t), v));
  return castScalar(b, c, t);
}

Value constant(ImplicitLocOpBuilder &b, TypedAttr a) {
  if (auto i = dyn_cast<IntegerAttr>(a); i && isUnsignedInt(i.getType()))
    return castScalar(
        b,
        arith::ConstantOp::create(
            b, b.getIntegerAttr(signless(i.getType()), i.getValue())),
        i.getType());
  return arith::ConstantOp::create(b, a);
}

TypedAttr extremeAttr(Builder &b, Type t, bool negative) {
  if (auto f = dyn_cast<FloatType>(t))
    return b.getFloatAttr(t, APFloat::getInf(f.getFloatSemantics(), negative));
  unsigned w = t.getIntOrFloatBitWidth();
  if (w == 1)
    return b.getIntegerAttr(t, negative ? 0 : 1);
  if (isUnsignedInt(t))
    return b.getIntegerAttr(t, negative ? APInt::getZero(w)
                                        : APInt::getMaxValue(w));
  return b.getIntegerAttr(t, negative ? APInt::getSignedMinValue(w)
                                      : APInt::getSignedMaxValue(w));
}

namespace {

/// f32 to bf16, rounded to nearest even (NaN to the quiet NaN 0x7FC0), in
/// integer arithmetic: LLVM would call __truncsfbf2, which the model
/// libraries do not link.
Value truncToBF16(ImplicitLocOpBuilder &b, Value v) {
  Type i32 = b.getI32Type(), i16 = b.getI16Type();
  auto c = [&](int64_t x) { return scalar(b, i32, (double)x); };
  Value bits = arith::BitcastOp::create(b, i32, v);
  Value lsb =
      arith::AndIOp::create(b, arith::ShRUIOp::create(b, bits, c(16)), c(1));
  Value r =
      arith::AddIOp::create(b, bits, arith::AddIOp::create(b, c(0x7FFF), lsb));
  Value hi =
      arith::TruncIOp::create(b, i16, arith::ShRUIOp::create(b, r, c(16)));
  Value nan = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, v, v);
  hi = arith::SelectOp::create(b, nan, scalar(b, i16, 0x7FC0), hi);
  return arith::BitcastOp::create(b, b.getBF16Type(), hi);
}

} // namespace

Value convert(ImplicitLocOpBuilder &b, Value v, Type to) {
  Type from0 = v.getType();
  if (from0 == to)
    return v;
  if (to.isBF16() && !isFloat(from0)) // from an integer: through f32
    return convert(b, convert(b, v, b.getF32Type()), to);
  bool fu = isUnsignedInt(from0), tu = isUnsignedInt(to);
  v = toSignless(b, v);
  Type from = v.getType(), to0 = to;
  to = signless(to);
  auto done = [&](Value r) { return castScalar(b, r, to0); };
  if (from == to)
    return done(v);
  auto ff = dyn_cast<FloatType>(from), ft = dyn_cast<FloatType>(to);
  if (ff && ft && ft.isBF16()) {
    if (!ff.isF32())
      v = ff.getWidth() < 32
              ? (Value)arith::ExtFOp::create(b, b.getF32Type(), v)
              : (Value)arith::TruncFOp::create(b, b.getF32Type(), v);
    return truncToBF16(b, v);
  }
  if (ff && ft) {
    if (ff.getWidth() == ft.getWidth()) // bf16 <-> f16
      return arith::TruncFOp::create(
          b, to, arith::ExtFOp::create(b, b.getF32Type(), v));
    if (ff.getWidth() < ft.getWidth())
      return arith::ExtFOp::create(b, to, v);
    return arith::TruncFOp::create(b, to, v);
  }
  if (ff && to.isInteger(1))
    return arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, v,
                                 scalar(b, from, 0));
  if (ff)
    return done(tu ? (Value)arith::FPToUIOp::create(b, to, v)
                   : (Value)arith::FPToSIOp::create(b, to, v));
  if (ft && (from.isInteger(1) || fu))
    return arith::UIToFPOp::create(b, to, v);
  if (ft)
    return arith::SIToFPOp::create(b, to, v);
  if (to.isInteger(1))
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, v,
                                 scalar(b, from, 0));
  unsigned wf = from.getIntOrFloatBitWidth(), wt = to.getIntOrFloatBitWidth();
  if (from.isInteger(1) || (fu && wf < wt))
    return done(arith::ExtUIOp::create(b, to, v));
  if (wf < wt)
    return done(arith::ExtSIOp::create(b, to, v));
  return done(arith::TruncIOp::create(b, to, v));
}

Value maxOf(ImplicitLocOpBuilder &b, Value x, Value y) {
  Type t = x.getType();
  if (isFloat(t))
    return arith::MaximumFOp::create(b, x, y);
  if (t.isInteger(1))
    return arith::OrIOp::create(b, x, y);
  if (isUnsignedInt(t))
    return castScalar(
        b, arith::MaxUIOp::create(b, toSignless(b, x), toSignless(b, y)), t);
  return arith::MaxSIOp::create(b, x, y);
}

Value minOf(ImplicitLocOpBuilder &b, Value x, Value y) {
  Type t = x.getType();
  if (isFloat(t))
    return arith::MinimumFOp::create(b, x, y);
  if (t.isInteger(1))
    return arith::AndIOp::create(b, x, y);
  if (isUnsignedInt(t))
    return castScalar(
        b, arith::MinUIOp::create(b, toSignless(b, x), toSignless(b, y)), t);
  return arith::MinSIOp::create(b, x, y);
}

Value addOf(ImplicitLocOpBuilder &b, Value x, Value y) {
  Type t = x.getType();
  if (isFloat(t))
    return arith::AddFOp::create(b, x, y);
  return castScalar(
      b, arith::AddIOp::create(b, toSignless(b, x), toSignless(b, y)), t);
}

//===----------------------------------------------------------------------===//
// Lowerer: the state of lowering one onnx op
//===----------------------------------------------------------------------===//

OpFoldResult Lowerer::add(OpFoldResult x, OpFoldResult y) {
  if (isConstantIntValue(y, 0))
    return x;
  if (isConstantIntValue(x, 0))
    return y;
  return fold<arith::AddIOp>(x, y, [](int64_t p, int64_t q) { return p + q; });
}

OpFoldResult Lowerer::sub(OpFoldResult x, OpFoldResult y) {
  if (isConstantIntValue(y, 0))
    return x;
  return fold<arith::SubIOp>(x, y, [](int64_t p, int64_t q) { return p - q; });
}

OpFoldResult Lowerer::mul(OpFoldResult x, OpFoldResult y) {
  if (isConstantIntValue(y, 1))
    return x;
  if (isConstantIntValue(x, 1))
    return y;
  return fold<arith::MulIOp>(x, y, [](int64_t p, int64_t q) { return p * q; });
}

OpFoldResult Lowerer::ceilDiv(OpFoldResult x, OpFoldResult y) {
  if (isConstantIntValue(y, 1))
    return x;
  return fold<arith::CeilDivSIOp>(x, y, [](int64_t p, int64_t q) {
    return p / q + ((p % q != 0) && ((p < 0) == (q < 0)));
  });
}

OpFoldResult Lowerer::divTrunc(OpFoldResult x, OpFoldResult y) {
  if (isConstantIntValue(y, 1))
    return x;
  return fold<arith::DivSIOp>(
      x, y, [](int64_t p, int64_t q) { return q ? p / q : 0; });
}

OpFoldResult Lowerer::min(OpFoldResult x, OpFoldResult y) {
  return fold<arith::MinSIOp>(
      x, y, [](int64_t p, int64_t q) { return std::min(p, q); });
}

OpFoldResult Lowerer::max(OpFoldResult x, OpFoldResult y) {
  return fold<arith::MaxSIOp>(
      x, y, [](int64_t p, int64_t q) { return std::max(p, q); });
}

OpFoldResult Lowerer::unlessOne(OpFoldResult x, OpFoldResult y) {
  auto cx = getConstantIntValue(x), cy = getConstantIntValue(y);
  if (cx)
    return *cx == 1 ? y : x;
  if (cy && *cy == 1)
    return x;
  Value isOne =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, val(x), val(idx(1)));
  return OpFoldResult(
      arith::SelectOp::create(b, isOne, val(y), val(x)).getResult());
}

OpFoldResult Lowerer::dim(Value t, int64_t i) {
  int64_t s = typeOf(t).getDimSize(i);
  if (s != ShapedType::kDynamic)
    return idx(s);
  return OpFoldResult(tensor::DimOp::create(b, t, i).getResult());
}

SmallVector<OpFoldResult> Lowerer::dims(Value t) {
  SmallVector<OpFoldResult> r;
  for (int64_t i = 0, n = rankOf(t); i < n; ++i)
    r.push_back(dim(t, i));
  return r;
}

OpFoldResult Lowerer::numel(Value t) {
  OpFoldResult n = idx(1);
  for (OpFoldResult d : dims(t))
    n = mul(n, d);
  return n;
}

SmallVector<OpFoldResult> Lowerer::sizesOf(RankedTensorType t,
                                           ArrayRef<OpFoldResult> computed) {
  SmallVector<OpFoldResult> r(computed);
  for (int64_t i = 0; i < t.getRank(); ++i)
    if (!t.isDynamicDim(i))
      r[i] = idx(t.getDimSize(i));
  return r;
}

Value Lowerer::element(Value t, int64_t i) {
  SmallVector<Value> at;
  if (rankOf(t) == 1)
    at.push_back(arith::ConstantIndexOp::create(b, i));
  // The element of a constant keeps the constant's location (its
  // initializer's name): folded into a scalar, it still shows where the
  // weight went (--check-weights).
  Location loc = b.getLoc();
  if (Operation *d = t.getDefiningOp();
      d && d->hasTrait<OpTrait::ConstantLike>())
    loc = FusedLoc::get(b.getContext(), {loc, d->getLoc()});
  return tensor::ExtractOp::create(b, loc, t, at);
}

OpFoldResult Lowerer::elementIndex(Value t, int64_t i) {
  Value e = element(t, i);
  return OpFoldResult(
      arith::IndexCastOp::create(b, b.getIndexType(), e).getResult());
}

Value Lowerer::empty(RankedTensorType t, ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < t.getRank(); ++i)
    if (t.isDynamicDim(i))
      dyn.push_back(val(sizes[i]));
  return tensors().empty(t.getShape(), t.getElementType(), dyn);
}

Value Lowerer::filled(RankedTensorType t, ArrayRef<OpFoldResult> sizes,
                      TypedAttr v) {
  Value c = constant(b, v);
  return linalg::FillOp::create(b, ValueRange{c}, ValueRange{empty(t, sizes)})
      .getResult(0);
}

Value Lowerer::castTo(Value v, Type t) {
  if (v.getType() == t)
    return v;
  return tensor::CastOp::create(b, t, v);
}

Value Lowerer::generic(RankedTensorType outType, ArrayRef<OpFoldResult> sizes,
                       ValueRange ins, ArrayRef<AffineMap> maps, Body body) {
  common::TensorBuilder t = tensors();
  int64_t r = outType.getRank();
  SmallVector<AffineMap> all(maps);
  all.push_back(b.getMultiDimIdentityMap(r));
  Value init = empty(outType, sizes);
  return t.generic(init, ins, all, t.parallel(r),
                   [&](OpBuilder &nb, ValueRange a) {
                     ImplicitLocOpBuilder ib(t.loc, nb);
                     return body(ib, a.drop_back());
                   });
}

AffineMap Lowerer::broadcastMap(ShapedType t, ArrayRef<int64_t> outShape) {
  return common::broadcastMap(b.getContext(), t, outShape);
}

SmallVector<OpFoldResult> Lowerer::broadcastSizes(RankedTensorType out,
                                                  ValueRange ins) {
  return common::broadcastSizes(b, b.getLoc(), out, ins);
}

Value Lowerer::broadcastOperand(Value v, RankedTensorType out,
                                ArrayRef<OpFoldResult> sizes) {
  return common::broadcastAtRunTime(b, b.getLoc(), v, out.getShape(), sizes);
}

Value Lowerer::elementwise(RankedTensorType outType, ValueRange ins,
                           Body body) {
  SmallVector<OpFoldResult> sizes = broadcastSizes(outType, ins);
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  for (Value v : ins) {
    operands.push_back(broadcastOperand(v, outType, sizes));
    maps.push_back(broadcastMap(typeOf(v), outType.getShape()));
  }
  return generic(outType, sizes, operands, maps, body);
}

AffineMap Lowerer::dropMap(int64_t rank, ArrayRef<int64_t> dropped) {
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(dropped, i))
      exprs.push_back(b.getAffineDimExpr(i));
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

Value Lowerer::reduce(
    Value x, ArrayRef<int64_t> axes, Type acc, TypedAttr init, ValueRange rows,
    function_ref<Value(ImplicitLocOpBuilder &, Value, Value, ValueRange)>
        step) {
  RankedTensorType xt = typeOf(x);
  int64_t r = xt.getRank();
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> sizes;
  SmallVector<IteratorType> it;
  for (int64_t i = 0; i < r; ++i) {
    bool red = llvm::is_contained(axes, i);
    it.push_back(red ? IteratorType::reduction : IteratorType::parallel);
    if (!red) {
      shape.push_back(xt.getDimSize(i));
      sizes.push_back(dim(x, i));
    }
  }
  auto outType = RankedTensorType::get(shape, acc);
  Value init0 = filled(outType, sizes, init);
  AffineMap rowMap = dropMap(r, axes);
  SmallVector<Value> ins{x};
  ins.append(rows.begin(), rows.end());
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(r)};
  maps.append(rows.size() + 1, rowMap);
  auto g = linalg::GenericOp::create(
      b, TypeRange{outType}, ins, ValueRange{init0}, maps, it,
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value v = step(ib, a.back(), a[0], a.slice(1, rows.size()));
        linalg::YieldOp::create(ib, v);
      });
  return g.getResult(0);
}

void Lowerer::checkAll(Value t,
                       function_ref<Value(ImplicitLocOpBuilder &, Value)> ok,
                       const Twine &message, bool dataCheck) {
  RankedTensorType tt = typeOf(t);
  Value all;
  if (!dataCheck && tt.hasStaticShape() && tt.getNumElements() == 1) {
    all = ok(b, tensor::ExtractOp::create(
                    b, t, SmallVector<Value>(tt.getRank(), cidx(b, 0))));
  } else {
    int64_t r = tt.getRank();
    auto flagType = RankedTensorType::get({}, b.getI1Type());
    Value init = filled(flagType, {}, b.getBoolAttr(true));
    SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(r),
                                AffineMap::get(r, 0, {}, b.getContext())};
    SmallVector<IteratorType> it(r, IteratorType::reduction);
    auto g = linalg::GenericOp::create(
        b, TypeRange{flagType}, ValueRange{t}, ValueRange{init}, maps, it,
        [&](OpBuilder &nb, Location loc, ValueRange a) {
          ImplicitLocOpBuilder ib(loc, nb);
          linalg::YieldOp::create(
              ib, arith::AndIOp::create(ib, a[1], ok(ib, a[0])).getResult());
        });
    all = tensor::ExtractOp::create(b, g.getResult(0), ValueRange{});
  }
  auto check = cf::AssertOp::create(b, all, message.str());
  if (dataCheck)
    check->setAttr(kDataCheckAttr, b.getUnitAttr());
}

void Lowerer::checkIndexedDim(Value n, Value indices, const Twine &message) {
  std::optional<int64_t> cn = getConstantIntValue(n);
  if (cn && *cn > 0)
    return;
  Value empty;
  for (int64_t d = 0, r = rankOf(indices); d < r; ++d) {
    OpFoldResult s = dim(indices, d);
    if (auto c = getConstantIntValue(s)) {
      if (*c == 0)
        return;
      continue;
    }
    Value z =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, val(s), cidx(b, 0));
    empty = empty ? (Value)arith::OrIOp::create(b, empty, z) : z;
  }
  Value ok = cn ? (Value)arith::ConstantOp::create(b, b.getBoolAttr(false))
                : (Value)arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, n,
                                               cidx(b, 0));
  if (empty)
    ok = arith::OrIOp::create(b, ok, empty);
  cf::AssertOp::create(b, ok, message.str());
}

void Lowerer::checkBufferSize(ArrayRef<OpFoldResult> sizes, Type e,
                              const Twine &message) {
  bool runTime = llvm::any_of(sizes, [](OpFoldResult s) {
    auto v = dyn_cast<Value>(s);
    return v && !v.getDefiningOp<tensor::DimOp>();
  });
  if (!runTime)
    return;
  Type i128 = b.getIntegerType(128);
  int64_t bytes = std::max<int64_t>(1, e.getIntOrFloatBitWidth() / 8);
  Value cap = scalar(b, i128, (double)(int64_t(1) << 62));
  Value n = scalar(b, i128, 1);
  for (OpFoldResult s : sizes) {
    Value v = arith::IndexCastOp::create(b, i128, val(s));
    v = arith::MaxSIOp::create(b, v, scalar(b, i128, 0));
    n = arith::MinSIOp::create(b, arith::MulIOp::create(b, n, v), cap);
  }
  Value ok = arith::CmpIOp::create(
      b, arith::CmpIPredicate::sle, n,
      scalar(b, i128, (double)((int64_t(1) << 47) / bytes)));
  cf::AssertOp::create(b, ok, message.str());
}

Value Lowerer::countOf(Value x, ArrayRef<int64_t> axes, Type t) {
  OpFoldResult n = idx(1);
  for (int64_t a : axes)
    n = mul(n, dim(x, a));
  if (auto c = getConstantIntValue(n))
    return scalar(b, t, (double)*c);
  Value i = arith::IndexCastOp::create(b, b.getI64Type(), val(n));
  return convert(b, i, t);
}

Value Lowerer::insertUnitDims(Value v, RankedTensorType to,
                              ArrayRef<bool> unit) {
  SmallVector<ReassociationIndices> groups(rankOf(v));
  SmallVector<OpFoldResult> sizes;
  int64_t k = -1;
  for (int64_t j = 0; j < to.getRank(); ++j) {
    if (!unit[j])
      ++k;
    if (!groups.empty())
      groups[std::max<int64_t>(k, 0)].push_back(j);
    sizes.push_back(unit[j] ? idx(1) : dim(v, k));
  }
  return tensor::ExpandShapeOp::create(b, to, v, groups, sizes);
}

Value Lowerer::dropUnitDims(Value v, RankedTensorType to, ArrayRef<bool> drop) {
  int64_t outRank = llvm::count(drop, false);
  SmallVector<ReassociationIndices> groups(outRank);
  int64_t k = -1;
  for (int64_t i = 0; i < rankOf(v); ++i) {
    if (!drop[i])
      ++k;
    if (!groups.empty())
      groups[std::max<int64_t>(k, 0)].push_back(i);
  }
  return castTo(tensor::CollapseShapeOp::create(b, v, groups), to);
}

Value Lowerer::reshapeStatic(Value v, RankedTensorType to) {
  auto st = typeOf(v);
  if (st == to)
    return v;
  if (auto g = getReassociationIndicesForReshape(st, to)) {
    if (st.getRank() > to.getRank())
      return tensor::CollapseShapeOp::create(b, to, v, *g);
    if (st.getRank() < to.getRank())
      return tensor::ExpandShapeOp::create(b, to, v, *g);
  }
  auto flat = RankedTensorType::get({st.getNumElements()}, st.getElementType());
  return regroup(regroup(v, flat), to);
}

Value Lowerer::regroup(Value v, RankedTensorType to) {
  auto st = typeOf(v);
  if (st == to)
    return v;
  SmallVector<ReassociationIndices> groups;
  int64_t hi = std::max(st.getRank(), to.getRank());
  if (std::min(st.getRank(), to.getRank()) == 1)
    groups.push_back(llvm::to_vector(llvm::seq<int64_t>(0, hi)));
  if (st.getRank() > to.getRank())
    return tensor::CollapseShapeOp::create(b, to, v, groups);
  return tensor::ExpandShapeOp::create(b, to, v, groups);
}

Value Lowerer::reshapeDynamic(Value v, RankedTensorType to,
                              ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> s;
  for (OpFoldResult f : sizes)
    s.push_back(val(f));
  Value shape = tensor::FromElementsOp::create(
      b, RankedTensorType::get({(int64_t)s.size()}, b.getIndexType()), s);
  return tensor::ReshapeOp::create(b, to, v, shape);
}

//===----------------------------------------------------------------------===//
// Axes and reshapes
//===----------------------------------------------------------------------===//

std::optional<int64_t> normAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::optional<SmallVector<int64_t>> constantAxes(Value v, int64_t rank) {
  auto axes = onnx::getConstantInts(v);
  if (!axes)
    return std::nullopt;
  for (int64_t &a : *axes) {
    auto n = normAxis(a, rank);
    if (!n ||
        llvm::is_contained(ArrayRef(*axes).take_front(&a - axes->data()), *n))
      return std::nullopt; // out of range or repeated
    a = *n;
  }
  return axes;
}

Value cidx(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

Value constantElement(ImplicitLocOpBuilder &b, Value v, int64_t i) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(onnx::getConstantAttr(v));
  if (!dense || i < 0 || i >= dense.getNumElements() || !v.getDefiningOp())
    return Value();
  ImplicitLocOpBuilder cb(v.getDefiningOp()->getLoc(), b);
  return constant(cb, cast<TypedAttr>(dense.getValues<Attribute>()[i]));
}

Value indexAt(ImplicitLocOpBuilder &b, Value t, Value i) {
  return arith::IndexCastOp::create(b, b.getIndexType(),
                                    tensor::ExtractOp::create(b, t, i));
}

Value normAxisValue(ImplicitLocOpBuilder &b, Value a, int64_t rank) {
  Value neg =
      arith::CmpIOp::create(b, arith::CmpIPredicate::slt, a, cidx(b, 0));
  return arith::SelectOp::create(b, neg,
                                 arith::AddIOp::create(b, a, cidx(b, rank)), a);
}

Value clampedIndex(ImplicitLocOpBuilder &b, Value i, Value n) {
  i = arith::IndexCastOp::create(b, b.getIndexType(), i);
  Value neg =
      arith::CmpIOp::create(b, arith::CmpIPredicate::slt, i, cidx(b, 0));
  i = arith::SelectOp::create(b, neg, arith::AddIOp::create(b, i, n), i);
  // Below -n it is still negative: as unsigned, past n - 1 too.
  return arith::MinUIOp::create(b, i, arith::SubIOp::create(b, n, cidx(b, 1)));
}

std::string axisOutOfRange(Operation *op) {
  return "gatec: an axis out of range in " + describeOp(op->getLoc()) + " (" +
         op->getName().stripDialect().str() + ")";
}

SmallVector<Value> axisFlags(Lowerer &l, Value axes, int64_t rank) {
  ImplicitLocOpBuilder &b = l.b;
  // An axis outside [-rank, rank - 1] would name no dim (onnxruntime fails
  // the run): checked once over the axes.
  l.checkAll(
      axes,
      [&](ImplicitLocOpBuilder &ib, Value a) -> Value {
        Value v = arith::IndexCastOp::create(ib, ib.getIndexType(), a);
        return arith::AndIOp::create(
            ib,
            arith::CmpIOp::create(ib, arith::CmpIPredicate::sge, v,
                                  cidx(ib, -rank)),
            arith::CmpIOp::create(ib, arith::CmpIPredicate::slt, v,
                                  cidx(ib, rank)));
      },
      axisOutOfRange(l.op));
  SmallVector<Value> init(rank, scalar(b, b.getI1Type(), 0));
  auto loop = scf::ForOp::create(
      b, cidx(b, 0), l.val(l.dim(axes, 0)), cidx(b, 1), init,
      [&](OpBuilder &nb, Location loc, Value i, ValueRange f) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value a = normAxisValue(ib, indexAt(ib, axes, i), rank);
        SmallVector<Value> nf;
        for (int64_t d = 0; d < rank; ++d)
          nf.push_back(arith::OrIOp::create(
              ib, f[d],
              arith::CmpIOp::create(ib, arith::CmpIPredicate::eq, a,
                                    cidx(ib, d))));
        scf::YieldOp::create(ib, nf);
      });
  return SmallVector<Value>(loop.getResults());
}

SmallVector<OpFoldResult> keptSizes(ImplicitLocOpBuilder &b,
                                    ArrayRef<Value> flag, ArrayRef<Value> dims,
                                    int64_t n) {
  SmallVector<Value> before; // not-flagged dims before d
  Value c = cidx(b, 0);
  for (Value f : flag) {
    before.push_back(c);
    c = arith::AddIOp::create(
        b, c, arith::SelectOp::create(b, f, cidx(b, 0), cidx(b, 1)));
  }
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < n; ++i) {
    Value s = cidx(b, 0);
    for (size_t d = 0; d < dims.size(); ++d) {
      Value is = arith::AndIOp::create(
          b, arith::XOrIOp::create(b, flag[d], scalar(b, b.getI1Type(), 1)),
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, before[d],
                                cidx(b, i)));
      s = arith::SelectOp::create(b, is, dims[d], s);
    }
    sizes.push_back(s);
  }
  return sizes;
}

Value reshapeTo(Lowerer &l, Value v, RankedTensorType to,
                ArrayRef<OpFoldResult> sizes) {
  if (to.hasStaticShape() && l.typeOf(v).hasStaticShape())
    return l.reshapeStatic(v, to);
  auto dynT = RankedTensorType::get(
      SmallVector<int64_t>(to.getRank(), ShapedType::kDynamic),
      to.getElementType());
  return l.castTo(l.reshapeDynamic(v, dynT, l.sizesOf(dynT, sizes)), to);
}

} // namespace gatec::conversion::onnx_to_linalg
