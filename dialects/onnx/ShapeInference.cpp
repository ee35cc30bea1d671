//===- ShapeInference.cpp - result types of onnx ops ----------------------===//
//
// One inferResultTypes per op (ShapeInferenceOpInterface), following the
// shape rules of each op's ONNX specification. Unknown sizes are dynamic.
//
//===----------------------------------------------------------------------===//
#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include <cctype>
#include <map>

using namespace mlir;
using namespace gatec::onnx;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;
using Shape = SmallVector<int64_t>;
using Types = SmallVectorImpl<Type>;

Type elemOf(Value v) { return getElementTypeOrSelf(v.getType()); }

std::optional<Shape> shapeOf(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return Shape(t.getShape());
  return std::nullopt;
}

Type tensorOf(std::optional<Shape> shape, Type elem) {
  if (shape)
    return RankedTensorType::get(*shape, elem);
  return UnrankedTensorType::get(elem);
}

bool isNone(Value v) { return !v || isa<NoneType>(v.getType()); }

/// Normalises an ONNX axis in [-rank, rank) (or [-rank-1, rank] when
/// `inclusive`), emitting an error otherwise.
FailureOr<int64_t> normAxis(Operation *op, int64_t axis, int64_t rank,
                            StringRef what = "axis", bool inclusive = false) {
  int64_t hi = inclusive ? rank + 1 : rank;
  if (axis < -hi || axis >= hi)
    return op->emitOpError()
           << what << " " << axis << " is out of range for rank " << rank;
  return axis < 0 ? axis + hi : axis;
}

/// Numpy-style multidirectional broadcasting (ONNX Broadcasting.md).
FailureOr<std::optional<Shape>> broadcast(Operation *op, ValueRange values) {
  Shape out;
  for (Value v : values) {
    if (isNone(v))
      continue;
    auto s = shapeOf(v);
    if (!s)
      return std::optional<Shape>();
    if (s->size() > out.size())
      out.insert(out.begin(), s->size() - out.size(), 1);
    size_t off = out.size() - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t &a = out[off + i];
      int64_t b = (*s)[i];
      if (a == 1)
        a = b;
      else if (b == 1 || a == b)
        continue;
      else if (a == kDyn)
        a = b;
      else if (b == kDyn)
        continue;
      else
        return op->emitOpError() << "operands are not broadcastable: dimension "
                                 << a << " vs " << b;
    }
  }
  return std::optional<Shape>(out);
}

LogicalResult sameAsFirst(Operation *op, Types &r) {
  r.assign(op->getNumResults(), op->getOperand(0).getType());
  return success();
}

LogicalResult checkSameElementType(Operation *op, ValueRange vs) {
  Type e;
  for (Value v : vs) {
    if (isNone(v))
      continue;
    if (e && elemOf(v) != e)
      return op->emitOpError()
             << "operands must have the same element type, got " << e << " and "
             << elemOf(v);
    e = elemOf(v);
  }
  return success();
}

LogicalResult broadcastTo(Operation *op, ValueRange vs, Type elem, Types &r,
                          bool sameElem = true) {
  if (vs.empty())
    return op->emitOpError() << "needs at least one input";
  if (sameElem && failed(checkSameElementType(op, vs)))
    return failure();
  auto s = broadcast(op, vs);
  if (failed(s))
    return failure();
  r.push_back(tensorOf(*s, elem));
  return success();
}

/// A result shape from partially known shape elements (Reshape/Expand/...).
Shape fromPartial(ArrayRef<std::optional<int64_t>> p) {
  Shape s;
  for (auto d : p)
    s.push_back(d ? *d : kDyn);
  return s;
}

LogicalResult reduceShape(Operation *op, Value data, Value axesV, bool keepdims,
                          bool noopWithEmptyAxes, Types &r) {
  auto s = shapeOf(data);
  Type e = elemOf(data);
  std::optional<SmallVector<int64_t>> axes;
  if (isNone(axesV))
    axes = SmallVector<int64_t>();
  else
    axes = getConstantInts(axesV);
  // Axes known at run time only: their number may be known from the type.
  auto axesT = dyn_cast<RankedTensorType>(axesV.getType());
  int64_t nAxes = axesT && axesT.getRank() == 1 ? axesT.getDimSize(0) : kDyn;
  if (!axes && nAxes == 0)
    axes = SmallVector<int64_t>();
  if (!s) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  int64_t rank = s->size();
  if (!axes) {
    if (keepdims) { // unit dims stay 1, others are 1 or kept
      Shape out;
      for (int64_t d : *s)
        out.push_back(d == 1 ? 1 : kDyn);
      r.push_back(RankedTensorType::get(out, e));
    } else if (nAxes != kDyn && nAxes <= rank) { // distinct axes
      r.push_back(RankedTensorType::get(Shape(rank - nAxes, kDyn), e));
    } else {
      r.push_back(UnrankedTensorType::get(e));
    }
    return success();
  }
  if (axes->empty()) {
    if (noopWithEmptyAxes) {
      r.push_back(data.getType());
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      axes->push_back(i);
  }
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : *axes) {
    auto n = normAxis(op, a, rank, "reduction axis");
    if (failed(n))
      return failure();
    reduced[*n] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back((*s)[i]);
    else if (keepdims)
      out.push_back(1);
  }
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

/// 1 + floor((end-start-1)/step) elements of a Slice along one dimension.
int64_t sliceLen(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto clampIdx = [&](int64_t i, bool isEnd) {
    if (i < 0)
      i += dim;
    if (step > 0)
      return std::clamp<int64_t>(i, 0, dim);
    return std::clamp<int64_t>(i, -1, dim - 1);
  };
  start = clampIdx(start, false);
  end = clampIdx(end, true);
  // ceil(distance / |step|) without overflow: the distance is at most
  // dim + 1, the step any int64 (INT64_MIN has no negation in int64).
  if (step > 0)
    return end > start ? (end - start - 1) / step + 1 : 0;
  if (start <= end)
    return 0;
  uint64_t mag = uint64_t(0) - uint64_t(step);
  return int64_t(uint64_t(start - end - 1) / mag + 1);
}

/// The largest static size gatec accepts for a dimension or a tensor.
constexpr int64_t kMaxSize = int64_t(1) << 48;

/// The largest rank a shape read at run time may give (ONNX sets none;
/// numpy allows 64).
constexpr int64_t kMaxRank = 64;

/// a·b for static dims; dynamic if either is; kMaxSize + 1 on overflow
/// (rejected by validShape).
int64_t mulDims(int64_t a, int64_t b) {
  if (a == kDyn || b == kDyn)
    return kDyn;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxSize)
    return kMaxSize + 1;
  return r;
}

