//===- AttentionMasks.cpp - masks built in the graph ----------------------===//
#include "passes/gated/AttentionMasks.h"
#include "passes/gated/Matchers.h"

#include "dialects/onnx/ConstantValues.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace gatec::raise {
namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// v through onnx.Cast ops between integer or boolean types (iota and
/// predicate values are the same after them).
Value stripIntCasts(Value v) {
  while (auto c = def<onnx::CastOp>(v)) {
    Type from = getElementTypeOrSelf(c.getInput().getType());
    Type to = getElementTypeOrSelf(c.getType());
    if (!from.isInteger() || !to.isInteger())
      break;
    // A narrowing cast could wrap an index; booleans stay booleans.
    if (to.getIntOrFloatBitWidth() < from.getIntOrFloatBitWidth() &&
        !from.isInteger(1))
      break;
    v = c.getInput();
  }
  return v;
}

/// An iota: Range(0, n, 1) placed by Unsqueezes (and integer Casts) on one
/// axis of a tensor whose other dims are 1. Returns (its axis counted from
/// the right, n), or nullopt.
struct Iota {
  int64_t axisFromRight;
  Value limit;
};

std::optional<Iota> iotaOf(Value v) {
  v = stripIntCasts(v);
  // Unsqueezes from the outside in: remember them, then place the Range.
  SmallVector<onnx::UnsqueezeOp> unsq;
  while (auto u = def<onnx::UnsqueezeOp>(v)) {
    unsq.push_back(u);
    v = stripIntCasts(u.getData());
  }
  auto range = def<onnx::RangeOp>(v);
  if (!range)
    return std::nullopt;
  auto start = scalarConstant(range.getStart());
  auto delta = scalarConstant(range.getDelta());
  if (!start || *start != 0 || !delta || *delta != 1)
    return std::nullopt;
  // dims: true where the Range's dim is.
  SmallVector<bool> dims{true};
  for (auto u : llvm::reverse(unsq)) {
    auto axes = onnx::getConstantInts(u.getAxes());
    if (!axes)
      return std::nullopt;
    int64_t outRank = dims.size() + axes->size();
    SmallVector<int64_t> norm;
    for (int64_t a : *axes)
      norm.push_back(a < 0 ? a + outRank : a);
    llvm::sort(norm);
    for (int64_t a : norm) {
      if (a < 0 || a > (int64_t)dims.size())
        return std::nullopt;
      dims.insert(dims.begin() + a, false);
    }
  }
  auto it = llvm::find(dims, true);
  return Iota{(int64_t)(dims.end() - it) - 1, range.getLimit()};
}

/// Whether the scalar `limit` is dimension i of `scores`.
bool limitIsDim(Value limit, Value scores, int64_t i) {
  auto dims = onnx::getShapeDims(limit);
  if (!dims || dims->size() != 1)
    return false;
  const onnx::DimExpr &e = (*dims)[0];
  int64_t n = shapeOf(scores)[i];
  if (e.value)
    return n != kDyn && *e.value == n;
  return e.src && onnx::sameDim(e.src, e.dim, scores, i);
}

/// An integer value a·t + b·j + c over the query iota t (Range over the
/// scores' T, on the second axis from the right) and the key iota j (over
/// S, on the last axis).
struct Linear {
  int64_t t = 0, j = 0, c = 0;
  Linear operator-() const { return {-t, -j, -c}; }
  Linear operator+(const Linear &o) const {
    return {t + o.t, j + o.j, c + o.c};
  }
};

std::optional<Linear> linearOf(Value v, Value scores, int depth = 0) {
  v = stripIntCasts(v);
  if (depth > 8 || !getElementTypeOrSelf(v.getType()).isInteger())
    return std::nullopt;
  if (auto c = scalarConstant(v))
    return Linear{0, 0, (int64_t)*c};
  if (auto iota = iotaOf(v)) {
    if (iota->axisFromRight == 0 && limitIsDim(iota->limit, scores, 3))
      return Linear{0, 1, 0};
    if (iota->axisFromRight == 1 && limitIsDim(iota->limit, scores, 2))
      return Linear{1, 0, 0};
    return std::nullopt;
  }
  if (auto n = def<onnx::NegOp>(v)) {
    auto x = linearOf(n.getX(), scores, depth + 1);
    return x ? std::optional(-*x) : std::nullopt;
  }
  if (isa_and_nonnull<onnx::AddOp, onnx::SubOp>(v.getDefiningOp())) {
    Operation *d = v.getDefiningOp();
    auto a = linearOf(d->getOperand(0), scores, depth + 1);
    auto b = linearOf(d->getOperand(1), scores, depth + 1);
    if (!a || !b)
      return std::nullopt;
    return isa<onnx::AddOp>(d) ? *a + *b : *a + -*b;
  }
  return std::nullopt;
}

