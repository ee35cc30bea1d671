//===- Reshape.cpp - Reshape, Flatten, (Un)Squeeze, Transpose -------------===//
//
// The ops that reshape or permute a tensor without moving its elements'
// values: as tensor.collapse_shape / expand_shape where the grouping of the
// dims is provable (also with dynamic sizes), else tensor.reshape with the
// sizes computed at run time (and checked), and linalg.transpose.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

namespace gatec::conversion::onnx_to_linalg {

namespace {

/// The target sizes of a Reshape, computed at run time where the shape
/// operand is not constant: 0 copies the input dim (allowzero = 0), -1 is
/// the element count over the product of the others.
SmallVector<OpFoldResult> reshapeSizes(onnx::ReshapeOp op, Lowerer &l) {
  Value x = l.in[0], shape = l.in[1];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank(), rx = l.rankOf(x);
  auto known = onnx::getPartialInts(op.getShape());
  if (known && (int64_t)known->size() != r)
    known = std::nullopt;
  ImplicitLocOpBuilder &b = l.b;
  auto isMinusOne = [&](OpFoldResult v) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, l.val(v),
                                 l.val(l.idx(-1)));
  };
  auto select = [&](Value c, OpFoldResult t, OpFoldResult f) {
    return OpFoldResult(
        arith::SelectOp::create(b, c, l.val(t), l.val(f)).getResult());
  };
  // Each element with a 0 resolved; `unknown` ones may still be -1.
  SmallVector<OpFoldResult> v(r);
  SmallVector<bool> unknown(r, false), rest(r, false);
  for (int64_t i = 0; i < r; ++i) {
    std::optional<int64_t> k = known ? (*known)[i] : std::nullopt;
    if (!rt.isDynamicDim(i))
      k = rt.getDimSize(i);
    bool copy = !op.getAllowzero() && i < rx;
    if (k) {
      rest[i] = *k == -1;
      v[i] = *k == 0 && copy ? l.dim(x, i) : l.idx(*k);
      continue;
    }
    unknown[i] = true;
    v[i] = l.elementIndex(shape, i);
    if (copy) {
      Value zero = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                         l.val(v[i]), l.val(l.idx(0)));
      v[i] = select(zero, l.dim(x, i), v[i]);
    }
  }
  OpFoldResult prod = l.idx(1);
  for (int64_t i = 0; i < r; ++i)
    if (!rest[i])
      prod = l.mul(prod, unknown[i] ? select(isMinusOne(v[i]), l.idx(1), v[i])
                                    : v[i]);
  // The -1 is numel / prod. A prod of 0 (a 0-sized dim among the others,
  // e.g. a sequence of length 0) leaves it undefined: onnxruntime fails the
  // run if the shape holds a -1, so does this check; without one, `total`
  // is not used, and the division goes through a divisor of 1 (no trap).
  if (!getConstantIntValue(prod)) {
    Value zero = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, l.val(prod),
                                       l.val(l.idx(0)));
    Value minusOne;
    for (int64_t i = 0; i < r; ++i) {
      if (!rest[i] && !unknown[i])
        continue;
      Value m = rest[i] ? scalar(b, b.getI1Type(), 1) : isMinusOne(v[i]);
      minusOne = minusOne ? arith::OrIOp::create(b, minusOne, m) : m;
    }
    if (minusOne)
      cf::AssertOp::create(
          b,
          arith::XOrIOp::create(b, arith::AndIOp::create(b, zero, minusOne),
                                scalar(b, b.getI1Type(), 1)),
          "gatec: a Reshape to a shape with -1 where the other sizes' "
          "product is 0 in " +
              describeOp(op->getLoc()) + " (Reshape)");
    prod = select(zero, l.idx(1), prod);
  } else if (*getConstantIntValue(prod) == 0) {
    prod = l.idx(1);
  }
  OpFoldResult total = l.divTrunc(l.numel(x), prod);
  for (int64_t i = 0; i < r; ++i) {
    if (rest[i])
      v[i] = total;
    else if (unknown[i])
      v[i] = select(isMinusOne(v[i]), total, v[i]);
  }
  return v;
}

