//===- OnnxFolders.cpp - constant folding of small onnx tensors -----------===//
//
// Folds ops whose operands are small constants: the shape arithmetic that
// exporters emit before every Reshape (Shape, Gather, Unsqueeze, Concat,
// Cast, Slice, Range, ...) and scalar arithmetic such as sqrt(head_dim).
// Only constants are folded: no algebraic identity (x - (x + 1) stays), so
// floating-point results are those an ONNX runtime computes element-wise.
//
//===----------------------------------------------------------------------===//
#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include <cmath>

using namespace mlir;
using namespace gatec::onnx;

namespace {
/// Folded results larger than this are left to run time (splats excepted).
constexpr int64_t kMaxFoldElements = 1024;
/// ConstantOfShape folds to a splat up to this many elements (256 KiB of
/// f32); a larger one stays an op, filled at run time, instead of a constant
/// that later phases materialise byte by byte (2^31 elements ran the
/// translation to LLVM IR out of memory).
constexpr int64_t kMaxSplatFoldElements = int64_t(1) << 16;

/// A constant's elements as int64 (integer/bool types) or double (f32/f64).
struct Values {
  ShapedType type;
  bool isFloat = false;
  SmallVector<int64_t> ints;
  SmallVector<double> floats;
  int64_t size() const { return isFloat ? floats.size() : ints.size(); }
};

bool foldableElement(Type e) {
  return e.isF32() || e.isF64() ||
         (e.isInteger() && e.getIntOrFloatBitWidth() <= 64);
}

std::optional<Values> read(Attribute a) {
  auto attr = dyn_cast_or_null<ElementsAttr>(a);
  if (!attr || !attr.getShapedType().hasStaticShape() ||
      !foldableElement(attr.getElementType()) ||
      attr.getNumElements() > kMaxFoldElements)
    return std::nullopt;
  Values v;
  v.type = attr.getShapedType();
  v.isFloat = isa<FloatType>(attr.getElementType());
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (v.isFloat) {
      for (const APFloat &x : dense.getValues<APFloat>()) {
        APFloat d = x;
        bool lost;
        d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
        v.floats.push_back(d.convertToDouble());
      }
    } else {
      bool zext = attr.getElementType().isUnsignedInteger() ||
                  attr.getElementType().isInteger(1);
      for (const APInt &x : dense.getValues<APInt>())
        v.ints.push_back(zext ? (int64_t)x.getZExtValue() : x.getSExtValue());
    }
    return v;
  }
  return std::nullopt;
}

/// Builds a DenseElementsAttr of `type` from int64/double values.
Attribute makeAttr(ShapedType type, ArrayRef<int64_t> ints,
                   ArrayRef<double> fs) {
  Type e = type.getElementType();
  if (!type.hasStaticShape() || !foldableElement(e))
    return {};
  if (auto ft = dyn_cast<FloatType>(e)) {
    SmallVector<APFloat> out;
    for (size_t i = 0; i < (fs.empty() ? ints.size() : fs.size()); ++i) {
      double d = fs.empty() ? (double)ints[i] : fs[i];
      APFloat x(d);
      bool lost;
      x.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      out.push_back(x);
    }
    return DenseElementsAttr::get(type, out);
  }
  unsigned w = e.getIntOrFloatBitWidth();
  if (w == 1) {
    SmallVector<bool> out;
    for (size_t i = 0; i < (fs.empty() ? ints.size() : fs.size()); ++i)
      out.push_back(fs.empty() ? ints[i] != 0 : fs[i] != 0.0);
    return DenseElementsAttr::get(type, out);
  }
  SmallVector<APInt> out;
  for (size_t i = 0; i < (fs.empty() ? ints.size() : fs.size()); ++i) {
    int64_t x = fs.empty() ? ints[i] : (int64_t)fs[i];
    out.push_back(
        APInt(w, (uint64_t)x, /*isSigned=*/true, /*implicitTrunc=*/true));
  }
  return DenseElementsAttr::get(type, out);
}

Attribute makeAttr(ShapedType type, const Values &v) {
  return makeAttr(type,
                  v.isFloat ? ArrayRef<int64_t>() : ArrayRef<int64_t>(v.ints),
                  v.isFloat ? ArrayRef<double>(v.floats) : ArrayRef<double>());
}

ShapedType resultType(Operation *op) {
  auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!t || !t.hasStaticShape() || t.getNumElements() > kMaxFoldElements)
    return {};
  return t;
}