/// What a comparison of iotas says about key j and query t.
struct Predicate {
  enum Kind { None, Causal, Window } kind = None;
  int64_t leftWindow = 0;
};

/// A comparison as the linear inequality x <= 0 (integers: x < 0 is
/// x + 1 <= 0), then: j - t <= 0 is causal, t - j - L <= 0 (L >= 0) is the
/// window j >= t - L.
Predicate predicateOf(Value p, Value scores) {
  p = stripIntCasts(p);
  Operation *d = p.getDefiningOp();
  if (!isa_and_nonnull<onnx::LessOrEqualOp, onnx::LessOp, onnx::GreaterOp,
                       onnx::GreaterOrEqualOp>(d))
    return {};
  auto a = linearOf(d->getOperand(0), scores);
  auto b = linearOf(d->getOperand(1), scores);
  if (!a || !b)
    return {};
  Linear x = isa<onnx::LessOrEqualOp, onnx::LessOp>(d) ? *a + -*b : *b + -*a;
  if (isa<onnx::LessOp, onnx::GreaterOp>(d))
    x.c += 1;
  if (x.t == -1 && x.j == 1 && x.c == 0)
    return {Predicate::Causal, 0};
  if (x.t == 1 && x.j == -1 && x.c <= 0)
    return {Predicate::Window, -x.c};
  return {};
}

bool isTrue(Value v) {
  if (auto e = def<onnx::ExpandOp>(v))
    return isTrue(e.getInput());
  if (auto c = def<onnx::ConstantOfShapeOp>(v)) {
    auto d = c.getValue() ? dyn_cast<DenseElementsAttr>(*c.getValue())
                          : DenseElementsAttr();
    return d && d.getElementType().isInteger(1) && d.getNumElements() == 1 &&
           d.getValues<bool>()[0];
  }
  auto vals = onnx::getConstantDoubles(v);
  return vals && getElementTypeOrSelf(v.getType()).isInteger(1) &&
         llvm::all_of(*vals, [](double x) { return x != 0; });
}

void collectAndFactors(Value v, SmallVectorImpl<Value> &out) {
  v = stripIntCasts(v);
  if (auto e = def<onnx::ExpandOp>(v))
    return collectAndFactors(e.getInput(), out);
  if (auto a = def<onnx::AndOp>(v)) {
    collectAndFactors(a.getA(), out);
    collectAndFactors(a.getB(), out);
    return;
  }
  out.push_back(v);
}

} // namespace

Value additiveMaskCondition(Value m) {
  auto w = def<onnx::WhereOp>(m);
  if (!w)
    return {};
  auto zero = scalarConstant(w.getX()), neg = scalarConstant(w.getY());
  if (!zero || *zero != 0 || !neg || *neg > -1e30)
    return {};
  return w.getCondition();
}

std::optional<CausalSplit> splitCausal(Value attends, Value scores) {
  if (shapeOf(scores).size() != 4 ||
      !getElementTypeOrSelf(attends.getType()).isInteger(1))
    return std::nullopt;
  SmallVector<Value> factors;
  collectAndFactors(attends, factors);
  bool causal = false;
  CausalSplit split;
  for (Value f : factors) {
    Predicate p = predicateOf(f, scores);
    if (p.kind == Predicate::Causal)
      causal = true;
    else if (p.kind == Predicate::Window)
      split.leftWindow = split.leftWindow
                             ? std::min(*split.leftWindow, p.leftWindow)
                             : p.leftWindow;
    else if (!isTrue(f))
      split.rest.push_back(f);
  }
  if (!causal)
    return std::nullopt;
  for (Value f : split.rest)
    if (!getElementTypeOrSelf(f.getType()).isInteger(1) ||
        !isa<RankedTensorType>(f.getType()) || shapeOf(f).size() > 4)
      return std::nullopt;
  return split;
}

Value andAll(PatternRewriter &rewriter, Location loc, ArrayRef<Value> factors) {
  Value all = factors.front();
  for (Value f : factors.drop_front())
    all = createOnnx(rewriter, loc, "And", {all, f});
  return all;
}

} // namespace gatec::raise