/// Static dims must be in [0, 2^48] and so must their product.
LogicalResult validShape(Operation *op, ArrayRef<int64_t> shape) {
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d == kDyn)
      continue;
    if (d < 0)
      return op->emitOpError() << "gives a negative dimension " << d;
    total = mulDims(total, d);
    if (d > kMaxSize || total > kMaxSize)
      return op->emitOpError() << "gives a tensor larger than 2^48 elements";
  }
  return success();
}
int64_t divDims(int64_t a, int64_t b) {
  return a == kDyn || b == kDyn || b == 0 ? kDyn : a / b;
}
} // namespace

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

#define SAME_AS_FIRST(OP)                                                      \
  LogicalResult OP::inferResultTypes(Types &r) {                               \
    return sameAsFirst(getOperation(), r);                                     \
  }
SAME_AS_FIRST(AbsOp)
SAME_AS_FIRST(CeilOp)
SAME_AS_FIRST(ClipOp)
SAME_AS_FIRST(CosOp)
SAME_AS_FIRST(ErfOp)
SAME_AS_FIRST(ExpOp)
SAME_AS_FIRST(FloorOp)
SAME_AS_FIRST(GeluOp)
SAME_AS_FIRST(HardSigmoidOp)
SAME_AS_FIRST(IdentityOp)
SAME_AS_FIRST(LeakyReluOp)
SAME_AS_FIRST(LogOp)
SAME_AS_FIRST(NegOp)
SAME_AS_FIRST(NotOp)
SAME_AS_FIRST(ReciprocalOp)
SAME_AS_FIRST(ReluOp)
SAME_AS_FIRST(SigmoidOp)
SAME_AS_FIRST(SignOp)
SAME_AS_FIRST(SinOp)
SAME_AS_FIRST(SoftplusOp)
SAME_AS_FIRST(SqrtOp)
SAME_AS_FIRST(TanhOp)
SAME_AS_FIRST(RotaryEmbeddingOp)
SAME_AS_FIRST(RMSNormalizationOp)
#undef SAME_AS_FIRST

#define SAME_SHAPE_BOOL(OP)                                                    \
  LogicalResult OP::inferResultTypes(Types &r) {                               \
    r.push_back(                                                               \
        tensorOf(shapeOf(getOperand()), IntegerType::get(getContext(), 1)));   \
    return success();                                                          \
  }
SAME_SHAPE_BOOL(IsInfOp)
SAME_SHAPE_BOOL(IsNaNOp)
#undef SAME_SHAPE_BOOL

#define SOFTMAX_LIKE(OP)                                                       \
  LogicalResult OP::inferResultTypes(Types &r) {                               \
    if (auto s = shapeOf(getInput()))                                          \
      if (failed(normAxis(getOperation(), (int64_t)getAxis(), s->size())))     \
        return failure();                                                      \
    return sameAsFirst(getOperation(), r);                                     \
  }
SOFTMAX_LIKE(SoftmaxOp)
SOFTMAX_LIKE(LogSoftmaxOp)
#undef SOFTMAX_LIKE

#define BROADCAST_SAME(OP)                                                     \
  LogicalResult OP::inferResultTypes(Types &r) {                               \
    if (getOperation()->getNumOperands() == 0)                                 \
      return emitOpError() << "needs at least one input";                      \
    return broadcastTo(getOperation(), getOperation()->getOperands(),          \
                       elemOf(getOperand(0)), r);                              \
  }
BROADCAST_SAME(AddOp)
BROADCAST_SAME(SubOp)
BROADCAST_SAME(MulOp)
BROADCAST_SAME(DivOp)
BROADCAST_SAME(MaxOp)
BROADCAST_SAME(MinOp)
BROADCAST_SAME(SumOp)
#undef BROADCAST_SAME

#define BROADCAST_BOOL(OP)                                                     \
  LogicalResult OP::inferResultTypes(Types &r) {                               \
    return broadcastTo(getOperation(), getOperation()->getOperands(),          \
                       IntegerType::get(getContext(), 1), r);                  \
  }
BROADCAST_BOOL(EqualOp)
BROADCAST_BOOL(LessOp)
BROADCAST_BOOL(LessOrEqualOp)
BROADCAST_BOOL(GreaterOp)
BROADCAST_BOOL(GreaterOrEqualOp)
BROADCAST_BOOL(AndOp)
BROADCAST_BOOL(OrOp)
#undef BROADCAST_BOOL

LogicalResult PowOp::inferResultTypes(Types &r) {
  return broadcastTo(*this, getOperation()->getOperands(), elemOf(getX()), r,
                     /*sameElem=*/false);
}

LogicalResult WhereOp::inferResultTypes(Types &r) {
  if (failed(checkSameElementType(*this, {getX(), getY()})))
    return failure();
  return broadcastTo(*this, getOperation()->getOperands(), elemOf(getX()), r,
                     /*sameElem=*/false);
}

LogicalResult DropoutOp::inferResultTypes(Types &r) {
  r.push_back(getData().getType());
  if (getNumResults() > 1)
    r.push_back(
        isa<NoneType>(getMask().getType())
            ? getMask().getType()
            : tensorOf(shapeOf(getData()), IntegerType::get(getContext(), 1)));
  return success();
}

LogicalResult CastOp::inferResultTypes(Types &r) {
  r.push_back(tensorOf(shapeOf(getInput()), getTo()));
  return success();
}

LogicalResult CastLikeOp::inferResultTypes(Types &r) {
  r.push_back(tensorOf(shapeOf(getInput()), elemOf(getTargetType())));
  return success();
}

LogicalResult TriluOp::inferResultTypes(Types &r) {
  if (auto s = shapeOf(getInput()); s && s->size() < 2)
    return emitOpError() << "input must have rank >= 2, got " << s->size();
  return sameAsFirst(*this, r);
}