/// Index of the element of an input of shape `in` that broadcasts to the
/// element `linear` of an output of shape `out`.
int64_t broadcastIndex(int64_t linear, ArrayRef<int64_t> out,
                       ArrayRef<int64_t> in) {
  int64_t idx = 0, stride = 1;
  for (int64_t d = out.size() - 1, e = in.size() - 1; d >= 0; --d, --e) {
    int64_t coord = linear % out[d];
    linear /= out[d];
    if (e >= 0) {
      if (in[e] != 1)
        idx += coord * stride;
      stride *= in[e];
    }
  }
  return idx;
}

/// Element-wise fold of n operands with broadcasting; `fi`/`ff` compute one
/// element from integer / floating-point inputs (the operand element type
/// decides which).
template <typename FI, typename FF>
Attribute foldElementwise(Operation *op, ArrayRef<Attribute> operands, FI fi,
                          FF ff) {
  ShapedType rt = resultType(op);
  if (!rt)
    return {};
  SmallVector<Values> vs;
  for (Attribute a : operands) {
    auto v = read(a);
    if (!v)
      return {};
    vs.push_back(*v);
  }
  bool isFloat = vs.back().isFloat;
  for (const Values &v : ArrayRef<Values>(vs).drop_front(vs.size() > 2 ? 1 : 0))
    if (v.isFloat != isFloat)
      return {};
  int64_t n = rt.getNumElements();
  SmallVector<int64_t> oi;
  SmallVector<double> of;
  for (int64_t k = 0; k < n; ++k) {
    SmallVector<int64_t> xi;
    SmallVector<double> xf;
    for (const Values &v : vs) {
      int64_t j = broadcastIndex(k, rt.getShape(), v.type.getShape());
      if (v.isFloat)
        xf.push_back(v.floats[j]);
      else
        xi.push_back(v.ints[j]);
      if (v.isFloat)
        xi.push_back(0);
      else
        xf.push_back((double)v.ints[j]);
    }
    if (isFloat) {
      auto r = ff(xi, xf);
      if (!r)
        return {};
      of.push_back(*r);
    } else {
      auto r = fi(xi);
      if (!r)
        return {};
      oi.push_back(*r);
    }
  }
  return makeAttr(rt, oi, of);
}

using IntArgs = ArrayRef<int64_t>;
using FltArgs = ArrayRef<double>;
using OptI = std::optional<int64_t>;
using OptF = std::optional<double>;
} // namespace

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

/// A shape vector (Shape, or Gather/Slice of one) whose elements are all
/// static dims, as a constant of type rt.
static OpFoldResult foldKnownShape(Value v, ShapedType rt) {
  auto part = getPartialInts(v);
  if (!rt || !rt.hasStaticShape() || !part ||
      (int64_t)part->size() != rt.getNumElements())
    return {};
  SmallVector<int64_t> out;
  for (auto d : *part) {
    if (!d)
      return {};
    out.push_back(*d);
  }
  return makeAttr(rt, out, {});
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  return foldKnownShape(getResult(), resultType(*this));
}

OpFoldResult SizeOp::fold(FoldAdaptor) {
  auto t = dyn_cast<RankedTensorType>(getData().getType());
  if (!t || !t.hasStaticShape())
    return {};
  return makeAttr(cast<ShapedType>(getType()), {t.getNumElements()}, {});
}

OpFoldResult GatherOp::fold(FoldAdaptor a) {
  ShapedType rt = resultType(*this);
  if (!rt)
    return {};
  // Gather(Shape(x), i) where the gathered dimensions of x are static.
  if (!a.getData() && getAxis() == 0)
    return foldKnownShape(getResult(), rt);
  auto data = read(a.getData());
  auto idx = read(a.getIndices());
  if (!data || !idx || idx->isFloat)
    return {};
  ArrayRef<int64_t> ds = data->type.getShape();
  int64_t axis = (int64_t)getAxis();
  if (axis < 0)
    axis += ds.size();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= ds[i];
  for (size_t i = axis + 1; i < ds.size(); ++i)
    inner *= ds[i];
  Values out;
  out.isFloat = data->isFloat;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j : idx->ints) {
      if (j < 0)
        j += ds[axis];
      if (j < 0 || j >= ds[axis])
        return {};
      for (int64_t i = 0; i < inner; ++i) {
        int64_t src = (o * ds[axis] + j) * inner + i;
        if (data->isFloat)
          out.floats.push_back(data->floats[src]);
        else
          out.ints.push_back(data->ints[src]);
      }
    }
  return makeAttr(rt, out);
}