/// The input dim among `candidates` that element `j` of the Reshape's
/// shape provably copies (a 0 without allowzero, or a Shape/Gather chain of
/// the same dim), or -1.
int64_t copiedDim(onnx::ReshapeOp op, const onnx::DimExpr &d, int64_t j,
                  ArrayRef<int64_t> candidates) {
  if (d.value && *d.value == 0 && !op.getAllowzero())
    return llvm::is_contained(candidates, j) ? j : -1;
  for (int64_t i : candidates)
    if (d.src && onnx::sameDim(d.src, d.dim, op.getData(), i))
      return i;
  return -1;
}

/// Whether the Reshape's input dims `src` provably hold the same elements
/// as its result dims `dst`: each dynamic dim matched by a copy on the
/// other side and equal static products, or the group holds the -1 (left
/// to the element count, all other groups being exact).
bool groupIsExact(onnx::ReshapeOp op, ArrayRef<onnx::DimExpr> elems,
                  ArrayRef<int64_t> src, ArrayRef<int64_t> dst) {
  auto st = cast<RankedTensorType>(op.getData().getType());
  auto rt = cast<RankedTensorType>(op.getType());
  int64_t sProd = 1, dProd = 1;
  bool rest = false;
  SmallVector<int64_t> srcDyn;
  for (int64_t i : src) {
    if (st.isDynamicDim(i))
      srcDyn.push_back(i);
    else
      sProd *= st.getDimSize(i);
  }
  for (int64_t j : dst) {
    if (!rt.isDynamicDim(j)) {
      dProd *= rt.getDimSize(j);
    } else if (elems[j].value && *elems[j].value == -1) {
      rest = true;
    } else {
      auto it = llvm::find(srcDyn, copiedDim(op, elems[j], j, srcDyn));
      if (it == srcDyn.end())
        return false;
      srcDyn.erase(it);
    }
  }
  return rest || (srcDyn.empty() && sProd == dProd);
}

/// Whether collapsing (or expanding) the Reshape's input by `groups` is
/// what the Reshape computes (every group exact).
bool reshapeIsGrouping(onnx::ReshapeOp op,
                       ArrayRef<ReassociationIndices> groups) {
  auto elems = onnx::getShapeDims(op.getShape());
  auto rt = cast<RankedTensorType>(op.getType());
  if (!elems || (int64_t)elems->size() != rt.getRank())
    return false;
  bool collapse =
      cast<RankedTensorType>(op.getData().getType()).getRank() > rt.getRank();
  for (auto [g, group] : llvm::enumerate(groups)) {
    int64_t one[] = {(int64_t)g};
    ArrayRef<int64_t> many = group;
    if (!groupIsExact(op, *elems, collapse ? many : one,
                      collapse ? ArrayRef<int64_t>(one) : many))
      return false;
  }
  return true;
}

/// Sizes of an expanding Reshape proven by reshapeIsGrouping: static, a
/// copied input dim, or (the -1) the input dim over the group's others.
SmallVector<OpFoldResult> expandSizes(Lowerer &l, Value x, RankedTensorType rt,
                                      ArrayRef<ReassociationIndices> groups) {
  SmallVector<OpFoldResult> sizes(rt.getRank());
  for (auto [g, group] : llvm::enumerate(groups)) {
    int64_t staticProd = 1, dyn = -1;
    for (int64_t j : group) {
      if (rt.isDynamicDim(j))
        dyn = j;
      else
        staticProd *= rt.getDimSize(j);
      sizes[j] = l.idx(rt.isDynamicDim(j) ? 1 : rt.getDimSize(j));
    }
    if (dyn >= 0)
      sizes[dyn] = l.divTrunc(l.dim(x, g), l.idx(staticProd));
  }
  return sizes;
}

} // namespace