LogicalResult CumSumOp::inferResultTypes(Types &r) {
  auto axis = getConstantInts(getAxis());
  if (auto s = shapeOf(getX()); s && axis && axis->size() == 1 &&
                                failed(normAxis(*this, (*axis)[0], s->size())))
    return failure();
  return sameAsFirst(*this, r);
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferResultTypes(Types &r) {
  if (failed(checkSameElementType(*this, {getA(), getB()})))
    return failure();
  auto a = shapeOf(getA()), b = shapeOf(getB());
  Type e = elemOf(getA());
  if (!a || !b) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  if (a->empty() || b->empty())
    return emitOpError() << "operands must have rank >= 1";
  Shape sa = *a, sb = *b;
  bool va = sa.size() == 1, vb = sb.size() == 1;
  if (va)
    sa.insert(sa.begin(), 1);
  if (vb)
    sb.push_back(1);
  int64_t k1 = sa.back(), k2 = sb[sb.size() - 2];
  if (k1 != kDyn && k2 != kDyn && k1 != k2)
    return emitOpError() << "contraction dimensions differ: " << k1 << " vs "
                         << k2;
  // Broadcast the batch dimensions.
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch;
  size_t n = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), n - ba.size(), 1);
  bb.insert(bb.begin(), n - bb.size(), 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = ba[i], y = bb[i];
    if (x == 1)
      batch.push_back(y);
    else if (y == 1 || x == y)
      batch.push_back(x);
    else if (x == kDyn)
      batch.push_back(y);
    else if (y == kDyn)
      batch.push_back(x);
    else
      return emitOpError() << "batch dimensions are not broadcastable: " << x
                           << " vs " << y;
  }
  Shape out = batch;
  if (!va)
    out.push_back(sa[sa.size() - 2]);
  if (!vb)
    out.push_back(sb.back());
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult GemmOp::inferResultTypes(Types &r) {
  if (failed(checkSameElementType(*this, {getA(), getB(), getC()})))
    return failure();
  auto a = shapeOf(getA()), b = shapeOf(getB());
  if ((a && a->size() != 2) || (b && b->size() != 2))
    return emitOpError() << "A and B must be 2-D";
  int64_t m = a ? (*a)[getTransA() ? 1 : 0] : kDyn;
  int64_t ka = a ? (*a)[getTransA() ? 0 : 1] : kDyn;
  int64_t kb = b ? (*b)[getTransB() ? 1 : 0] : kDyn;
  int64_t n = b ? (*b)[getTransB() ? 0 : 1] : kDyn;
  if (ka != kDyn && kb != kDyn && ka != kb)
    return emitOpError() << "contraction dimensions differ: " << ka << " vs "
                         << kb;
  r.push_back(RankedTensorType::get({m, n}, elemOf(getA())));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getData());
  if (!s) {
    r.push_back(getData().getType());
    return success();
  }
  SmallVector<int64_t> perm;
  if (auto p = getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = s->size() - 1; i >= 0; --i)
      perm.push_back(i);
  if (perm.size() != s->size())
    return emitOpError() << "perm has " << perm.size()
                         << " entries for an input of rank " << s->size();
  Shape out;
  SmallVector<bool> seen(s->size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= (int64_t)s->size() || seen[p])
      return emitOpError() << "perm is not a permutation";
    seen[p] = true;
    out.push_back((*s)[p]);
  }
  r.push_back(RankedTensorType::get(out, elemOf(getData())));
  return success();
}

LogicalResult ReshapeOp::inferResultTypes(Types &r) {
  Type e = elemOf(getData());
  auto target = getPartialInts(getShape());
  if (!target) {
    // Values read at run time: the rank is the shape's static length (up
    // to kMaxRunTimeRank; a longer one stays unranked and is refused by
    // the lowering).
    constexpr int64_t kMaxRunTimeRank = 64;
    auto st = dyn_cast<RankedTensorType>(getShape().getType());
    if (st && st.getRank() == 1 && !st.isDynamicDim(0) &&
        st.getDimSize(0) <= kMaxRunTimeRank)
      r.push_back(RankedTensorType::get(Shape(st.getDimSize(0), kDyn), e));
    else
      r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  auto in = shapeOf(getData());
  Shape out = fromPartial(*target);
  int64_t inferIdx = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    auto t = (*target)[i];
    if (!t)
      continue;
    if (*t == 0 && !getAllowzero()) {
      if (in && i < in->size())
        out[i] = (*in)[i];
      else if (!in)
        out[i] = kDyn;
      else
        return emitOpError()
               << "shape[" << i << "] = 0 copies a dimension "
               << "the input of rank " << in->size() << " does not have";
    } else if (*t == -1) {
      if (inferIdx >= 0)
        return emitOpError() << "shape has more than one -1";
      inferIdx = i;
      out[i] = kDyn;
    } else if (*t < -1) {
      return emitOpError() << "shape[" << i << "] = " << *t
                           << " is not a valid dimension";
    }
  }
  if (in && llvm::none_of(*in, ShapedType::isDynamic)) {
    int64_t total = 1, known = 1;
    bool allKnown = true;
    for (int64_t d : *in)
      total = mulDims(total, d);
    for (size_t i = 0; i < out.size(); ++i)
      if ((int64_t)i != inferIdx) {
        if (out[i] == kDyn)
          allKnown = false;
        else
          known = mulDims(known, out[i]);
      }
    if (total > kMaxSize || known > kMaxSize)
      return emitOpError() << "shape sizes overflow";
    if (allKnown) {
      if (inferIdx >= 0) {
        if (known == 0 || total % known)
          return emitOpError() << "cannot reshape " << total
                               << " elements with -1 in the shape";
        out[inferIdx] = total / known;
      } else if (known != total) {
        return emitOpError()
               << "cannot reshape " << total << " elements into " << known;
      }
    }
  }
  // With dynamic input dims, a -1 is still known when every dynamic input
  // dimension reappears in the target as Shape(·)[k] of the same size.
  if (inferIdx >= 0 && out[inferIdx] == kDyn && in) {
    auto dims = getShapeDims(getShape());
    SmallVector<bool> matched(in->size(), false);
    int64_t known = 1, total = 1;
    bool ok = dims && dims->size() == out.size();
    for (size_t i = 0; ok && i < out.size(); ++i) {
      if ((int64_t)i == inferIdx)
        continue;
      const DimExpr &d = (*dims)[i];
      if (d.value && *d.value == 0 && !getAllowzero()) {
        ok = i < in->size() && (*in)[i] == kDyn && !matched[i];
        if (ok)
          matched[i] = true;
      } else if (d.value) {
        known = mulDims(known, *d.value);
      } else if (d.src) {
        bool found = false;
        for (size_t k = 0; k < in->size() && !found; ++k)
          if ((*in)[k] == kDyn && !matched[k] &&
              sameDim(getData(), k, d.src, d.dim))
            found = matched[k] = true;
        ok = found;
      } else {
        ok = false;
      }
    }
    for (size_t k = 0; ok && k < in->size(); ++k) {
      if ((*in)[k] == kDyn)
        ok = matched[k];
      else
        total = mulDims(total, (*in)[k]);
    }
    if (ok && known > 0 && known <= kMaxSize && total <= kMaxSize &&
        total % known == 0)
      out[inferIdx] = total / known;
  }
  if (auto t = dyn_cast<RankedTensorType>(getShape().getType());
      t && t.getRank() != 1)
    return emitOpError() << "shape must be 1-D";
  if (failed(validShape(*this, out)))
    return failure();
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult FlattenOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getInput());
  Type e = elemOf(getInput());
  if (!s) {
    r.push_back(RankedTensorType::get({kDyn, kDyn}, e));
    return success();
  }
  // Flatten's axis is in [-r, r]; a negative one counts from r.
  int64_t rank = s->size(), ax = (int64_t)getAxis();
  if (ax < -rank || ax > rank)
    return emitOpError() << "axis " << ax << " is out of range for rank "
                         << rank;
  std::optional<int64_t> axis = ax < 0 ? ax + rank : ax;
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < (int64_t)s->size(); ++i)
    (i < *axis ? a : b) = mulDims(i < *axis ? a : b, (*s)[i]);
  if (failed(validShape(*this, {a, b})))
    return failure();
  r.push_back(RankedTensorType::get({a, b}, e));
  return success();
}