/// Ops that only change the shape: the folded constant is the input's
/// elements under the result type.
static OpFoldResult foldReshapeLike(Operation *op, Attribute input) {
  ShapedType rt = resultType(op);
  auto v = read(input);
  if (!rt || !v || v->size() != rt.getNumElements())
    return {};
  return makeAttr(rt, *v);
}
OpFoldResult ReshapeOp::fold(FoldAdaptor a) {
  return foldReshapeLike(*this, a.getData());
}
OpFoldResult SqueezeOp::fold(FoldAdaptor a) {
  return foldReshapeLike(*this, a.getData());
}
OpFoldResult UnsqueezeOp::fold(FoldAdaptor a) {
  return foldReshapeLike(*this, a.getData());
}

OpFoldResult ExpandOp::fold(FoldAdaptor a) {
  return foldElementwise(
      *this, {a.getInput()}, [](IntArgs x) -> OptI { return x[0]; },
      [](IntArgs, FltArgs x) -> OptF { return x[0]; });
}

OpFoldResult CastOp::fold(FoldAdaptor a) {
  // A cast to the type the input already has is the identity.
  if (getInput().getType() == getType())
    return getInput();
  ShapedType rt = resultType(*this);
  auto v = read(a.getInput());
  if (!rt || !v)
    return {};
  Type to = rt.getElementType();
  if (v->isFloat && !isa<FloatType>(to)) {
    // Float to integer truncates toward zero; out-of-range is undefined in
    // ONNX, so leave it to run time.
    for (double d : v->floats)
      if (!std::isfinite(d) || std::fabs(d) > 9.0e15)
        return {};
    Values t;
    for (double d : v->floats)
      t.ints.push_back(to.isInteger(1) ? d != 0.0 : (int64_t)std::trunc(d));
    return makeAttr(rt, t);
  }
  return makeAttr(rt, *v);
}

OpFoldResult ConcatOp::fold(FoldAdaptor a) {
  ShapedType rt = resultType(*this);
  if (!rt)
    return {};
  SmallVector<Values> vs;
  for (Attribute x : a.getInputs()) {
    auto v = read(x);
    if (!v)
      return {};
    vs.push_back(*v);
  }
  int64_t rank = rt.getRank();
  int64_t axis = (int64_t)getAxis();
  if (axis < 0)
    axis += rank;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= rt.getDimSize(i);
  Values out;
  out.isFloat = vs[0].isFloat;
  for (int64_t o = 0; o < outer; ++o)
    for (const Values &v : vs) {
      int64_t chunk = v.size() / std::max<int64_t>(outer, 1);
      for (int64_t i = 0; i < chunk; ++i) {
        if (v.isFloat)
          out.floats.push_back(v.floats[o * chunk + i]);
        else
          out.ints.push_back(v.ints[o * chunk + i]);
      }
    }
  return makeAttr(rt, out);
}

OpFoldResult SliceOp::fold(FoldAdaptor a) {
  ShapedType rt = resultType(*this);
  // Slice(Shape(x), ...) where the sliced dimensions of x are static (the
  // head dim of a [B, H, T, D] tensor read for the attention scale).
  if (rt && !a.getData())
    return foldKnownShape(getResult(), rt);
  auto data = read(a.getData());
  auto starts = getConstantInts(getStarts()), ends = getConstantInts(getEnds());
  if (!rt || !data || !starts || !ends)
    return {};
  ArrayRef<int64_t> ds = data->type.getShape();
  int64_t rank = ds.size();
  SmallVector<int64_t> st(rank, 0), step(rank, 1);
  std::optional<SmallVector<int64_t>> axes, steps;
  if (!isa<NoneType>(getAxes().getType()) &&
      !(axes = getConstantInts(getAxes())))
    return {};
  if (!isa<NoneType>(getSteps().getType()) &&
      !(steps = getConstantInts(getSteps())))
    return {};
  if (ends->size() != starts->size() ||
      (axes && axes->size() != starts->size()) ||
      (steps && steps->size() != starts->size()))
    return {};
  for (size_t i = 0; i < starts->size(); ++i) {
    int64_t ax = axes ? (*axes)[i] : i;
    if (ax < -rank || ax >= rank)
      return {};
    if (ax < 0)
      ax += rank;
    int64_t s = steps ? (*steps)[i] : 1;
    int64_t b = (*starts)[i], d = ds[ax];
    if (b < 0)
      b += d;
    b = s > 0 ? std::clamp<int64_t>(b, 0, d) : std::clamp<int64_t>(b, 0, d - 1);
    st[ax] = b;
    step[ax] = s;
  }
  // Walk the (already inferred) result shape.
  Values out;
  out.isFloat = data->isFloat;
  int64_t n = rt.getNumElements();
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = k, src = 0, stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t c = rem % rt.getDimSize(d);
      rem /= rt.getDimSize(d);
      src += (st[d] + c * step[d]) * stride;
      stride *= ds[d];
    }
    if (data->isFloat)
      out.floats.push_back(data->floats[src]);
    else
      out.ints.push_back(data->ints[src]);
  }
  return makeAttr(rt, out);
}

