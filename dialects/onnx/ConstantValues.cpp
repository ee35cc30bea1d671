//===- ConstantValues.cpp - reading constant operands ---------------------===//
#include "dialects/onnx/ConstantValues.h"
#include "dialects/interfaces/DimSourceInterface.h"
#include "dialects/onnx/OnnxDialect.h"
#include "llvm/ADT/SmallBitVector.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;

namespace gatec::onnx {

ElementsAttr getConstantAttr(Value v) {
  if (!v)
    return {};
  if (auto c = v.getDefiningOp<ConstantOp>())
    return c.getValue();
  return {};
}

std::optional<SmallVector<int64_t>> getConstantInts(Value v) {
  ElementsAttr attr = getConstantAttr(v);
  if (!attr || !attr.getElementType().isInteger())
    return std::nullopt;
  unsigned width = attr.getElementType().getIntOrFloatBitWidth();
  bool isUnsigned = attr.getElementType().isUnsignedInteger();
  SmallVector<int64_t> out;
  if (auto dense = dyn_cast<DenseIntElementsAttr>(attr)) {
    for (const APInt &x : dense.getValues<APInt>())
      out.push_back(width == 1 || isUnsigned ? (int64_t)x.getZExtValue()
                                             : x.getSExtValue());
    return out;
  }
  if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    ArrayRef<char> data = blob->getData();
    int64_t n = attr.getNumElements();
    unsigned bytes = width / 8;
    if (width % 8 || (int64_t)data.size() < n * bytes)
      return std::nullopt;
    for (int64_t i = 0; i < n; ++i) {
      const char *p = data.data() + i * bytes;
      int64_t x = 0;
      switch (bytes) {
      case 1:
        x = isUnsigned ? (int64_t) * (const uint8_t *)p : *(const int8_t *)p;
        break;
      case 2: {
        int16_t t;
        memcpy(&t, p, 2);
        x = isUnsigned ? (uint16_t)t : t;
        break;
      }
      case 4: {
        int32_t t;
        memcpy(&t, p, 4);
        x = isUnsigned ? (int64_t)(uint32_t)t : t;
        break;
      }
      case 8:
        memcpy(&x, p, 8);
        break;
      default:
        return std::nullopt;
      }
      out.push_back(x);
    }
    return out;
  }
  return std::nullopt;
}

std::optional<SmallVector<double>> getConstantDoubles(Value v) {
  ElementsAttr attr = getConstantAttr(v);
  if (!attr)
    return std::nullopt;
  if (attr.getElementType().isInteger()) {
    auto ints = getConstantInts(v);
    if (!ints)
      return std::nullopt;
    return SmallVector<double>(ints->begin(), ints->end());
  }
  auto dense = dyn_cast<DenseFPElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  SmallVector<double> out;
  for (const APFloat &x : dense.getValues<APFloat>()) {
    APFloat d = x;
    bool lost;
    d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    out.push_back(d.convertToDouble());
  }
  return out;
}

std::optional<SmallVector<std::optional<int64_t>>> getPartialInts(Value v) {
  auto dims = getShapeDims(v);
  if (!dims)
    return std::nullopt;
  SmallVector<std::optional<int64_t>> out;
  for (const DimExpr &d : *dims)
    out.push_back(d.value);
  return out;
}