LogicalResult SqueezeOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getData());
  Type e = elemOf(getData());
  if (!s) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  SmallVector<bool> drop(s->size(), false);
  if (isNone(getAxes())) {
    for (size_t i = 0; i < s->size(); ++i) {
      if ((*s)[i] == kDyn) {
        r.push_back(UnrankedTensorType::get(e));
        return success();
      }
      drop[i] = (*s)[i] == 1;
    }
  } else {
    auto axes = getConstantInts(getAxes());
    if (!axes) { // axes at run time: the rank from their number
      auto at = dyn_cast<RankedTensorType>(getAxes().getType());
      int64_t n = at && at.getRank() == 1 ? at.getDimSize(0) : kDyn;
      if (n == kDyn || n > (int64_t)s->size())
        r.push_back(UnrankedTensorType::get(e));
      else
        r.push_back(RankedTensorType::get(Shape(s->size() - n, kDyn), e));
      return success();
    }
    for (int64_t a : *axes) {
      auto n = normAxis(*this, a, s->size());
      if (failed(n))
        return failure();
      if ((*s)[*n] != 1 && (*s)[*n] != kDyn)
        return emitOpError()
               << "cannot squeeze axis " << a << " of size " << (*s)[*n];
      drop[*n] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < s->size(); ++i)
    if (!drop[i])
      out.push_back((*s)[i]);
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult UnsqueezeOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getData());
  Type e = elemOf(getData());
  auto axes = getConstantInts(getAxes());
  auto at = dyn_cast<RankedTensorType>(getAxes().getType());
  if (s && !axes && at && at.getRank() == 1 && !at.isDynamicDim(0)) {
    // axes at run time: the rank from their number, the dims unknown
    r.push_back(
        RankedTensorType::get(Shape(s->size() + at.getDimSize(0), kDyn), e));
    return success();
  }
  if (!s || !axes) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  int64_t rank = s->size() + axes->size();
  SmallVector<bool> ins(rank, false);
  for (int64_t a : *axes) {
    auto n = normAxis(*this, a, rank);
    if (failed(n))
      return failure();
    if (ins[*n])
      return emitOpError() << "axis " << a << " appears twice";
    ins[*n] = true;
  }
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(ins[i] ? 1 : (*s)[j++]);
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult ConcatOp::inferResultTypes(Types &r) {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  if (failed(checkSameElementType(*this, getInputs())))
    return failure();
  Type e = elemOf(getInputs()[0]);
  std::optional<Shape> out;
  int64_t axis = 0;
  for (Value v : getInputs()) {
    auto s = shapeOf(v);
    if (!s)
      continue;
    if (!out) {
      auto n = normAxis(*this, (int64_t)getAxis(), s->size());
      if (failed(n))
        return failure();
      axis = *n;
      out = *s;
      (*out)[axis] = 0;
    } else if (s->size() != out->size()) {
      return emitOpError() << "inputs have different ranks: " << out->size()
                           << " vs " << s->size();
    }
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t &o = (*out)[i];
      int64_t d = (*s)[i];
      if ((int64_t)i == axis) {
        o = (o == kDyn || d == kDyn) ? kDyn : o + d;
      } else if (o == kDyn) {
        o = d;
      } else if (d != kDyn && d != o) {
        return emitOpError() << "inputs differ in dimension " << i << ": " << o
                             << " vs " << d;
      }
    }
  }
  if (out)
    for (Value v : getInputs())
      if (!shapeOf(v))
        (*out)[axis] = kDyn;
  r.push_back(tensorOf(out, e));
  return success();
}

LogicalResult SplitOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getInput());
  Type e = elemOf(getInput());
  int64_t n = getNumResults();
  if (n == 0)
    return emitOpError() << "needs at least one output";
  if (!s) {
    r.assign(n, UnrankedTensorType::get(e));
    return success();
  }
  auto axis = normAxis(*this, (int64_t)getAxis(), s->size());
  if (failed(axis))
    return failure();
  int64_t dim = (*s)[*axis];
  SmallVector<int64_t> sizes(n, kDyn);
  if (!isNone(getSplit())) {
    auto split = getConstantInts(getSplit());
    if (split) {
      if ((int64_t)split->size() != n)
        return emitOpError() << "'split' has " << split->size()
                             << " entries for " << n << " outputs";
      int64_t sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        if ((*split)[i] < 0)
          return emitOpError() << "'split' entries must be >= 0";
        sizes[i] = (*split)[i];
        sum += sizes[i];
      }
      if (dim != kDyn && sum != dim)
        return emitOpError() << "'split' sums to " << sum << " but axis "
                             << *axis << " has size " << dim;
    }
  } else if (dim != kDyn) {
    if (auto no = getNumOutputs(); no && (int64_t)*no != n)
      return emitOpError() << "num_outputs is " << *no << " but the node has "
                           << n << " outputs";
    int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes[i] = std::max<int64_t>(0, std::min(chunk, dim - i * chunk));
  }
  for (int64_t i = 0; i < n; ++i) {
    Shape o = *s;
    o[*axis] = sizes[i];
    r.push_back(RankedTensorType::get(o, e));
  }
  return success();
}

