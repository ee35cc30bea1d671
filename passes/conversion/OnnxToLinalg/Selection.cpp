//===- Selection.cpp - OneHot, TopK and NonZero ---------------------------===//
//
// The ops that select positions by value: OneHot (one generic comparing
// each index with the position along the new axis), TopK (a generic
// computing each output position's index by selection passes over the
// row, then one gathering the values) and NonZero (counts per block of
// elements, then a generic finding each output column's element through
// them).
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "llvm/Support/FormatVariadic.h"

#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include <cmath>

namespace gatec::conversion::onnx_to_linalg {

namespace {

std::string where(Operation *op) {
  return " in " + describeOp(op->getLoc()) + " (" +
         op->getName().stripDialect().str() + ")";
}

/// A float scalar as an i64, truncated toward zero, and whether it was in
/// (-2^62, 2^62) (false for NaN and infinities, which become 0): fptosi
/// of a value out of range would be poison.
std::pair<Value, Value> floatToI64(ImplicitLocOpBuilder &b, Value v) {
  Type w = accType(v.getType());
  Value f = convert(b, v, w);
  double lim = 4611686018427387904.0; // 2^62
  Value ok = arith::AndIOp::create(
      b,
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, f, scalar(b, w, lim)),
      arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, f,
                            scalar(b, w, -lim)));
  f = arith::SelectOp::create(b, ok, f, scalar(b, w, 0));
  return {arith::FPToSIOp::create(b, b.getI64Type(), f), ok};
}

/// A scalar operand (rank 0, or rank 1 with one element: checked at run
/// time where its length is dynamic) read as element 0.
FailureOr<Value> scalarOperand(Lowerer &l, Value t, StringRef name) {
  RankedTensorType tt = l.typeOf(t);
  if (tt.getRank() > 1)
    return l.fail(name + " of rank " + Twine(tt.getRank()) +
                  " (a scalar or one element)");
  if (tt.getRank() == 1) {
    if (!tt.isDynamicDim(0) && tt.getDimSize(0) != 1)
      return l.fail(name + " of " + Twine(tt.getDimSize(0)) +
                    " elements (one)");
    if (tt.isDynamicDim(0))
      cf::AssertOp::create(
          l.b,
          arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq,
                                l.val(l.dim(t, 0)), cidx(l.b, 1)),
          "gatec: " + name.str() + " that is not one element" + where(l.op));
  }
  return l.element(t, 0);
}

} // namespace

//===----------------------------------------------------------------------===//
// OneHot
//===----------------------------------------------------------------------===//