LogicalResult lower(onnx::ReshapeOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType st = l.typeOf(x), rt = l.resultType();
  if (st.hasStaticShape() && rt.hasStaticShape())
    return l.done(l.reshapeStatic(x, rt));
  // Same rank: each dim its own group (MLIR finds no reassociation
  // between equal ranks). A reshape to (B, T, -1, D) of a [B, T, H, D]
  // tensor, as exports write the head split, is then no copy.
  if (st.getRank() == rt.getRank()) {
    SmallVector<ReassociationIndices> each;
    for (int64_t i = 0; i < st.getRank(); ++i)
      each.push_back({i});
    if (reshapeIsGrouping(op, each))
      return l.done(l.castTo(x, rt));
  }
  auto groups = getReassociationIndicesForReshape(st, rt);
  if (groups && reshapeIsGrouping(op, *groups)) {
    if (st.getRank() > rt.getRank())
      return l.done(
          l.castTo(tensor::CollapseShapeOp::create(l.b, x, *groups), rt));
    bool oneDynPerGroup = llvm::all_of(*groups, [&](auto &g) {
      return llvm::count_if(g, [&](int64_t j) { return rt.isDynamicDim(j); }) <=
             1;
    });
    if (st.getRank() == rt.getRank())
      return l.done(l.castTo(x, rt));
    if (oneDynPerGroup)
      return l.done(tensor::ExpandShapeOp::create(
          l.b, rt, x, *groups, expandSizes(l, x, rt, *groups)));
  }
  SmallVector<OpFoldResult> sizes = reshapeSizes(op, l);
  // A shape of another number of elements (two -1s, a wrong size) or with
  // a negative size other than -1, which onnxruntime refuses, would read x
  // out of bounds: checked where not constant.
  OpFoldResult n = l.idx(1);
  Value ok;
  for (OpFoldResult v : sizes) {
    n = l.mul(n, v);
    if (getConstantIntValue(v) || provablyNonNegative(cast<Value>(v)))
      continue;
    Value nonNeg = arith::CmpIOp::create(l.b, arith::CmpIPredicate::sge,
                                         l.val(v), cidx(l.b, 0));
    ok = ok ? (Value)arith::AndIOp::create(l.b, ok, nonNeg) : nonNeg;
  }
  OpFoldResult numel = l.numel(x);
  auto cn = getConstantIntValue(n), cx = getConstantIntValue(numel);
  if (!cn || !cx) {
    Value same = arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq, l.val(n),
                                       l.val(numel));
    ok = ok ? (Value)arith::AndIOp::create(l.b, ok, same) : same;
  } else if (*cn != *cx) {
    return l.fail("a shape of " + Twine(*cn) + " elements for " + Twine(*cx));
  }
  if (ok)
    cf::AssertOp::create(l.b, ok,
                         "gatec: a Reshape to a shape of another number of "
                         "elements or with a negative size in " +
                             describeOp(op->getLoc()) + " (Reshape)");
  return l.done(l.reshapeDynamic(x, rt, sizes));
}

LogicalResult lower(onnx::FlattenOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  int64_t r = l.rankOf(x), axis = (int64_t)op.getAxis();
  axis = axis < 0 ? axis + r : axis; // in [0, r]
  if (axis < 0 || axis > r)
    return l.fail("axis out of range");
  if (axis == 0 || axis == r) { // [1, N] or [N, 1]: via 1-D
    auto flat =
        RankedTensorType::get({ShapedType::kDynamic}, rt.getElementType());
    ReassociationIndices all;
    for (int64_t i = 0; i < r; ++i)
      all.push_back(i);
    Value f =
        r == 0 ? (Value)tensor::ExpandShapeOp::create(
                     l.b, flat.clone({1}), x, ArrayRef<ReassociationIndices>{},
                     ArrayRef<OpFoldResult>{l.idx(1)})
               : (Value)tensor::CollapseShapeOp::create(l.b, x, ArrayRef{all});
    SmallVector<bool> unit{axis == 0, axis != 0};
    return l.done(l.insertUnitDims(f, rt, unit));
  }
  ReassociationIndices lo, hi;
  for (int64_t i = 0; i < r; ++i)
    (i < axis ? lo : hi).push_back(i);
  SmallVector<ReassociationIndices> groups{lo, hi};
  return l.done(l.castTo(tensor::CollapseShapeOp::create(l.b, x, groups), rt));
}

