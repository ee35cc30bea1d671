//===- Pad.cpp - Pad ------------------------------------------------------===//
//
// ONNX Pad (opsets 11 to 25: pads, constant_value and axes inputs; modes
// constant, reflect, edge and wrap) as one linalg.generic over the result
// reading the element of the input each output element copies.
//
// As onnxruntime computes it, a negative pad crops: each dim of size D with
// pads (b, e) is first cropped to D' = D + min(b, 0) + min(e, 0) elements
// from offset -min(b, 0), then padded by max(b, 0) before and max(e, 0)
// after. Output position o reads i = o - max(b, 0) of the cropped dim:
// constant mode reads the constant where i is outside [0, D'), edge clamps
// i to [0, D' - 1], reflect mirrors it about the first and last elements
// (-i, 2 (D' - 1) - i), wrap takes it modulo D'.
//
// What onnxruntime refuses is the run's error naming the node (a compile
// error where the sizes and pads are constants): a result dim D + b + e < 0,
// reflect, edge or wrap padding of a dim with D' <= 0, a reflect pad not
// smaller than D' (numpy would reflect again; onnxruntime does not), pads
// of another length than twice the number of axes, axes out of range, a
// constant_value that is not one element, and results whose buffer would
// exceed 2^47 bytes. Repeated axes: the last entry wins, as in
// onnxruntime and the ONNX reference.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

namespace gatec::conversion::onnx_to_linalg {

namespace {

enum class PadMode { Constant, Reflect, Edge, Wrap };

/// The conditions that must hold at run time, each with its message: a
/// constant false one is a compile error, a constant true one is dropped.
struct Checks {
  Lowerer &l;
  std::string where;
  SmallVector<std::pair<Value, std::string>> conds;