LogicalResult SliceOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getData());
  Type e = elemOf(getData());
  if (!s) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  int64_t rank = s->size();
  auto starts = getConstantInts(getStarts());
  auto ends = getConstantInts(getEnds());
  std::optional<SmallVector<int64_t>> axes, steps;
  if (!isNone(getAxes()))
    axes = getConstantInts(getAxes());
  if (!isNone(getSteps()))
    steps = getConstantInts(getSteps());
  bool axesKnown = isNone(getAxes()) || axes;
  if (!axesKnown) {
    r.push_back(RankedTensorType::get(Shape(rank, kDyn), e));
    return success();
  }
  int64_t n = starts ? starts->size() : (ends ? ends->size() : -1);
  if (starts && ends && starts->size() != ends->size())
    return emitOpError() << "starts and ends differ in length";
  if (n >= 0 && ((axes && (int64_t)axes->size() != n) ||
                 (steps && (int64_t)steps->size() != n)))
    return emitOpError() << "starts, ends, axes and steps differ in length";
  if (!axes) {
    if (n < 0) {
      r.push_back(RankedTensorType::get(Shape(rank, kDyn), e));
      return success();
    }
    axes = SmallVector<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      axes->push_back(i);
  }
  Shape out = *s;
  for (size_t i = 0; i < axes->size(); ++i) {
    auto a = normAxis(*this, (*axes)[i], rank);
    if (failed(a))
      return failure();
    int64_t step = steps ? (i < steps->size() ? (*steps)[i] : 1) : 1;
    if (steps && step == 0)
      return emitOpError() << "steps must not be 0";
    bool known = starts && ends && (isNone(getSteps()) || steps) &&
                 (*s)[*a] != kDyn && i < starts->size() && i < ends->size();
    out[*a] = known ? sliceLen((*s)[*a], (*starts)[i], (*ends)[i], step) : kDyn;
  }
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult GatherOp::inferResultTypes(Types &r) {
  auto d = shapeOf(getData()), i = shapeOf(getIndices());
  Type e = elemOf(getData());
  if (!d || !i) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  if (d->empty())
    return emitOpError() << "data must have rank >= 1";
  auto axis = normAxis(*this, (int64_t)getAxis(), d->size());
  if (failed(axis))
    return failure();
  Shape out(d->begin(), d->begin() + *axis);
  out.append(i->begin(), i->end());
  out.append(d->begin() + *axis + 1, d->end());
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult ShapeOp::inferResultTypes(Types &r) {
  Type i64 = IntegerType::get(getContext(), 64);
  auto s = shapeOf(getData());
  if (!s) {
    r.push_back(RankedTensorType::get({kDyn}, i64));
    return success();
  }
  int64_t rank = s->size();
  int64_t start = getStart(), end = getEnd() ? (int64_t)*getEnd() : rank;
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  r.push_back(RankedTensorType::get({std::max<int64_t>(0, end - start)}, i64));
  return success();
}

LogicalResult SizeOp::inferResultTypes(Types &r) {
  r.push_back(RankedTensorType::get({}, IntegerType::get(getContext(), 64)));
  return success();
}

/// The entries of a 1-D shape operand that are known (getPartialInts), or,
/// for a shape read at run time whose length is static, that many unknown
/// entries: the result's rank is still known.
std::optional<SmallVector<std::optional<int64_t>>> shapeEntries(Value v) {
  if (auto p = getPartialInts(v))
    return p;
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() != 1 || t.isDynamicDim(0) ||
      t.getDimSize(0) > kMaxRank || !isa<IntegerType>(t.getElementType()))
    return std::nullopt;
  return SmallVector<std::optional<int64_t>>(t.getDimSize(0), std::nullopt);
}

LogicalResult ExpandOp::inferResultTypes(Types &r) {
  Type e = elemOf(getInput());
  auto target = shapeEntries(getShape());
  auto in = shapeOf(getInput());
  if (!target || !in) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  // Broadcast the input shape with the target shape; unknown target entries
  // are 1-or-anything, so the input's dimension wins unless it is 1.
  Shape t = fromPartial(*target);
  size_t n = std::max(t.size(), in->size());
  Shape a = *in, b = t;
  a.insert(a.begin(), n - a.size(), 1);
  b.insert(b.begin(), n - b.size(), 1);
  Shape out;
  for (size_t i = 0; i < n; ++i) {
    if (b[i] == kDyn)
      out.push_back(a[i] == 1 ? kDyn : a[i]);
    else if (a[i] == 1 || a[i] == kDyn)
      out.push_back(b[i] == 1 ? a[i] : b[i]);
    else if (b[i] == 1 || b[i] == a[i])
      out.push_back(a[i]);
    else
      return emitOpError() << "cannot expand dimension " << a[i] << " to "
                           << b[i];
  }
  if (failed(validShape(*this, out)))
    return failure();
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult TileOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getInput());
  Type e = elemOf(getInput());
  if (!s) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  auto reps = getConstantInts(getRepeats());
  Shape out(s->size(), kDyn);
  if (reps) {
    if (reps->size() != s->size())
      return emitOpError() << "repeats has " << reps->size()
                           << " entries for rank " << s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      if ((*reps)[i] < 0)
        return emitOpError() << "repeats must be >= 0";
      out[i] = mulDims((*s)[i], (*reps)[i]);
    }
  }
  if (failed(validShape(*this, out)))
    return failure();
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult ConstantOfShapeOp::inferResultTypes(Types &r) {
  Type e = getValue() ? getValue()->getElementType()
                      : Float32Type::get(getContext());
  if (getValue() && getValue()->getNumElements() != 1)
    return emitOpError() << "'value' must hold exactly one element";
  auto target = shapeEntries(getInput());
  if (target && failed(validShape(*this, fromPartial(*target))))
    return failure();
  r.push_back(target ? RankedTensorType::get(fromPartial(*target), e)
                     : (Type)UnrankedTensorType::get(e));
  return success();
}