LogicalResult lower(onnx::UnsqueezeOp op, Lowerer &l) {
  RankedTensorType rt = l.resultType();
  auto axes = constantAxes(op.getAxes(), rt.getRank());
  if (!axes) { // axes at run time: dim j is 1 where named, else the next
    Value x = l.in[0];
    int64_t R = rt.getRank(), r = l.rankOf(x);
    if (l.rankOf(l.in[1]) != 1)
      return l.fail("axes that are not a 1-D tensor");
    if (rt.hasStaticShape() && l.typeOf(x).hasStaticShape())
      return l.done(l.reshapeStatic(x, rt));
    ImplicitLocOpBuilder &b = l.b;
    SmallVector<Value> flag = axisFlags(l, l.in[1], R), inDims;
    for (int64_t k = 0; k < r; ++k)
      inDims.push_back(l.val(l.dim(x, k)));
    // The input dims in order go to the dims not named.
    SmallVector<OpFoldResult> sizes;
    Value c = cidx(b, 0); // input dims used before j
    for (int64_t j = 0; j < R; ++j) {
      Value s = cidx(b, 1);
      for (int64_t k = 0; k < r; ++k)
        s = arith::SelectOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, c, cidx(b, k)),
            inDims[k], s);
      sizes.push_back(OpFoldResult(
          arith::SelectOp::create(b, flag[j], cidx(b, 1), s).getResult()));
      c = arith::AddIOp::create(
          b, c, arith::SelectOp::create(b, flag[j], cidx(b, 0), cidx(b, 1)));
    }
    return l.done(reshapeTo(l, x, rt, sizes));
  }
  SmallVector<bool> unit(rt.getRank(), false);
  for (int64_t a : *axes)
    unit[a] = true;
  if (llvm::count(unit, false) != l.rankOf(l.in[0]))
    return l.fail("axes do not match the ranks");
  return l.done(l.insertUnitDims(l.in[0], rt, unit));
}

/// The message of the check that a dim Squeeze removes is 1 (onnxruntime
/// fails the run otherwise; removing it would drop data).
static std::string notOne(onnx::SqueezeOp op) {
  return "gatec: a squeezed dim that is not 1 in " + describeOp(op->getLoc()) +
         " (Squeeze)";
}

LogicalResult lower(onnx::SqueezeOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType xt = l.typeOf(x);
  SmallVector<bool> drop(xt.getRank(), false);
  if (l.in[1]) {
    auto axes = constantAxes(op.getAxes(), xt.getRank());
    if (!axes) { // axes at run time: the dims not named, in order
      RankedTensorType rt = l.resultType();
      if (l.rankOf(l.in[1]) != 1)
        return l.fail("axes that are not a 1-D tensor");
      if (rt.hasStaticShape() && xt.hasStaticShape())
        return l.done(l.reshapeStatic(x, rt));
      SmallVector<Value> flag = axisFlags(l, l.in[1], xt.getRank()), inDims;
      for (int64_t k = 0; k < xt.getRank(); ++k)
        inDims.push_back(l.val(l.dim(x, k)));
      Value ok; // each named dim is 1
      for (int64_t k = 0; k < xt.getRank(); ++k) {
        if (xt.getDimSize(k) == 1)
          continue;
        Value one = arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq,
                                          inDims[k], cidx(l.b, 1));
        Value fine = arith::OrIOp::create(
            l.b,
            arith::XOrIOp::create(l.b, flag[k],
                                  scalar(l.b, l.b.getI1Type(), 1)),
            one);
        ok = ok ? (Value)arith::AndIOp::create(l.b, ok, fine) : fine;
      }
      if (ok)
        cf::AssertOp::create(l.b, ok, notOne(op));
      return l.done(
          reshapeTo(l, x, rt, keptSizes(l.b, flag, inDims, rt.getRank())));
    }
    for (int64_t a : *axes) {
      drop[a] = true;
      if (xt.isDynamicDim(a)) // 1 at run time, or the data would be lost
        cf::AssertOp::create(
            l.b,
            arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq,
                                  l.val(l.dim(x, a)), cidx(l.b, 1)),
            notOne(op));
    }
  } else {
    for (int64_t i = 0; i < xt.getRank(); ++i)
      drop[i] = xt.getDimSize(i) == 1;
  }
  if (llvm::count(drop, false) != l.resultType().getRank())
    return l.fail("axes do not match the ranks");
  return l.done(l.dropUnitDims(x, l.resultType(), drop));
}

LogicalResult lower(onnx::TransposeOp op, Lowerer &l) {
  Value x = l.in[0];
  int64_t r = l.rankOf(x);
  SmallVector<int64_t> perm;
  if (auto p = op.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = r - 1; i >= 0; --i)
      perm.push_back(i);
  SmallVector<OpFoldResult> sizes;
  for (int64_t p : perm)
    sizes.push_back(l.dim(x, p));
  Value init = l.empty(l.resultType(), sizes);
  return l.done(linalg::TransposeOp::create(l.b, x, init, perm).getResult()[0]);
}

} // namespace gatec::conversion::onnx_to_linalg