std::optional<SmallVector<DimExpr>> getShapeDims(Value v) {
  using Result = SmallVector<DimExpr>;
  if (auto ints = getConstantInts(v)) {
    Result r;
    for (int64_t x : *ints)
      r.push_back(DimExpr{x, {}, -1});
    return r;
  }
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto shape = dyn_cast<ShapeOp>(def)) {
    auto t = dyn_cast<RankedTensorType>(shape.getData().getType());
    if (!t)
      return std::nullopt;
    int64_t rank = t.getRank();
    int64_t start = shape.getStart();
    int64_t end = shape.getEnd() ? *shape.getEnd() : rank;
    if (start < 0)
      start += rank;
    if (end < 0)
      end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    Result r;
    for (int64_t i = start; i < end; ++i)
      r.push_back(t.isDynamicDim(i) ? DimExpr{std::nullopt, shape.getData(), i}
                                    : DimExpr{t.getDimSize(i), {}, -1});
    return r;
  }
  if (auto gather = dyn_cast<GatherOp>(def)) {
    auto data = getShapeDims(gather.getData());
    auto idx = getConstantInts(gather.getIndices());
    if (!data || !idx || gather.getAxis() != 0)
      return std::nullopt;
    Result r;
    for (int64_t i : *idx) {
      if (i < 0)
        i += data->size();
      if (i < 0 || i >= (int64_t)data->size())
        return std::nullopt;
      r.push_back((*data)[i]);
    }
    return r;
  }
  if (auto slice = dyn_cast<SliceOp>(def)) {
    // A 1-D slice of a shape vector with constant bounds (axes [0] or
    // none, steps constant or none), clamped as ONNX Slice clamps.
    auto data = getShapeDims(slice.getData());
    auto starts = getConstantInts(slice.getStarts());
    auto ends = getConstantInts(slice.getEnds());
    if (!data || !starts || !ends || starts->size() != 1 || ends->size() != 1)
      return std::nullopt;
    if (!isa<NoneType>(slice.getAxes().getType())) {
      auto axes = getConstantInts(slice.getAxes());
      if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1))
        return std::nullopt;
    }
    int64_t step = 1;
    if (!isa<NoneType>(slice.getSteps().getType())) {
      auto steps = getConstantInts(slice.getSteps());
      if (!steps || steps->size() != 1 || (*steps)[0] == 0)
        return std::nullopt;
      step = (*steps)[0];
    }
    int64_t n = data->size(), b = (*starts)[0], e = (*ends)[0];
    b = b < 0 ? b + n : b;
    e = e < 0 ? e + n : e;
    Result r;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      for (int64_t i = b; i < e; i += step)
        r.push_back((*data)[i]);
    } else {
      b = std::clamp<int64_t>(b, -1, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      for (int64_t i = b; i > e; i += step)
        r.push_back((*data)[i]);
    }
    return r;
  }
  if (isa<UnsqueezeOp, SqueezeOp, ReshapeOp, CastOp, IdentityOp>(def)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() > 1 || !t.getElementType().isInteger())
      return std::nullopt;
    return getShapeDims(def->getOperand(0));
  }
  if (auto where = dyn_cast<WhereOp>(def)) {
    // torch's expand (TorchScript exporter) picks each entry of its target
    // shape: Where(Equal(shape, -1), input's dims, shape). Element-wise
    // where the condition is known: a constant, or Equal of entries whose
    // values are known or are tensor dims (>= 0) against a negative one.
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() != 1 || t.isDynamicDim(0))
      return std::nullopt;
    int64_t n = t.getDimSize(0);
    auto x = getShapeDims(where.getX()), y = getShapeDims(where.getY());
    if (!x || !y || (x->size() != 1 && (int64_t)x->size() != n) ||
        (y->size() != 1 && (int64_t)y->size() != n))
      return std::nullopt;
    auto at = [](const Result &r, int64_t i) {
      return r.size() == 1 ? r[0] : r[i];
    };
    SmallVector<std::optional<bool>> cond(n);
    if (auto c = getConstantInts(where.getCondition())) {
      if (c->size() == 1 || (int64_t)c->size() == n)
        for (int64_t i = 0; i < n; ++i)
          cond[i] = (*c)[c->size() == 1 ? 0 : i] != 0;
    } else if (auto eq = where.getCondition().getDefiningOp<EqualOp>()) {
      auto a = getShapeDims(eq.getA()), b = getShapeDims(eq.getB());
      if (a && b && (a->size() == 1 || (int64_t)a->size() == n) &&
          (b->size() == 1 || (int64_t)b->size() == n))
        for (int64_t i = 0; i < n; ++i) {
          DimExpr l = at(*a, i), r = at(*b, i);
          if (l.value && r.value)
            cond[i] = *l.value == *r.value;
          else if ((l.src && r.value && *r.value < 0) ||
                   (r.src && l.value && *l.value < 0))
            cond[i] = false;
        }
    }
    Result r;
    for (int64_t i = 0; i < n; ++i)
      r.push_back(!cond[i] ? DimExpr{} : (*cond[i] ? at(*x, i) : at(*y, i)));
    return r;
  }
  if (auto concat = dyn_cast<ConcatOp>(def)) {
    Result r;
    for (Value in : concat.getInputs()) {
      auto part = getShapeDims(in);
      if (!part) {
        auto t = dyn_cast<RankedTensorType>(in.getType());
        if (!t || t.getRank() != 1 || t.isDynamicDim(0))
          return std::nullopt;
        part = Result(t.getDimSize(0), DimExpr{});
      }
      r.append(part->begin(), part->end());
    }
    return r;
  }
  // Unknown values of a known count.
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (t && t.getRank() == 1 && !t.isDynamicDim(0))
    return Result(t.getDimSize(0), DimExpr{});
  if (t && t.getRank() == 0)
    return Result(1, DimExpr{});
  return std::nullopt;
}