LogicalResult RangeOp::inferResultTypes(Types &r) {
  Type e = elemOf(getStart());
  if (failed(checkSameElementType(*this, getOperation()->getOperands())))
    return failure();
  for (Value v : getOperation()->getOperands())
    if (auto s = shapeOf(v); s && !s->empty())
      return emitOpError() << "start, limit and delta must be scalars";
  int64_t n = kDyn;
  auto s = getConstantDoubles(getStart()), l = getConstantDoubles(getLimit()),
       d = getConstantDoubles(getDelta());
  if (s && l && d && (*d)[0] != 0) {
    double len = std::ceil(((*l)[0] - (*s)[0]) / (*d)[0]);
    if (std::isnan(len))
      return emitOpError() << "has no defined length (a NaN or infinite "
                              "start, limit or delta)";
    if (!(len < (double)kMaxSize))
      return emitOpError() << "gives more than 2^48 elements";
    // (a count below 0, -inf included, is 0; no cast of -inf to int64)
    n = len > 0 ? (int64_t)len : 0;
  }
  r.push_back(RankedTensorType::get({n}, e));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

#define REDUCE(OP)                                                             \
  LogicalResult OP::inferResultTypes(Types &r) {                               \
    return reduceShape(*this, getData(), getAxes(), getKeepdims(),             \
                       getNoopWithEmptyAxes(), r);                             \
  }
REDUCE(ReduceL2Op)
REDUCE(ReduceMaxOp)
REDUCE(ReduceMeanOp)
REDUCE(ReduceMinOp)
REDUCE(ReduceProdOp)
REDUCE(ReduceSumOp)
#undef REDUCE

LogicalResult LayerNormalizationOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getX());
  r.push_back(getX().getType());
  std::optional<Shape> stats;
  if (s) {
    auto axis = normAxis(*this, (int64_t)getAxis(), s->size());
    if (failed(axis))
      return failure();
    stats = *s;
    for (size_t i = *axis; i < s->size(); ++i)
      (*stats)[i] = 1;
  }
  Type f32 = Float32Type::get(getContext());
  for (unsigned i = 1; i < getNumResults(); ++i)
    r.push_back(isa<NoneType>(getResult(i).getType()) ? getResult(i).getType()
                                                      : tensorOf(stats, f32));
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::inferResultTypes(Types &r) {
  auto q = shapeOf(getQ()), k = shapeOf(getK()), v = shapeOf(getV());
  Type e = elemOf(getQ());
  auto none = [&](unsigned i) { return isa<NoneType>(getResult(i).getType()); };
  if (!q || !k || !v) {
    for (unsigned i = 0; i < getNumResults(); ++i)
      r.push_back(none(i) ? getResult(i).getType()
                          : UnrankedTensorType::get(e));
    return success();
  }
  if (q->size() != k->size() || q->size() != v->size() ||
      (q->size() != 3 && q->size() != 4))
    return emitOpError() << "Q, K and V must all be 3-D or all 4-D";
  int64_t b = (*q)[0], hq, hkv, sq, skv = (*k)[q->size() == 4 ? 2 : 1], dh, dv;
  if (q->size() == 4) {
    hq = (*q)[1];
    sq = (*q)[2];
    dh = (*q)[3];
    hkv = (*k)[1];
    dv = (*v)[3];
  } else {
    if (!getQNumHeads() || !getKvNumHeads())
      return emitOpError() << "3-D inputs need q_num_heads and kv_num_heads";
    hq = *getQNumHeads();
    hkv = *getKvNumHeads();
    sq = (*q)[1];
    if (hq <= 0 || hkv <= 0)
      return emitOpError() << "q_num_heads and kv_num_heads must be positive";
    dh = divDims((*q)[2], hq);
    dv = divDims((*v)[2], hkv);
    if ((*q)[2] != kDyn && (*q)[2] % hq)
      return emitOpError() << "Q hidden size " << (*q)[2]
                           << " is not a multiple of q_num_heads " << hq;
  }
  if (hq != kDyn && hkv != kDyn && (hkv == 0 || hq % hkv))
    return emitOpError() << "q heads (" << hq
                         << ") must be a multiple of kv heads (" << hkv << ")";
  int64_t total = skv;
  if (!isNone(getPastKey())) {
    auto p = shapeOf(getPastKey());
    total = (p && p->size() == 4)
                ? (skv == kDyn || (*p)[2] == kDyn ? kDyn : skv + (*p)[2])
                : kDyn;
  }
  if (q->size() == 4)
    r.push_back(RankedTensorType::get({b, hq, sq, dv}, e));
  else
    r.push_back(RankedTensorType::get({b, sq, mulDims(hq, dv)}, e));
  r.push_back(none(1) ? getResult(1).getType()
                      : RankedTensorType::get({b, hkv, total, dh}, e));
  r.push_back(none(2) ? getResult(2).getType()
                      : RankedTensorType::get({b, hkv, total, dv}, e));
  r.push_back(none(3) ? getResult(3).getType()
                      : RankedTensorType::get({b, hq, sq, total}, e));
  return success();
}

LogicalResult LinearAttentionOp::inferResultTypes(Types &r) {
  auto q = shapeOf(getQuery()), k = shapeOf(getKey()), v = shapeOf(getValue());
  Type e = elemOf(getQuery());
  int64_t hq = getQNumHeads(), hkv = getKvNumHeads();
  if (hq <= 0 || hkv <= 0 || hq % hkv)
    return emitOpError() << "q_num_heads (" << hq
                         << ") must be a positive multiple of kv_num_heads ("
                         << hkv << ")";
  StringRef rule = getUpdateRule();
  if (rule != "linear" && rule != "gated" && rule != "delta" &&
      rule != "gated_delta")
    return emitOpError() << "unknown update_rule '" << rule << "'";
  if ((rule == "gated" || rule == "gated_delta") && isNone(getDecay()))
    return emitOpError() << "update_rule '" << rule << "' needs a decay input";
  if ((rule == "delta" || rule == "gated_delta") && isNone(getBeta()))
    return emitOpError() << "update_rule '" << rule << "' needs a beta input";
  if (!q || !k || !v) {
    r.push_back(UnrankedTensorType::get(e));
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  if (q->size() != 3 || k->size() != 3 || v->size() != 3)
    return emitOpError() << "query, key and value must be 3-D [B, T, H*D]";
  int64_t dk = divDims((*k)[2], hkv), dv = divDims((*v)[2], hkv);
  r.push_back(RankedTensorType::get({(*q)[0], (*q)[1], mulDims(hq, dv)}, e));
  r.push_back(RankedTensorType::get({(*q)[0], hkv, dk, dv}, e));
  return success();
}

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

/// X [N, C, D1 ... Dn], W [M, C / group, k1 ... kn], B [M] -> Y [N, M, O1 ...
/// On] with Oi = floor((Di + begin_i + end_i - ((ki - 1) * dilation_i + 1)) /
/// stride_i) + 1 (explicit pads, VALID: no pads) or ceil(Di / stride_i)
/// (SAME_UPPER / SAME_LOWER).
LogicalResult ConvOp::inferResultTypes(Types &r) {
  auto x = shapeOf(getX()), w = shapeOf(getW());
  Type e = elemOf(getX());
  if (elemOf(getW()) != e || (!isNone(getB()) && elemOf(getB()) != e))
    return emitOpError() << "X, W and B must have the same element type";
  StringRef pad = getAutoPad();
  if (pad != "NOTSET" && pad != "VALID" && pad != "SAME_UPPER" &&
      pad != "SAME_LOWER")
    return emitOpError() << "unknown auto_pad '" << pad << "'";
  int64_t group = getGroup();
  if (group < 1)
    return emitOpError() << "group must be positive, got " << group;
  if (!x || !w) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  if (x->size() < 3 || w->size() != x->size())
    return emitOpError() << "X [N, C, D1, ...] and W [M, C/group, k1, ...] "
                            "must have the same rank, at least 3";
  int64_t n = x->size() - 2, m = (*w)[0], c = (*x)[1];
  if (m != kDyn && m % group)
    return emitOpError() << "W's " << m
                         << " output channels are not a multiple of group "
                         << group;
  if (c != kDyn && (*w)[1] != kDyn && c != (*w)[1] * group)
    return emitOpError() << "X has " << c << " channels, W expects " << (*w)[1]
                         << " per group of " << group;
  if (auto b = shapeOf(getB());
      b && !isNone(getB()) &&
      (b->size() != 1 || ((*b)[0] != kDyn && m != kDyn && (*b)[0] != m)))
    return emitOpError() << "B must be 1-D of W's " << m << " output channels";
  auto attr = [&](std::optional<ArrayRef<int64_t>> a, StringRef what,
                  int64_t size, int64_t dflt, int64_t min) -> FailureOr<Shape> {
    if (!a)
      return Shape(size, dflt);
    if ((int64_t)a->size() != size)
      return emitOpError() << what << " must have " << size << " values";
    for (int64_t v : *a)
      if (v < min)
        return emitOpError() << what << " must be >= " << min << ", got " << v;
    return Shape(*a);
  };
  auto strides = attr(getStrides(), "strides", n, 1, 1);
  auto dilations = attr(getDilations(), "dilations", n, 1, 1);
  auto pads = attr(getPads(), "pads", 2 * n, 0, 0);
  auto kernel = attr(getKernelShape(), "kernel_shape", n, 0, 1);
  if (failed(strides) || failed(dilations) || failed(pads) || failed(kernel))
    return failure();
  Shape out{(*x)[0], m};
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = (*w)[2 + i], d = (*x)[2 + i], s = (*strides)[i];
    if (getKernelShape()) {
      if (k != kDyn && k != (*kernel)[i])
        return emitOpError() << "kernel_shape " << (*kernel)[i]
                             << " does not match W's dimension " << k;
      k = (*kernel)[i];
    }
    if (d == kDyn || k == kDyn) {
      out.push_back(kDyn);
      continue;
    }
    if (pad == "SAME_UPPER" || pad == "SAME_LOWER") {
      out.push_back((d + s - 1) / s);
      continue;
    }
    int64_t span = (k - 1) * (*dilations)[i] + 1;
    int64_t padded = d + (pad == "VALID" ? 0 : (*pads)[i] + (*pads)[n + i]);
    if (padded < span)
      return emitOpError() << "spatial dimension " << i << " (" << padded
                           << " with pads) is shorter than the kernel's span "
                           << span;
    out.push_back((padded - span) / s + 1);
  }
  r.push_back(RankedTensorType::get(out, e));
  return validShape(*this, out);
}