#define BINARY_FOLD(OP, INT_EXPR, FLT_EXPR)                                    \
  OpFoldResult OP::fold(FoldAdaptor a) {                                       \
    return foldElementwise(                                                    \
        *this, {a.getA(), a.getB()}, [](IntArgs x) -> OptI { INT_EXPR; },      \
        [](IntArgs, FltArgs x) -> OptF { FLT_EXPR; });                         \
  }
// Integer Add/Sub/Mul wrap around in two's complement (as numpy and
// onnxruntime compute them), done in uint64: signed overflow is UB in C++.
BINARY_FOLD(AddOp, return (int64_t)((uint64_t)x[0] + (uint64_t)x[1]),
            return (float)x[0] + (float)x[1])
BINARY_FOLD(SubOp, return (int64_t)((uint64_t)x[0] - (uint64_t)x[1]),
            return (float)x[0] - (float)x[1])
BINARY_FOLD(MulOp, return (int64_t)((uint64_t)x[0] * (uint64_t)x[1]),
            return (float)x[0] * (float)x[1])
BINARY_FOLD(DivOp, if (x[1] == 0 ||
                       (x[1] == -1 && x[0] == INT64_MIN)) return std::nullopt;
            // ONNX integer Div truncates (C semantics).
            return x[0] / x[1], return (float)x[0] / (float)x[1])
BINARY_FOLD(EqualOp, return x[0] == x[1], return x[0] == x[1] ? 1.0 : 0.0)
BINARY_FOLD(LessOp, return x[0] < x[1], return x[0] < x[1] ? 1.0 : 0.0)
#undef BINARY_FOLD

OpFoldResult NegOp::fold(FoldAdaptor a) {
  return foldElementwise(
      *this, {a.getX()}, [](IntArgs x) -> OptI { return -x[0]; },
      [](IntArgs, FltArgs x) -> OptF { return -x[0]; });
}

OpFoldResult SqrtOp::fold(FoldAdaptor a) {
  return foldElementwise(
      *this, {a.getX()}, [](IntArgs) -> OptI { return std::nullopt; },
      [](IntArgs, FltArgs x) -> OptF { return std::sqrt((float)x[0]); });
}

OpFoldResult WhereOp::fold(FoldAdaptor a) {
  return foldElementwise(
      *this, {a.getCondition(), a.getX(), a.getY()},
      [](IntArgs x) -> OptI { return x[0] ? x[1] : x[2]; },
      [](IntArgs c, FltArgs x) -> OptF { return c[0] ? x[1] : x[2]; });
}

OpFoldResult RangeOp::fold(FoldAdaptor) {
  ShapedType rt = resultType(*this);
  if (!rt)
    return {};
  auto s = getConstantDoubles(getStart()), d = getConstantDoubles(getDelta());
  if (!s || !d)
    return {};
  SmallVector<double> out;
  for (int64_t i = 0; i < rt.getNumElements(); ++i)
    out.push_back((*s)[0] + i * (*d)[0]);
  if (isa<FloatType>(rt.getElementType()))
    return makeAttr(rt, {}, out);
  SmallVector<int64_t> ints(out.begin(), out.end());
  return makeAttr(rt, ints, {});
}

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  auto t = dyn_cast<RankedTensorType>(getType());
  if (!t || !t.hasStaticShape() || t.getNumElements() > kMaxSplatFoldElements)
    return {};
  if (!getValue())
    return DenseElementsAttr::get(t, FloatAttr::get(t.getElementType(), 0.0));
  auto dense = dyn_cast<DenseElementsAttr>(*getValue());
  if (!dense)
    return {};
  return DenseElementsAttr::get(t, dense.getValues<Attribute>()[0]);
}