/// OneHot: output[..., j, ...] (j along the new axis) is on_value where the
/// index there (truncated to an integer; negative ones count from depth) is
/// j, off_value otherwise: an index outside [-depth, depth - 1] gives a row
/// of off_value. A depth below 1 (truncated to an integer), or one whose
/// result needs a buffer over 2^47 bytes, is the run's error naming the
/// node (onnxruntime fails the run), a compile error when constant; values
/// must be [off_value, on_value].
LogicalResult lower(onnx::OneHotOp op, Lowerer &l) {
  Value ind = l.in[0], depthT = l.in[1], vals = l.in[2];
  RankedTensorType rt = l.resultType();
  int64_t q = l.rankOf(ind);
  auto ax = normAxis((int64_t)op.getAxis(), q + 1);
  if (!ax)
    return l.fail("axis out of range");
  int64_t axis = *ax;
  ImplicitLocOpBuilder &b = l.b;
  using P = arith::CmpIPredicate;
  Type i64 = b.getI64Type();

  // depth, as an integer >= 1.
  OpFoldResult depth;
  if (auto c = onnx::getConstantDoubles(op.getDepth());
      c && c->size() == 1 && std::isfinite((*c)[0])) {
    double d = std::trunc((*c)[0]);
    if (d < 1)
      return l.fail("a depth below 1 (" + llvm::formatv("{0}", d).str() +
                    ")"); // d may be far outside int64
    if (d > 1e15)
      return l.fail("a depth over 10^15");
    depth = l.idx((int64_t)d);
  } else {
    auto e = scalarOperand(l, depthT, "a depth");
    if (failed(e))
      return failure();
    Value d = *e, ok;
    if (isFloat(d.getType()))
      std::tie(d, ok) = floatToI64(b, d);
    else
      d = convert(b, d, i64);
    Value pos = arith::CmpIOp::create(b, P::sge, d, scalar(b, i64, 1));
    ok = ok ? (Value)arith::AndIOp::create(b, ok, pos) : pos;
    cf::AssertOp::create(b, ok, "gatec: a depth below 1" + where(op));
    d = arith::SelectOp::create(b, ok, d, scalar(b, i64, 1));
    depth = OpFoldResult(
        arith::IndexCastOp::create(b, b.getIndexType(), d).getResult());
  }

  // values: [off, on].
  RankedTensorType vt = l.typeOf(vals);
  if (vt.getRank() != 1)
    return l.fail("values of rank " + Twine(vt.getRank()) +
                  " ([off_value, on_value])");
  if (!vt.isDynamicDim(0) && vt.getDimSize(0) != 2)
    return l.fail("values of " + Twine(vt.getDimSize(0)) +
                  " elements ([off_value, on_value])");
  if (vt.isDynamicDim(0))
    cf::AssertOp::create(
        b, arith::CmpIOp::create(b, P::eq, l.val(l.dim(vals, 0)), cidx(b, 2)),
        "gatec: values that are not two elements ([off_value, on_value])" +
            where(op));

  SmallVector<OpFoldResult> sizes;
  for (int64_t j = 0; j <= q; ++j)
    sizes.push_back(j == axis ? depth : l.dim(ind, j < axis ? j : j - 1));
  sizes = l.sizesOf(rt, sizes);
  l.checkBufferSize(sizes, rt.getElementType(),
                    "gatec: a OneHot result that needs a buffer over 2^47 "
                    "bytes" +
                        where(op));
  // off_value and on_value: constants at the initializer's location, or
  // read by the generic.
  Value cOff = constantElement(b, op.getValues(), 0),
        cOn = constantElement(b, op.getValues(), 1);
  bool known = cOff && cOn;
  SmallVector<Value> ins{ind};
  SmallVector<AffineMap> maps{l.dropMap(q + 1, {axis})};
  if (!known) {
    ins.append({vals, vals});
    for (int64_t i : {0, 1})
      maps.push_back(AffineMap::get(q + 1, 0, b.getAffineConstantExpr(i)));
  }
  Value depth64 = arith::IndexCastOp::create(b, i64, l.val(depth));
  return l.done(l.generic(
      rt, sizes, ins, maps,
      [&](ImplicitLocOpBuilder &ib, ValueRange a) -> Value {
        Value off = known ? cOff : a[1], on = known ? cOn : a[2];
        Value i = a[0], ok;
        if (isFloat(i.getType()))
          std::tie(i, ok) = floatToI64(ib, i);
        else
          i = convert(ib, i, i64);
        Value z = scalar(ib, i64, 0);
        Value neg = arith::CmpIOp::create(ib, P::slt, i, z);
        i = arith::SelectOp::create(ib, neg,
                                    arith::AddIOp::create(ib, i, depth64), i);
        Value j = arith::IndexCastOp::create(ib, i64,
                                             linalg::IndexOp::create(ib, axis));
        Value hit = arith::CmpIOp::create(ib, P::eq, i, j);
        if (ok)
          hit = arith::AndIOp::create(ib, hit, ok);
        return arith::SelectOp::create(ib, hit, on, off);
      }));
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

namespace {

/// Whether `a` comes strictly before `b` in TopK's order: larger (or
/// smaller) first, NaN larger than every number for both (as onnxruntime
/// and the ONNX reference order them); equal values are ordered by index
/// elsewhere. Floats are compared in f32 (or f64), exactly.
Value comesBefore(ImplicitLocOpBuilder &b, Value a, Value c, bool largest,
                  bool unsignedInt) {
  if (isFloat(a.getType())) {
    using F = arith::CmpFPredicate;
    Value strict =
        arith::CmpFOp::create(b, largest ? F::OGT : F::OLT, a, c).getResult();
    Value nanA = arith::CmpFOp::create(b, F::UNO, a, a);
    Value nanC = arith::CmpFOp::create(b, F::UNO, c, c);
    Value t = scalar(b, b.getI1Type(), 1);
    Value nanFirst =
        largest
            ? arith::AndIOp::create(b, nanA, arith::XOrIOp::create(b, nanC, t))
            : arith::AndIOp::create(b, arith::XOrIOp::create(b, nanA, t), nanC);
    return arith::OrIOp::create(b, strict, nanFirst);
  }
  using I = arith::CmpIPredicate;
  I p = largest ? (unsignedInt ? I::ugt : I::sgt)
                : (unsignedInt ? I::ult : I::slt);
  return arith::CmpIOp::create(b, p, a, c);
}

} // namespace

/// TopK: each output position k along the axis holds the k-th element of
/// the row in the order of comesBefore, equal values by lower index first
/// (onnxruntime's and the ONNX reference's order; sorted = 0 leaves the
/// order open, so it is the same). The index of position k is found by
/// k + 1 selection passes over the row, each taking the first element
/// that comes after the previous pass's (value, index): O(n K^2) work per
/// row, no state between output elements (K is small in practice: MoE
/// routers take 2 of 8 experts). The values are gathered with the
/// indices. K must be in [0, n] for the axis's size n: a compile error
/// when both are constants, otherwise the run's error naming the node.
LogicalResult lower(onnx::TopKOp op, Lowerer &l) {
  Value x = l.in[0], kT = l.in[1];
  RankedTensorType vt = l.resultType(0), it = l.resultType(1);
  if (!vt || !it)
    return l.fail("an unranked result");
  int64_t r = l.rankOf(x);
  auto ax = normAxis((int64_t)op.getAxis(), r);
  if (!ax)
    return l.fail("axis out of range");
  int64_t axis = *ax;
  bool largest = op.getLargest() != 0;
  ImplicitLocOpBuilder &b = l.b;
  using P = arith::CmpIPredicate;
  OpFoldResult n = l.dim(x, axis);
  auto cn = getConstantIntValue(n);
  std::string inNode = where(op);

  OpFoldResult k;
  auto ck = onnx::getConstantInts(op.getK());
  if (ck && ck->size() == 1) {
    int64_t v = (*ck)[0];
    if (v < 0 || (cn && v > *cn))
      return l.fail("K = " + Twine(v) + " outside [0, " +
                    (cn ? Twine(*cn) : Twine("n")) + "]");
    k = l.idx(v);
    if (!cn && v > 0)
      cf::AssertOp::create(
          b, arith::CmpIOp::create(b, P::sge, l.val(n), cidx(b, v)),
          "gatec: a K greater than the axis's size" + inNode);
  } else {
    auto e = scalarOperand(l, kT, "a K");
    if (failed(e))
      return failure();
    Value kv = arith::IndexCastOp::create(b, b.getIndexType(), *e);
    Value ok = arith::AndIOp::create(
        b, arith::CmpIOp::create(b, P::sge, kv, cidx(b, 0)),
        arith::CmpIOp::create(b, P::sle, kv, l.val(n)));
    cf::AssertOp::create(b, ok,
                         "gatec: a K that is negative or greater than the "
                         "axis's size" +
                             inNode);
    k = OpFoldResult(
        arith::SelectOp::create(b, ok, kv, cidx(b, 0)).getResult());
  }
  SmallVector<OpFoldResult> sizes = l.dims(x);
  sizes[axis] = k;
  sizes = l.sizesOf(it, sizes);

  Type e = l.typeOf(x).getElementType();
  bool u = isUnsignedInt(e);
  Value nv = l.val(n);
  // The compared form of an element: f32 (or f64) for floats, signless
  // integers.
  auto key = [&](ImplicitLocOpBuilder &ib, Value v) -> Value {
    return isFloat(e) ? convert(ib, v, accType(e)) : toSignless(ib, v);
  };
  Type keyType = isFloat(e) ? accType(e)
                            : (Type)IntegerType::get(b.getContext(),
                                                     e.getIntOrFloatBitWidth());
  Value indices = l.generic(
      it, sizes, {}, {}, [&](ImplicitLocOpBuilder &ib, ValueRange) -> Value {
        SmallVector<Value> at;
        for (int64_t d = 0; d < r; ++d)
          at.push_back(linalg::IndexOp::create(ib, d));
        Value pos = at[axis];
        Value none = cidx(ib, -1), zero = cidx(ib, 0), one = cidx(ib, 1);
        Value init = scalar(ib, keyType, 0);
        // Pass t takes the first element after (pv, pi) (all of them
        // when pi = -1) that nothing after (pv, pi) comes before.
        auto passes = scf::ForOp::create(
            ib, zero, arith::AddIOp::create(ib, pos, one), one,
            ValueRange{init, none},
            [&](OpBuilder &nb, Location loc, Value, ValueRange prev) {
              ImplicitLocOpBuilder pb(loc, nb);
              Value pv = prev[0], pi = prev[1];
              Value first = arith::CmpIOp::create(pb, P::slt, pi, zero);
              auto scan = scf::ForOp::create(
                  pb, zero, nv, one, ValueRange{init, none},
                  [&](OpBuilder &sb0, Location sloc, Value j, ValueRange best) {
                    ImplicitLocOpBuilder sb(sloc, sb0);
                    SmallVector<Value> xi(at);
                    xi[axis] = j;
                    Value v = key(sb, tensor::ExtractOp::create(sb, x, xi));
                    Value after = arith::OrIOp::create(
                        sb, comesBefore(sb, pv, v, largest, u),
                        arith::AndIOp::create(
                            sb,
                            arith::XOrIOp::create(
                                sb, comesBefore(sb, v, pv, largest, u),
                                scalar(sb, sb.getI1Type(), 1)),
                            arith::CmpIOp::create(sb, P::sgt, j, pi)));
                    Value eligible = arith::OrIOp::create(sb, first, after);
                    Value better = arith::OrIOp::create(
                        sb, arith::CmpIOp::create(sb, P::slt, best[1], zero),
                        comesBefore(sb, v, best[0], largest, u));
                    Value take = arith::AndIOp::create(sb, eligible, better);
                    scf::YieldOp::create(
                        sb, ValueRange{
                                arith::SelectOp::create(sb, take, v, best[0]),
                                arith::SelectOp::create(sb, take, j, best[1])});
                  });
              scf::YieldOp::create(pb, scan.getResults());
            });
        return arith::IndexCastOp::create(ib, ib.getI64Type(),
                                          passes.getResult(1));
      });
  Value values = l.generic(
      vt, l.sizesOf(vt, sizes), {indices}, {b.getMultiDimIdentityMap(r)},
      [&](ImplicitLocOpBuilder &ib, ValueRange a) -> Value {
        SmallVector<Value> at;
        for (int64_t d = 0; d < r; ++d)
          at.push_back(linalg::IndexOp::create(ib, d));
        // Never -1 (K <= n is checked): clamped all the same.
        at[axis] = arith::MaxSIOp::create(
            ib, arith::IndexCastOp::create(ib, ib.getIndexType(), a[0]),
            cidx(ib, 0));
        return tensor::ExtractOp::create(ib, x, at);
      });
  l.out.push_back(values);
  l.out.push_back(indices);
  return success();
}

//===----------------------------------------------------------------------===//
// NonZero
//===----------------------------------------------------------------------===//

namespace {

/// Elements per block of NonZero's counts: the generic finding a column
/// scans the block counts, then at most this many elements.
constexpr int64_t kNonZeroBlock = 64;

/// The coordinates in `x` (dims `dims`) of the flat row-major position `p`.
SmallVector<Value> coordinatesOf(ImplicitLocOpBuilder &b, Value p,
                                 ArrayRef<Value> dims) {
  SmallVector<Value> at(dims.size());
  for (int64_t d = (int64_t)dims.size() - 1; d >= 0; --d) {
    at[d] = arith::RemUIOp::create(b, p, dims[d]);
    p = arith::DivUIOp::create(b, p, dims[d]);
  }
  return at;
}

} // namespace

/// NonZero: column j of the [rank, N] result holds the coordinates of the
/// j-th non-zero element of X in row-major order (NaN is non-zero, as in
/// numpy; a scalar gives [0, N]). N, which sizes the result, is a
/// reduction over X read by the host; the non-zero elements of each block
/// of kNonZeroBlock flat positions are counted by one generic, and each
/// result element finds its column's block through those counts and its
/// element within the block: O(N (numel / kNonZeroBlock + kNonZeroBlock))
/// work in parallel over the result, no sequential pass.
LogicalResult lower(onnx::NonZeroOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  if (!rt || rt.getRank() != 2)
    return l.fail("a result that is not of rank 2");
  int64_t r = l.rankOf(x);
  ImplicitLocOpBuilder &b = l.b;
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  auto nonZero = [&](ImplicitLocOpBuilder &ib, Value v) -> Value {
    return convert(ib, v, i1); // x != 0, NaN included
  };
  auto one64 = [&](ImplicitLocOpBuilder &ib, Value c) -> Value {
    return arith::ExtUIOp::create(ib, i64, c);
  };
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < r; ++d)
    all.push_back(d);
  // N: the number of non-zero elements.
  Value count = l.reduce(
      x, all, i64, b.getI64IntegerAttr(0), {},
      [&](ImplicitLocOpBuilder &ib, Value acc, Value v, ValueRange) -> Value {
        return arith::AddIOp::create(ib, acc, one64(ib, nonZero(ib, v)));
      });
  Value n = arith::IndexCastOp::create(
      b, b.getIndexType(), tensor::ExtractOp::create(b, count, ValueRange{}));

  // The count of each block of kNonZeroBlock flat positions.
  OpFoldResult numel = l.numel(x);
  OpFoldResult blocks = l.ceilDiv(numel, l.idx(kNonZeroBlock));
  auto countsType = RankedTensorType::get(
      {getConstantIntValue(blocks).value_or(ShapedType::kDynamic)}, i64);
  SmallVector<Value> dims;
  for (int64_t d = 0; d < r; ++d)
    dims.push_back(l.val(l.dim(x, d)));
  Value total = l.val(numel), nb = l.val(blocks);
  Value zero = cidx(b, 0), one = cidx(b, 1), blk = cidx(b, kNonZeroBlock);
  // Whether flat position p (of a block) is a non-zero element of x.
  auto isNonZeroAt = [&](ImplicitLocOpBuilder &ib, Value p) -> Value {
    Value in = arith::CmpIOp::create(ib, arith::CmpIPredicate::ult, p, total);
    Value last = arith::SubIOp::create(ib, total, one);
    Value q = arith::SelectOp::create(ib, in, p, last);
    Value v = tensor::ExtractOp::create(ib, x, coordinatesOf(ib, q, dims));
    return arith::AndIOp::create(ib, in, nonZero(ib, v));
  };
  Value counts = l.generic(
      countsType, {blocks}, {}, {},
      [&](ImplicitLocOpBuilder &ib, ValueRange) -> Value {
        Value base =
            arith::MulIOp::create(ib, linalg::IndexOp::create(ib, 0), blk);
        auto loop = scf::ForOp::create(
            ib, zero, blk, one, ValueRange{scalar(ib, i64, 0)},
            [&](OpBuilder &nb0, Location loc, Value t, ValueRange acc) {
              ImplicitLocOpBuilder lb(loc, nb0);
              Value c = one64(
                  lb, isNonZeroAt(lb, arith::AddIOp::create(lb, base, t)));
              scf::YieldOp::create(
                  lb, ValueRange{arith::AddIOp::create(lb, acc[0], c)});
            });
        return loop.getResult(0);
      });

  // Element (d, j): coordinate d of the j-th non-zero element.
  SmallVector<OpFoldResult> sizes{l.idx(r), OpFoldResult(n)};
  sizes = l.sizesOf(rt, sizes);
  l.checkBufferSize(sizes, i64,
                    "gatec: a NonZero result that needs a buffer over 2^47 "
                    "bytes" +
                        where(op));
  return l.done(l.generic(
      rt, sizes, {}, {}, [&](ImplicitLocOpBuilder &ib, ValueRange) -> Value {
        Value d = linalg::IndexOp::create(ib, 0);
        Value j =
            arith::IndexCastOp::create(ib, i64, linalg::IndexOp::create(ib, 1));
        using P = arith::CmpIPredicate;
        // The block holding it, and the non-zero elements before that
        // block.
        Value none = cidx(ib, -1), zero64 = scalar(ib, i64, 0);
        auto scan = scf::ForOp::create(
            ib, zero, nb, one, ValueRange{none, zero64, zero64},
            [&](OpBuilder &sb0, Location loc, Value k, ValueRange s) {
              ImplicitLocOpBuilder sb(loc, sb0);
              Value c = tensor::ExtractOp::create(sb, counts, ValueRange{k});
              Value next = arith::AddIOp::create(sb, s[2], c);
              Value hit = arith::AndIOp::create(
                  sb, arith::CmpIOp::create(sb, P::slt, s[0], zero),
                  arith::CmpIOp::create(sb, P::sgt, next, j));
              scf::YieldOp::create(
                  sb, ValueRange{arith::SelectOp::create(sb, hit, k, s[0]),
                                 arith::SelectOp::create(sb, hit, s[2], s[1]),
                                 next});
            });
        Value block = arith::MaxSIOp::create(ib, scan.getResult(0), zero);
        Value base = arith::MulIOp::create(ib, block, blk);
        // Its position within the block.
        auto find = scf::ForOp::create(
            ib, zero, blk, one, ValueRange{none, scan.getResult(1)},
            [&](OpBuilder &fb0, Location loc, Value t, ValueRange s) {
              ImplicitLocOpBuilder fb(loc, fb0);
              Value p = arith::AddIOp::create(fb, base, t);
              Value nz = isNonZeroAt(fb, p);
              Value hit = arith::AndIOp::create(
                  fb, nz,
                  arith::AndIOp::create(
                      fb, arith::CmpIOp::create(fb, P::slt, s[0], zero),
                      arith::CmpIOp::create(fb, P::eq, s[1], j)));
              scf::YieldOp::create(
                  fb,
                  ValueRange{arith::SelectOp::create(fb, hit, p, s[0]),
                             arith::AddIOp::create(fb, s[1], one64(fb, nz))});
            });
        // Never -1 (j < N): clamped all the same.
        Value pos = arith::MaxSIOp::create(ib, find.getResult(0), zero);
        SmallVector<Value> at = coordinatesOf(ib, pos, dims);
        Value coord = zero;
        for (int64_t k = 0; k < r; ++k)
          coord = arith::SelectOp::create(
              ib, arith::CmpIOp::create(ib, P::eq, d, cidx(ib, k)), at[k],
              coord);
        return arith::IndexCastOp::create(ib, i64, coord);
      }));
}

} // namespace gatec::conversion::onnx_to_linalg