//===----------------------------------------------------------------------===//
// Scan
//===----------------------------------------------------------------------===//

LogicalResult ScanOp::inferResultTypes(Types &r) {
  int64_t numScanIn = getNumScanInputs();
  int64_t numIn = getInitialStateAndScanInputs().size();
  int64_t numStates = numIn - numScanIn;
  if (numScanIn < 1 || numStates < 0)
    return emitOpError() << "num_scan_inputs " << numScanIn
                         << " does not fit the " << numIn << " inputs";
  Block &body = getBody().front();
  if ((int64_t)body.getNumArguments() != numIn)
    return emitOpError() << "body takes " << body.getNumArguments()
                         << " inputs, expected " << numIn;
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "body must end in onnx.Yield";
  int64_t numOut = yield.getOperands().size();
  if (numOut != (int64_t)getNumResults() || numOut < numStates)
    return emitOpError() << "body yields " << numOut << " values for "
                         << getNumResults() << " results";
  // Sequence length from the first scan input along its scan axis.
  int64_t seqLen = kDyn;
  Value first = getInitialStateAndScanInputs()[numStates];
  if (auto s = shapeOf(first)) {
    int64_t axis = 0;
    if (auto axes = getScanInputAxes(); axes && !axes->empty())
      axis = (*axes)[0];
    if (axis < 0)
      axis += s->size();
    if (axis >= 0 && axis < (int64_t)s->size())
      seqLen = (*s)[axis];
  }
  for (int64_t i = 0; i < numStates; ++i)
    r.push_back(getInitialStateAndScanInputs()[i].getType());
  for (int64_t i = numStates; i < numOut; ++i) {
    Type t = yield.getOperands()[i].getType();
    auto s = shapeOf(yield.getOperands()[i]);
    if (!s) {
      r.push_back(t);
      continue;
    }
    int64_t axis = 0;
    if (auto axes = getScanOutputAxes();
        axes && (int64_t)axes->size() > i - numStates)
      axis = (*axes)[i - numStates];
    if (axis < 0)
      axis += s->size() + 1;
    if (axis < 0 || axis > (int64_t)s->size())
      return emitOpError() << "scan output axis out of range";
    s->insert(s->begin() + axis, seqLen);
    r.push_back(RankedTensorType::get(*s, elemOf(yield.getOperands()[i])));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

LogicalResult EinsumOp::inferResultTypes(Types &r) {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  Type e = elemOf(getInputs()[0]);
  std::string eq;
  for (char c : getEquation().str())
    if (c != ' ')
      eq.push_back(c);
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  SmallVector<StringRef> parts;
  StringRef(lhs).split(parts, ',');
  SmallVector<std::string> terms;
  for (StringRef t : parts)
    terms.push_back(t.str());
  if (terms.size() != getInputs().size())
    return emitOpError() << "equation has " << terms.size()
                         << " operands, the node has " << getInputs().size();
  // An ellipsis: labels of their own (unused letters) for the leading dims
  // each operand has beyond its labels, aligned from the right.
  std::string ellLabels;
  if (eq.find("...") != std::string::npos) {
    SmallVector<int64_t> n;
    int64_t ell = 0;
    for (size_t i = 0; i < terms.size(); ++i) {
      auto s = shapeOf(getInputs()[i]);
      size_t at = terms[i].find("...");
      if (!s && at != std::string::npos) {
        r.push_back(UnrankedTensorType::get(e));
        return success();
      }
      int64_t k = at == std::string::npos
                      ? 0
                      : (int64_t)s->size() - ((int64_t)terms[i].size() - 3);
      if (k < 0)
        return emitOpError()
               << "operand " << i << " has rank " << s->size()
               << ", fewer than the labels of '" << terms[i] << "'";
      n.push_back(k);
      ell = std::max(ell, k);
    }
    for (char c = 'A'; c <= 'Z' && (int64_t)ellLabels.size() < ell; ++c)
      if (eq.find(c) == std::string::npos)
        ellLabels.push_back(c);
    if ((int64_t)ellLabels.size() < ell)
      return emitOpError() << "ellipsis of too many dims";
    auto expand = [&](const std::string &t, int64_t k) {
      size_t at = t.find("...");
      if (at == std::string::npos)
        return t;
      return t.substr(0, at) + ellLabels.substr(ell - k) + t.substr(at + 3);
    };
    for (size_t i = 0; i < terms.size(); ++i)
      terms[i] = expand(terms[i], n[i]);
    if (arrow != std::string::npos)
      eq = eq.substr(0, arrow + 2) + expand(eq.substr(arrow + 2), ell);
  }
  std::map<char, int64_t> dims;
  std::map<char, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto s = shapeOf(getInputs()[i]);
    if (s && s->size() != terms[i].size())
      return emitOpError() << "operand " << i << " has rank " << s->size()
                           << " but the equation term '" << terms[i] << "' has "
                           << terms[i].size() << " labels";
    for (size_t k = 0; k < terms[i].size(); ++k) {
      char c = terms[i][k];
      if (!std::isalpha(c))
        return emitOpError() << "invalid label '" << c << "' in equation";
      ++count[c];
      int64_t d = s ? (*s)[k] : kDyn;
      auto it = dims.find(c);
      if (it == dims.end() || it->second == kDyn || it->second == 1)
        dims[c] = (it != dims.end() && d == 1) ? it->second : d;
      else if (d != kDyn && d != 1 && d != it->second)
        return emitOpError() << "label '" << c << "' has sizes " << it->second
                             << " and " << d;
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else { // the ellipsis, then the labels seen once, sorted
    out = ellLabels;
    for (auto &[c, n] : count)
      if (n == 1 && ellLabels.find(c) == std::string::npos)
        out.push_back(c);
  }
  Shape shape;
  for (char c : out) {
    if (!dims.count(c))
      return emitOpError() << "output label '" << c
                           << "' is not an input label";
    shape.push_back(dims[c]);
  }
  r.push_back(RankedTensorType::get(shape, e));
  return success();
}

//===----------------------------------------------------------------------===//
// Gather/scatter, TopK, OneHot, Pad, Mod, SwiGLU
//===----------------------------------------------------------------------===//

LogicalResult ModOp::inferResultTypes(Types &r) {
  return broadcastTo(getOperation(), getOperation()->getOperands(),
                     elemOf(getA()), r);
}

LogicalResult SwiGLUOp::inferResultTypes(Types &r) {
  auto a = shapeOf(getA()), b = shapeOf(getB());
  if (a && b) {
    if (a->size() != b->size())
      return emitOpError() << "A and B differ in rank (SwiGLU does not "
                              "broadcast)";
    for (size_t i = 0; i < a->size(); ++i)
      if ((*a)[i] != kDyn && (*b)[i] != kDyn && (*a)[i] != (*b)[i])
        return emitOpError()
               << "A and B differ in dimension " << i << ": " << (*a)[i]
               << " vs " << (*b)[i] << " (SwiGLU does not broadcast)";
  }
  return sameAsFirst(getOperation(), r);
}

LogicalResult ScatterNDOp::inferResultTypes(Types &r) {
  return sameAsFirst(getOperation(), r);
}

LogicalResult ScatterElementsOp::inferResultTypes(Types &r) {
  if (auto d = shapeOf(getData()))
    if (failed(normAxis(*this, (int64_t)getAxis(), d->size())))
      return failure();
  return sameAsFirst(getOperation(), r);
}

LogicalResult GatherNDOp::inferResultTypes(Types &r) {
  auto d = shapeOf(getData()), i = shapeOf(getIndices());
  Type e = elemOf(getData());
  int64_t b = (int64_t)getBatchDims();
  if (!d || !i || i->empty() || i->back() == kDyn) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  int64_t m = i->back();
  if (b < 0 || b >= (int64_t)i->size() || b >= (int64_t)d->size())
    return emitOpError() << "batch_dims " << b
                         << " must be less than the ranks of data and indices";
  if (m < 1 || b + m > (int64_t)d->size())
    return emitOpError() << "indices.shape[-1] = " << m
                         << " must be in [1, rank(data) - batch_dims]";
  Shape out(i->begin(), i->end() - 1);
  out.append(d->begin() + b + m, d->end());
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult TopKOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getX());
  Type e = elemOf(getX()), i64 = IntegerType::get(getContext(), 64);
  if (!s) {
    r.push_back(UnrankedTensorType::get(e));
    r.push_back(UnrankedTensorType::get(i64));
    return success();
  }
  auto axis = normAxis(*this, (int64_t)getAxis(), s->size());
  if (failed(axis))
    return failure();
  Shape out = *s;
  out[*axis] = kDyn;
  if (auto k = getConstantInts(getK())) {
    if (k->size() != 1 || (*k)[0] < 0)
      return emitOpError() << "K must hold one non-negative value";
    if ((*s)[*axis] != kDyn && (*k)[0] > (*s)[*axis])
      return emitOpError() << "K = " << (*k)[0] << " exceeds the size "
                           << (*s)[*axis] << " of axis " << *axis;
    out[*axis] = (*k)[0];
  }
  r.push_back(RankedTensorType::get(out, e));
  r.push_back(RankedTensorType::get(out, i64));
  return success();
}

/// NonZero: [rank(X), number of non-zero elements]; the count is known
/// only at run time (a scalar gives [0, N], as the spec says).
LogicalResult NonZeroOp::inferResultTypes(Types &r) {
  Type i64 = IntegerType::get(getContext(), 64);
  auto s = shapeOf(getX());
  if (!s) {
    r.push_back(RankedTensorType::get({kDyn, kDyn}, i64));
    return success();
  }
  // An empty input has no non-zero element.
  bool empty = llvm::is_contained(*s, 0);
  r.push_back(
      RankedTensorType::get({(int64_t)s->size(), empty ? 0 : kDyn}, i64));
  return success();
}

LogicalResult OneHotOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getIndices());
  Type e = elemOf(getValues());
  if (!s) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  auto axis = normAxis(*this, (int64_t)getAxis(), s->size(), "axis",
                       /*inclusive=*/true);
  if (failed(axis))
    return failure();
  int64_t depth = kDyn;
  // depth may be a float scalar; only integer constants give a static size.
  if (auto d = getConstantInts(getDepth()))
    if (d->size() == 1)
      depth = (*d)[0];
  Shape out = *s;
  out.insert(out.begin() + *axis, depth);
  r.push_back(RankedTensorType::get(out, e));
  return success();
}