namespace {
/// The (value, dimension) that dimension i of v is a copy of, one step up,
/// or (null, -1).
std::pair<Value, int64_t> dimSource(Value v, int64_t i) {
  Operation *def = v.getDefiningOp();
  auto rt = dyn_cast<RankedTensorType>(v.getType());
  if (!def || !rt)
    return {Value(), -1};
  int64_t rank = rt.getRank();
  auto rankOf = [](Value x) {
    auto t = dyn_cast<RankedTensorType>(x.getType());
    return t ? t.getRank() : (int64_t)-1;
  };
  // Split: every dim but the split axis is the input's.
  if (auto sp = dyn_cast<SplitOp>(def)) {
    int64_t axis = (int64_t)sp.getAxis();
    axis = axis < 0 ? axis + rank : axis;
    if (rankOf(sp.getInput()) != rank || i == axis)
      return {Value(), -1};
    return {sp.getInput(), i};
  }
  // Ops that name the operand dim a result dim copies.
  if (auto ds = dyn_cast<DimSourceOpInterface>(def))
    return ds.getDimSource(cast<OpResult>(v).getResultNumber(), i);
  // Ops already lowered to tensors (a lowering reads the dims of an operand
  // whose producer was lowered first): a destination-style result has its
  // init's shape, a tensor.empty the sizes it was built from.
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(def))
    if (OpOperand *init = dps.getTiedOpOperand(cast<OpResult>(v)))
      return {init->get(), i};
  if (auto e = dyn_cast<tensor::EmptyOp>(def)) {
    if (!e.getType().isDynamicDim(i))
      return {Value(), -1};
    auto d = e.getDynamicSize(i).getDefiningOp<tensor::DimOp>();
    std::optional<int64_t> c = d ? d.getConstantIndex() : std::nullopt;
    return c ? std::make_pair(d.getSource(), *c)
             : std::make_pair(Value(), (int64_t)-1);
  }
  if (auto c = dyn_cast<tensor::CastOp>(def))
    return rankOf(c.getSource()) == rank ? std::make_pair(c.getSource(), i)
                                         : std::make_pair(Value(), (int64_t)-1);
  if (def->getNumResults() != 1)
    return {Value(), -1};
  // Squeeze with constant axes: dim i is the i-th kept dim of the data.
  if (auto sq = dyn_cast<SqueezeOp>(def)) {
    int64_t r = rankOf(sq.getData());
    auto axes = getConstantInts(sq.getAxes());
    if (r < 0 || !axes)
      return {Value(), -1};
    llvm::SmallBitVector squeezed(r);
    for (int64_t a : *axes)
      if (a + (a < 0 ? r : 0) >= 0 && a + (a < 0 ? r : 0) < r)
        squeezed.set(a + (a < 0 ? r : 0));
    for (int64_t k = 0, kept = -1; k < r; ++k)
      if (!squeezed[k] && ++kept == i)
        return {sq.getData(), k};
    return {Value(), -1};
  }
  if (auto t = dyn_cast<TransposeOp>(def)) {
    if (rankOf(t.getData()) != rank)
      return {Value(), -1};
    SmallVector<int64_t> perm;
    if (auto p = t.getPerm())
      perm.assign(p->begin(), p->end());
    else
      for (int64_t k = rank - 1; k >= 0; --k)
        perm.push_back(k);
    return {t.getData(), perm[i]};
  }
  if (auto mm = dyn_cast<MatMulOp>(def)) {
    int64_t ra = rankOf(mm.getA()), rb = rankOf(mm.getB());
    if (ra < 2 || rb < 2)
      return {Value(), -1};
    if (i == rank - 1)
      return {mm.getB(), rb - 1};
    // Batch and M dimensions: from A when A has them.
    int64_t ia = i - (rank - ra);
    if (ia >= 0)
      return {mm.getA(), ia};
    return {mm.getB(), i - (rank - rb)};
  }
  // ConstantOfShape: every dim is the shape's.
  if (auto c = dyn_cast<ConstantOfShapeOp>(def)) {
    auto dims = getShapeDims(c.getInput());
    if (!dims || (int64_t)dims->size() != rank || !(*dims)[i].src)
      return {Value(), -1};
    return {(*dims)[i].src, (*dims)[i].dim};
  }
  // Expand: a dim the input does not have or has as 1 is the shape's.
  if (auto ex = dyn_cast<ExpandOp>(def)) {
    auto dims = getShapeDims(ex.getShape());
    int64_t ri = rankOf(ex.getInput()), k = i - (rank - ri);
    if (!dims || (int64_t)dims->size() != rank || ri < 0)
      return {Value(), -1};
    auto it = cast<RankedTensorType>(ex.getInput().getType());
    const DimExpr &d = (*dims)[i];
    if (d.src && (k < 0 || it.getDimSize(k) == 1))
      return {d.src, d.dim};
    if (d.value && *d.value == 1 && k >= 0)
      return {ex.getInput(), k};
    return {Value(), -1};
  }
  if (auto r = dyn_cast<ReshapeOp>(def)) {
    auto dims = getShapeDims(r.getShape());
    if (!dims || (int64_t)dims->size() != rank)
      return {Value(), -1};
    const DimExpr &d = (*dims)[i];
    if (d.src)
      return {d.src, d.dim};
    if (d.value && *d.value == 0 && !r.getAllowzero())
      return {r.getData(), i};
    return {Value(), -1};
  }
  // Gather: data[:axis] ++ indices.shape ++ data[axis+1:].
  if (auto g = dyn_cast<GatherOp>(def)) {
    int64_t rd = rankOf(g.getData()), ri = rankOf(g.getIndices());
    int64_t axis = (int64_t)g.getAxis();
    axis = axis < 0 ? axis + rd : axis;
    if (rd < 0 || ri < 0 || rd + ri - 1 != rank || axis < 0 || axis >= rd)
      return {Value(), -1};
    if (i < axis)
      return {g.getData(), i};
    if (i < axis + ri)
      return {g.getIndices(), i - axis};
    return {g.getData(), i - ri + 1};
  }
  // Concat: every dim but the axis is each input's.
  if (auto c = dyn_cast<ConcatOp>(def)) {
    int64_t axis = (int64_t)c.getAxis();
    axis = axis < 0 ? axis + rank : axis;
    if (i == axis || c.getInputs().empty() ||
        rankOf(c.getInputs().front()) != rank)
      return {Value(), -1};
    return {c.getInputs().front(), i};
  }
  if (auto sl = dyn_cast<SliceOp>(def)) {
    if (rankOf(sl.getData()) != rank)
      return {Value(), -1};
    SmallVector<int64_t> axes;
    if (isa<NoneType>(sl.getAxes().getType())) {
      auto starts = getConstantInts(sl.getStarts());
      if (!starts)
        return {Value(), -1};
      for (size_t k = 0; k < starts->size(); ++k)
        axes.push_back(k);
    } else if (auto a = getConstantInts(sl.getAxes())) {
      axes = *a;
    } else {
      return {Value(), -1};
    }
    for (int64_t a : axes)
      if (a == i || a + rank == i)
        return {Value(), -1};
    return {sl.getData(), i};
  }
  // Ops whose result has the shape of their broadcast operands: follow an
  // operand of the same rank whose dimension i is not 1.
  if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, WhereOp, CastOp, SigmoidOp, TanhOp,
          ReluOp, ExpOp, NegOp, SqrtOp, ReciprocalOp, ErfOp, GeluOp, SoftmaxOp,
          SoftplusOp, IdentityOp, LayerNormalizationOp, RMSNormalizationOp,
          CosOp, SinOp, TriluOp, CumSumOp, AbsOp, NotOp, EqualOp, LessOp,
          LessOrEqualOp, GreaterOp, GreaterOrEqualOp, AndOp, OrOp, IsNaNOp,
          IsInfOp, MaxOp, MinOp, ClipOp, LogOp>(def) ||
      def->getDialect()->getNamespace() == "gated") {
    for (Value o : def->getOperands()) {
      auto t = dyn_cast<RankedTensorType>(o.getType());
      if (t && t.getRank() == rank && t.getDimSize(i) != 1)
        return {o, i};
    }
  }
  return {Value(), -1};
}

