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

/// Whether `p` is key_iota <= query_iota over the scores' S and T.
bool isCausalPredicate(Value p, Value scores) {
  p = stripIntCasts(p);
  Value key, query;
  if (auto le = def<onnx::LessOrEqualOp>(p))
    key = le.getA(), query = le.getB();
  else if (auto ge = def<onnx::GreaterOrEqualOp>(p))
    key = ge.getB(), query = ge.getA();
  else
    return false;
  auto k = iotaOf(key), q = iotaOf(query);
  return k && q && k->axisFromRight == 0 && q->axisFromRight == 1 &&
         limitIsDim(k->limit, scores, 3) && limitIsDim(q->limit, scores, 2);
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
  SmallVector<Value> rest;
  for (Value f : factors) {
    if (!causal && isCausalPredicate(f, scores))
      causal = true;
    else if (!isTrue(f))
      rest.push_back(f);
  }
  if (!causal)
    return std::nullopt;
  for (Value f : rest)
    if (!getElementTypeOrSelf(f.getType()).isInteger(1) ||
        !isa<RankedTensorType>(f.getType()) || shapeOf(f).size() > 4)
      return std::nullopt;
  return CausalSplit{std::move(rest)};
}

Value andAll(PatternRewriter &rewriter, Location loc, ArrayRef<Value> factors) {
  Value all = factors.front();
  for (Value f : factors.drop_front())
    all = createOnnx(rewriter, loc, "And", {all, f});
  return all;
}

} // namespace gatec::raise