LogicalResult PadOp::inferResultTypes(Types &r) {
  auto s = shapeOf(getData());
  Type e = elemOf(getData());
  if (!s) {
    r.push_back(UnrankedTensorType::get(e));
    return success();
  }
  int64_t rank = s->size();
  Shape out(rank, kDyn);
  SmallVector<int64_t> axes;
  if (isNone(getAxes())) {
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  } else if (auto c = getConstantInts(getAxes())) {
    for (int64_t a : *c) {
      auto n = normAxis(*this, a, rank);
      if (failed(n))
        return failure();
      axes.push_back(*n);
    }
  } else {
    r.push_back(RankedTensorType::get(out, e));
    return success();
  }
  for (int64_t a = 0; a < rank; ++a)
    if (!llvm::is_contained(axes, a))
      out[a] = (*s)[a];
  if (auto pads = getConstantInts(getPads())) {
    if (pads->size() != 2 * axes.size())
      return emitOpError() << "pads has " << pads->size() << " entries for "
                           << axes.size() << " axes (2 per axis)";
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t d = (*s)[axes[i]];
      int64_t n = d == kDyn ? kDyn : d + (*pads)[i] + (*pads)[i + axes.size()];
      if (n != kDyn && n < 0)
        return emitOpError() << "pads make axis " << axes[i] << " negative";
      out[axes[i]] = n;
    }
  }
  if (failed(validShape(*this, out)))
    return failure();
  r.push_back(RankedTensorType::get(out, e));
  return success();
}