std::pair<Value, int64_t> dimRoot(Value v, int64_t i) {
  for (int step = 0; step < 64; ++step) {
    auto [src, d] = dimSource(v, i);
    if (!src)
      break;
    v = src, i = d;
  }
  return {v, i};
}
} // namespace

namespace {
/// The ONNX dim_param of dim i of a graph input ("" for other values and
/// for dims without one).
StringRef inputDimParam(Value v, int64_t i) {
  auto arg = dyn_cast<BlockArgument>(v);
  auto fn =
      arg ? dyn_cast_or_null<FunctionOpInterface>(arg.getOwner()->getParentOp())
          : FunctionOpInterface();
  if (!fn || arg.getOwner() != &fn.getFunctionBody().front())
    return {};
  auto params =
      fn.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "onnx.dim_params");
  if (!params || i >= (int64_t)params.size())
    return {};
  auto p = dyn_cast<StringAttr>(params[i]);
  return p ? p.getValue() : StringRef();
}
} // namespace

bool sameDim(Value a, int64_t i, Value b, int64_t j) {
  auto ra = dimRoot(a, i), rb = dimRoot(b, j);
  if (ra == rb)
    return true;
  // Graph inputs that share a dim_param (the runtime checks them equal
  // before the model runs).
  StringRef pa = inputDimParam(ra.first, ra.second);
  return !pa.empty() && pa == inputDimParam(rb.first, rb.second);
}

} // namespace gatec::onnx