  /// Adds `ok`; false if it is known to be false (the error is reported).
  LogicalResult add(Value ok, const std::string &what) {
    if (auto c = getConstantIntValue(ok)) {
      if (*c)
        return success();
      return l.fail(what);
    }
    conds.push_back({ok, "gatec: " + what + where});
    return success();
  }
  /// The cf.asserts of the conditions added so far.
  void emit() {
    for (auto &[ok, message] : conds)
      cf::AssertOp::create(l.b, ok, message);
    conds.clear();
  }
};

} // namespace

LogicalResult lower(onnx::PadOp op, Lowerer &l) {
  Value x = l.in[0], pads = l.in[1], cv = l.in[2], axesT = l.in[3];
  RankedTensorType rt = l.resultType();
  int64_t r = l.rankOf(x);
  StringRef modeName = op.getMode();
  PadMode mode;
  if (modeName == "constant")
    mode = PadMode::Constant;
  else if (modeName == "reflect")
    mode = PadMode::Reflect;
  else if (modeName == "edge")
    mode = PadMode::Edge;
  else if (modeName == "wrap")
    mode = PadMode::Wrap;
  else
    return l.fail("mode '" + modeName +
                  "' (only constant, reflect, edge and wrap)");
  if (l.rankOf(pads) != 1)
    return l.fail("pads that are not a 1-D tensor");
  if (axesT && l.rankOf(axesT) != 1)
    return l.fail("axes that are not a 1-D tensor");
  ImplicitLocOpBuilder &b = l.b;
  using P = arith::CmpIPredicate;
  Checks checks{l, " in " + describeOp(op->getLoc()) + " (Pad)", {}};
  auto cmp = [&](P p, OpFoldResult x, OpFoldResult y) -> Value {
    return b.createOrFold<arith::CmpIOp>(p, l.val(x), l.val(y));
  };
  auto both = [&](Value p, Value q) -> Value {
    return b.createOrFold<arith::AndIOp>(p, q);
  };
  auto either = [&](Value p, Value q) -> Value {
    return b.createOrFold<arith::OrIOp>(p, q);
  };

  // The pads (begin, end) of every dim, 0 for dims no axis names.
  SmallVector<OpFoldResult> pb(r, l.idx(0)), pe(r, l.idx(0));
  std::optional<SmallVector<int64_t>> axes;
  if (!axesT) {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, r));
  } else if (auto c = onnx::getConstantInts(op.getAxes())) {
    axes = *c;
    for (int64_t &a : *axes) {
      auto n = normAxis(a, r);
      if (!n)
        return l.fail("an axis out of range (" + Twine(a) + " for rank " +
                      Twine(r) + ")");
      a = *n;
    }
  }
  OpFoldResult padLen = l.dim(pads, 0);
  auto cpads = onnx::getConstantInts(op.getPads());
  bool runTimePads = !axes || !cpads;
  if (axes) {
    int64_t m = axes->size();
    if (failed(checks.add(cmp(P::eq, padLen, l.idx(2 * m)),
                          "pads of another length than 2 * " +
                              std::to_string(m) + " (the number of axes)")))
      return failure();
    checks.emit(); // before the pads are read
    for (int64_t i = 0; i < m; ++i) {
      int64_t a = (*axes)[i];
      pb[a] = cpads ? l.idx((*cpads)[i]) : l.elementIndex(pads, i);
      pe[a] = cpads ? l.idx((*cpads)[m + i]) : l.elementIndex(pads, m + i);
    }
  } else {
    // Axes read at run time: checked in range, then a loop over them
    // picks each dim's pads (the last entry naming it wins).
    l.checkAll(
        axesT,
        [&](ImplicitLocOpBuilder &ib, Value a) -> Value {
          Value v = arith::IndexCastOp::create(ib, ib.getIndexType(), a);
          return arith::AndIOp::create(
              ib, arith::CmpIOp::create(ib, P::sge, v, cidx(ib, -r)),
              arith::CmpIOp::create(ib, P::slt, v, cidx(ib, r)));
        },
        axisOutOfRange(op));
    OpFoldResult m = l.dim(axesT, 0);
    if (failed(checks.add(cmp(P::eq, padLen, l.mul(m, l.idx(2))),
                          "pads of another length than 2 * the number of "
                          "axes")))
      return failure();
    checks.emit();
    SmallVector<Value> init(2 * r, cidx(b, 0));
    Value mv = l.val(m);
    auto loop = scf::ForOp::create(
        b, cidx(b, 0), mv, cidx(b, 1), init,
        [&](OpBuilder &nb, Location loc, Value i, ValueRange cur) {
          ImplicitLocOpBuilder ib(loc, nb);
          Value a = normAxisValue(ib, indexAt(ib, axesT, i), r);
          Value vb = indexAt(ib, pads, i);
          Value ve = indexAt(ib, pads, arith::AddIOp::create(ib, i, mv));
          SmallVector<Value> next;
          for (int64_t d = 0; d < r; ++d) {
            Value is = arith::CmpIOp::create(ib, P::eq, a, cidx(ib, d));
            next.push_back(arith::SelectOp::create(ib, is, vb, cur[d]));
          }
          for (int64_t d = 0; d < r; ++d) {
            Value is = arith::CmpIOp::create(ib, P::eq, a, cidx(ib, d));
            next.push_back(arith::SelectOp::create(ib, is, ve, cur[r + d]));
          }
          scf::YieldOp::create(ib, next);
        });
    for (int64_t d = 0; d < r; ++d) {
      pb[d] = loop.getResult(d);
      pe[d] = loop.getResult(r + d);
    }
  }

  // Per dim: the result size, the cropped extent D', its offset and the
  // pad before it; checked as onnxruntime checks them.
  SmallVector<OpFoldResult> sizes, extent, offset, before;
  SmallVector<bool> padded;
  for (int64_t d = 0; d < r; ++d) {
    OpFoldResult D = l.dim(x, d);
    bool none = isConstantIntValue(pb[d], 0) && isConstantIntValue(pe[d], 0);
    padded.push_back(!none);
    OpFoldResult lo = l.min(pb[d], l.idx(0)), hi = l.min(pe[d], l.idx(0));
    OpFoldResult n = l.add(l.add(D, pb[d]), pe[d]);
    sizes.push_back(n);
    extent.push_back(l.add(l.add(D, lo), hi));
    offset.push_back(l.sub(l.idx(0), lo));
    before.push_back(l.max(pb[d], l.idx(0)));
    if (none)
      continue;
    std::string dim = "dim " + std::to_string(d);
    // Pads within +-2^62, so that no size or offset below wraps around.
    if (runTimePads) {
      OpFoldResult big = l.idx(int64_t(1) << 62),
                   small = l.idx(-(int64_t(1) << 62));
      Value ok = both(both(cmp(P::sle, pb[d], big), cmp(P::sge, pb[d], small)),
                      both(cmp(P::sle, pe[d], big), cmp(P::sge, pe[d], small)));
      if (failed(checks.add(ok, "a pad of " + dim + " outside [-2^62, 2^62]")))
        return failure();
    }
    // D >= 0: pads that are constants >= 0 cannot make it negative.
    auto cb = getConstantIntValue(pb[d]), ce = getConstantIntValue(pe[d]);
    if (!(cb && ce && *cb >= 0 && *ce >= 0) &&
        failed(checks.add(cmp(P::sge, n, l.idx(0)),
                          "pads that make " + dim + " negative")))
      return failure();
    if (mode == PadMode::Constant)
      continue;
    Value noPads =
        both(cmp(P::eq, pb[d], l.idx(0)), cmp(P::eq, pe[d], l.idx(0)));
    if (failed(checks.add(either(noPads, cmp(P::sgt, extent[d], l.idx(0))),
                          "'" + modeName.str() + "' padding of " + dim +
                              " with no elements (after the negative pads)")))
      return failure();
    if (mode != PadMode::Reflect)
      continue;
    OpFoldResult after = l.max(pe[d], l.idx(0));
    Value ok = both(
        either(cmp(P::eq, before[d], l.idx(0)),
               cmp(P::slt, before[d], extent[d])),
        either(cmp(P::eq, after, l.idx(0)), cmp(P::slt, after, extent[d])));
    if (failed(checks.add(ok, "a 'reflect' pad of " + dim +
                                  " not smaller than the dim (after the "
                                  "negative pads)")))
      return failure();
  }
  sizes = l.sizesOf(rt, sizes);
  checks.emit();
  if (runTimePads)
    l.checkBufferSize(sizes, rt.getElementType(),
                      "gatec: a Pad result that needs a buffer over 2^47 "
                      "bytes" +
                          checks.where);

  // The constant, one element (0 / false without one), read by the
  // generic (an initializer stays a tensor the generic reads).
  Type e = rt.getElementType();
  SmallVector<Value> ins;
  SmallVector<AffineMap> maps;
  Value constValue;
  if (mode == PadMode::Constant && cv) {
    RankedTensorType ct = l.typeOf(cv);
    if (ct.getElementType() != e)
      return l.fail("a constant_value of another element type than data");
    if (ct.hasStaticShape() && ct.getNumElements() != 1)
      return l.fail("a constant_value of " + Twine(ct.getNumElements()) +
                    " elements (one)");
    if (!ct.hasStaticShape())
      cf::AssertOp::create(b, cmp(P::eq, l.numel(cv), l.idx(1)),
                           "gatec: a constant_value that is not one element" +
                               checks.where);
    if (Value c = constantElement(b, op.getConstantValue(), 0))
      constValue = c;
    else
      ins.push_back(cv);
    if (!constValue)
      maps.push_back(AffineMap::get(
          r, 0,
          SmallVector<AffineExpr>(ct.getRank(), b.getAffineConstantExpr(0)),
          b.getContext()));
  }

  SmallVector<Value> ext, off, pre;
  for (int64_t d = 0; d < r; ++d) {
    ext.push_back(l.val(extent[d]));
    off.push_back(l.val(offset[d]));
    pre.push_back(l.val(before[d]));
  }
  bool anyPadded = llvm::is_contained(padded, true);
  return l.done(l.generic(
      rt, sizes, ins, maps,
      [&](ImplicitLocOpBuilder &ib, ValueRange a) -> Value {
        Value zero = cidx(ib, 0), one = cidx(ib, 1);
        Value value;
        if (mode == PadMode::Constant)
          value = constValue ? constValue : a.empty() ? scalar(ib, e, 0) : a[0];
        SmallVector<Value> at;
        Value inside;
        for (int64_t d = 0; d < r; ++d) {
          Value o = linalg::IndexOp::create(ib, d);
          if (!padded[d]) {
            at.push_back(o);
            continue;
          }
          Value i = arith::SubIOp::create(ib, o, pre[d]);
          Value last = arith::SubIOp::create(ib, ext[d], one);
          auto clamp = [&](Value v) -> Value {
            return arith::MaxSIOp::create(
                ib, arith::MinSIOp::create(ib, v, last), zero);
          };
          switch (mode) {
          case PadMode::Constant: {
            Value in = arith::AndIOp::create(
                ib, arith::CmpIOp::create(ib, P::sge, i, zero),
                arith::CmpIOp::create(ib, P::slt, i, ext[d]));
            inside = inside ? (Value)arith::AndIOp::create(ib, inside, in) : in;
            break;
          }
          case PadMode::Edge:
            i = clamp(i);
            break;
          case PadMode::Reflect: {
            Value neg = arith::CmpIOp::create(ib, P::slt, i, zero);
            i = arith::SelectOp::create(ib, neg,
                                        arith::SubIOp::create(ib, zero, i), i);
            Value past = arith::CmpIOp::create(ib, P::sgt, i, last);
            Value back = arith::SubIOp::create(
                ib, arith::AddIOp::create(ib, last, last), i);
            i = clamp(arith::SelectOp::create(ib, past, back, i));
            break;
          }
          case PadMode::Wrap: {
            Value n = arith::MaxSIOp::create(ib, ext[d], one); // no trap
            Value m = arith::RemSIOp::create(ib, i, n);
            Value neg = arith::CmpIOp::create(ib, P::slt, m, zero);
            i = arith::SelectOp::create(ib, neg,
                                        arith::AddIOp::create(ib, m, n), m);
            break;
          }
          }
          at.push_back(arith::AddIOp::create(ib, off[d], i));
        }
        if (mode != PadMode::Constant || !anyPadded)
          return tensor::ExtractOp::create(ib, x, at);
        // Read only inside the (cropped) input: it may have no elements.
        auto branch = scf::IfOp::create(
            ib, inside,
            [&](OpBuilder &nb, Location loc) {
              Value v = tensor::ExtractOp::create(nb, loc, x, at);
              scf::YieldOp::create(nb, loc, v);
            },
            [&](OpBuilder &nb, Location loc) {
              scf::YieldOp::create(nb, loc, value);
            });
        return branch.getResult(0);
      }));
}

} // namespace gatec::conversion::onnx_to_linalg
