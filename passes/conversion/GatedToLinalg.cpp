//===- GatedToLinalg.cpp - --convert-gated-to-linalg ----------------------===//
#include "passes/common/Activations.h"
#include "passes/common/Broadcast.h"
#include "passes/common/TensorBuilder.h"
#include "passes/conversion/Passes.h"

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

namespace gatec::conversion {
#define GEN_PASS_DEF_CONVERTGATEDTOLINALG
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

using namespace mlir;
using namespace gatec;

namespace {
using utils::IteratorType;
constexpr int64_t kDyn = ShapedType::kDynamic;

/// Builds linalg on tensors at one insertion point.
struct Lowerer : common::TensorBuilder {
  using TensorBuilder::TensorBuilder;

  /// tensor.empty of `shape` (f32) filled with v; dynamic sizes from
  /// (source, dim) pairs.
  Value filled(ArrayRef<int64_t> shape,
               ArrayRef<std::pair<Value, int64_t>> from, double v) {
    SmallVector<Value> dyn;
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == kDyn)
        dyn.push_back(dim(from[i].first, from[i].second));
    return fill(empty(shape, f32, dyn), v);
  }

  // Activations, in f32.
  Value sigmoid(OpBuilder &nb, Value z) { return common::sigmoid(nb, loc, z); }
  Value gateAct(OpBuilder &nb, gated::GateActivation a, Value z) {
    return common::gateActivation(nb, loc, a, z);
  }
  Value gluAct(OpBuilder &nb, gated::GluActivation a, Value z) {
    return common::gluActivation(nb, loc, a, z);
  }

  /// An element-wise linalg.generic over `outType`'s shape, whose dynamic
  /// sizes are those of `dimsFrom` or, where that is empty, the broadcast of
  /// the inputs' sizes (every input, the first included, may then be 1 at
  /// run time where another is not).
  /// `rowInputs` marks inputs that hold one value per row (all dims but
  /// the last), as the norms' reductions do.
  Value elementwise(RankedTensorType outType, ValueRange ins,
                    ArrayRef<std::pair<Value, int64_t>> dimsFrom,
                    function_ref<Value(OpBuilder &, ValueRange)> body,
                    ArrayRef<bool> rowInputs = {}) {
    int64_t rank = outType.getRank();
    SmallVector<OpFoldResult> sizes;
    if (dimsFrom.empty())
      sizes = common::broadcastSizes(b, loc, outType, ins);
    for (int64_t d = 0; d < rank && !dimsFrom.empty(); ++d)
      sizes.push_back(
          outType.isDynamicDim(d)
              ? OpFoldResult(dim(dimsFrom[d].first, dimsFrom[d].second))
              : OpFoldResult(b.getIndexAttr(outType.getDimSize(d))));
    SmallVector<Value> operands;
    SmallVector<AffineMap> maps;
    for (auto [i, in] : llvm::enumerate(ins)) {
      if (i < rowInputs.size() && rowInputs[i]) {
        operands.push_back(in);
        maps.push_back(b.getMultiDimIdentityMap(rank).dropResult(rank - 1));
        continue;
      }
      // A gate or weight whose dynamic dim may be 1 at run time.
      operands.push_back(
          common::broadcastAtRunTime(b, loc, in, outType.getShape(), sizes));
      maps.push_back(common::broadcastMap(
          b.getContext(), cast<ShapedType>(in.getType()), outType.getShape()));
    }
    maps.push_back(b.getMultiDimIdentityMap(rank));
    SmallVector<Value> dyn;
    for (int64_t d = 0; d < rank; ++d)
      if (outType.isDynamicDim(d))
        dyn.push_back(getValueOrCreateConstantIndexOp(b, loc, sizes[d]));
    Value init = tensor::EmptyOp::create(b, loc, outType.getShape(),
                                         outType.getElementType(), dyn);
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{outType}, operands, ValueRange{init}, maps,
        parallel(rank), [&](OpBuilder &nb, Location, ValueRange args) {
          Value r = body(nb, args.drop_back());
          linalg::YieldOp::create(nb, loc, r);
        });
    return g.getResult(0);
  }
};

/// (source, dim) for each dim of a value: itself.
SmallVector<std::pair<Value, int64_t>> selfDims(Value v) {
  SmallVector<std::pair<Value, int64_t>> out;
  for (int64_t i = 0; i < cast<ShapedType>(v.getType()).getRank(); ++i)
    out.push_back({v, i});
  return out;
}

LogicalResult lower(gated::GateOp op, OpBuilder &b) {
  Lowerer l(b, op.getLoc());
  auto t = dyn_cast<RankedTensorType>(op.getType());
  if (!t)
    return op.emitOpError() << "needs ranked tensors to lower";
  Type e = t.getElementType();
  // Sized by the gated value x (the op's type is x's): a gate that is 1
  // where x is not broadcasts at run time; an x that is 1 where the gate is
  // not fails the run-time check (unsupported: the kernel keeps x's tile).
  Value r = l.elementwise(
      t, {op.getX(), op.getGate()}, selfDims(op.getX()),
      [&](OpBuilder &nb, ValueRange a) {
        Value x = l.ext(nb, a[0]);
        Value g = l.gateAct(nb, op.getActivation(), l.ext(nb, a[1]));
        Value v = op.getMode() == gated::GateMode::multiply
                      ? (Value)arith::MulFOp::create(nb, l.loc, x, g)
                      : (Value)arith::AddFOp::create(nb, l.loc, x, g);
        return l.trunc(nb, v, e);
      });
  op.getResult().replaceAllUsesWith(r);
  return success();
}

LogicalResult lower(gated::ResidualOp op, OpBuilder &b) {
  Lowerer l(b, op.getLoc());
  auto t = dyn_cast<RankedTensorType>(op.getType());
  if (!t)
    return op.emitOpError() << "needs ranked tensors to lower";
  Type e = t.getElementType();
  SmallVector<Value> ins{op.getX(), op.getY()};
  if (op.getGate())
    ins.push_back(op.getGate());
  using K = gated::ResidualKind;
  K kind = op.getKind();
  // Sized by the residual stream x (the op's type is x's): y or a gate that
  // is 1 where x is not broadcasts at run time; an x that is 1 where they
  // are not fails the run-time check (unsupported, as in gated.gate).
  Value r = l.elementwise(
      t, ins, selfDims(op.getX()), [&](OpBuilder &nb, ValueRange a) -> Value {
        Location loc = l.loc;
        Value x = l.ext(nb, a[0]), y = l.ext(nb, a[1]);
        Value g = a.size() > 2 ? l.ext(nb, a[2]) : Value();
        auto add = [&](Value p, Value q) {
          return arith::AddFOp::create(nb, loc, p, q);
        };
        auto mul = [&](Value p, Value q) {
          return arith::MulFOp::create(nb, loc, p, q);
        };
        auto oneMinus = [&](Value p) {
          return arith::SubFOp::create(nb, loc, l.cst(nb, 1.0), p);
        };
        Value v;
        switch (kind) {
        case K::add:
          v = add(x, y);
          break;
        case K::input:
          v = add(mul(l.sigmoid(nb, g), x), y);
          break;
        case K::output:
          v = add(x, mul(l.sigmoid(nb, g), y));
          break;
        case K::highway: {
          Value s = l.sigmoid(nb, g);
          v = add(mul(s, x), mul(oneMinus(s), y));
          break;
        }
        case K::sigtanh:
          v = add(x, mul(l.sigmoid(nb, g), math::TanhOp::create(nb, loc, y)));
          break;
        case K::gru: {
          Value z = l.sigmoid(nb, g);
          v = add(mul(oneMinus(z), x),
                  mul(z, math::TanhOp::create(nb, loc, y)));
          break;
        }
        case K::tanh_scalar:
          v = add(x, mul(math::TanhOp::create(nb, loc, g), y));
          break;
        case K::rezero:
        case K::layerscale:
          v = add(x, mul(g, y));
          break;
        }
        return l.trunc(nb, v, e);
      });
  op.getResult().replaceAllUsesWith(r);
  return success();
}

/// A zero-filled f32 tensor of x's leading dims (all but the last), and
/// those dims as the exprs d0 … d(r−2).
std::pair<Value, SmallVector<AffineExpr>> leadingDims(Lowerer &l, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(t.getShape().drop_back());
  auto dims = selfDims(x);
  dims.pop_back();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i + 1 < t.getRank(); ++i)
    exprs.push_back(l.b.getAffineDimExpr(i));
  return {l.filled(shape, dims, 0.0), exprs};
}

/// Σ over the last dimension of f(x) into a [..., 1]-less f32 tensor; with
/// `center` (a tensor of the leading dims) or `shiftFirst` (the row's first
/// element, read from x itself), term(x, c) gets that value as c.
Value reduceLast(Lowerer &l, Value x, Value center,
                 function_ref<Value(OpBuilder &, Value, Value)> term,
                 bool shiftFirst = false) {
  int64_t r = cast<RankedTensorType>(x.getType()).getRank();
  auto [init, outExprs] = leadingDims(l, x);
  AffineMap id = l.b.getMultiDimIdentityMap(r);
  AffineMap out = AffineMap::get(r, 0, outExprs, l.b.getContext());
  SmallVector<IteratorType> it = l.parallel(r - 1);
  it.push_back(IteratorType::reduction);
  SmallVector<Value> ins{x};
  SmallVector<AffineMap> maps{id};
  if (center) {
    ins.push_back(center);
    maps.push_back(out);
  } else if (shiftFirst) {
    SmallVector<AffineExpr> first(outExprs);
    first.push_back(l.b.getAffineConstantExpr(0));
    ins.push_back(x);
    maps.push_back(AffineMap::get(r, 0, first, l.b.getContext()));
  }
  maps.push_back(out);
  auto g = linalg::GenericOp::create(
      l.b, l.loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps, it,
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value v = l.ext(nb, a[0]);
        Value c = center ? a[1] : shiftFirst ? l.ext(nb, a[1]) : Value();
        Value s = arith::AddFOp::create(nb, loc, a.back(), term(nb, v, c));
        linalg::YieldOp::create(nb, loc, s);
      });
  return g.getResult(0);
}

/// mean[...] = x[..., 0] + s[...] / n for a tensor x whose last dim is
/// static and non-empty (s: the sum of x − x[..., 0] over that dim).
Value shiftedMean(Lowerer &l, Value x, Value s, Value n) {
  int64_t r = cast<RankedTensorType>(x.getType()).getRank();
  auto [init, exprs] = leadingDims(l, x);
  exprs.push_back(l.b.getAffineConstantExpr(0));
  AffineMap read = AffineMap::get(r - 1, 0, exprs, l.b.getContext());
  AffineMap id = l.b.getMultiDimIdentityMap(r - 1);
  auto g = linalg::GenericOp::create(
      l.b, l.loc, TypeRange{init.getType()}, ValueRange{x, s}, ValueRange{init},
      {read, id, id}, l.parallel(r - 1),
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value m = arith::DivFOp::create(nb, loc, a[1], n);
        linalg::YieldOp::create(
            nb, loc,
            ValueRange{arith::AddFOp::create(nb, loc, l.ext(nb, a[0]), m)});
      });
  return g.getResult(0);
}

/// The last dimension's size as an f32 value.
Value lastDimF32(Lowerer &l, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t d = t.getDimSize(t.getRank() - 1);
  if (d != kDyn)
    return l.cst((double)d);
  Value idx = l.dim(x, t.getRank() - 1);
  Value i64 = arith::IndexCastOp::create(l.b, l.loc, l.b.getI64Type(), idx);
  return arith::UIToFPOp::create(l.b, l.loc, l.f32, i64);
}

LogicalResult lower(gated::RMSNormOp op, OpBuilder &b) {
  Lowerer l(b, op.getLoc());
  auto t = dyn_cast<RankedTensorType>(op.getType());
  if (!t || t.getRank() < 1)
    return op.emitOpError() << "needs a ranked tensor to lower";
  if (op.getGate() && !isa<RankedTensorType>(op.getGate().getType()))
    return op.emitOpError() << "needs a ranked gate to lower";
  Type e = t.getElementType();
  Value x = op.getX();
  bool gateAfter = op.getGate() && !op.getGateFirst();
  if (op.getGateFirst()) {
    // Mamba2's gated norm: x ⊙ act(gate) is what is normalised (an f32
    // producer that elementwise fusion recomputes in both of its readers).
    auto ft = RankedTensorType::get(t.getShape(), l.f32);
    // (Broadcast sizes: x or the gate may be 1 where the other is not.)
    x = l.elementwise(
        ft, {x, op.getGate()}, {}, [&](OpBuilder &nb, ValueRange a) -> Value {
          return arith::MulFOp::create(
              nb, l.loc, l.ext(nb, a[0]),
              l.gateAct(nb, *op.getGateActivation(), l.ext(nb, a[1])));
        });
  }
  Value ss = reduceLast(l, x, {}, [&](OpBuilder &nb, Value v, Value) {
    return arith::MulFOp::create(nb, l.loc, v, v);
  });
  Value n = lastDimF32(l, x);
  Value eps = l.cst(op.getEpsilon().convertToDouble());
  bool offset = (bool)op.getUnitOffset();
  SmallVector<Value> ins{x, ss, op.getWeight()};
  if (gateAfter)
    ins.push_back(op.getGate());
  // A gate after the norm broadcasts with x (ONNX's Mul: either may have
  // size 1 where the other does not): the rows' sums as [..., 1] and the
  // broadcast of all sizes; without one, x's own sizes.
  bool bcast = gateAfter && t.getRank() >= 2;
  if (bcast) {
    auto st = cast<RankedTensorType>(ss.getType());
    SmallVector<int64_t> shape(st.getShape());
    shape.push_back(1);
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < st.getRank(); ++i)
      sizes.push_back(st.isDynamicDim(i) ? OpFoldResult(l.dim(ss, i))
                                         : b.getIndexAttr(st.getDimSize(i)));
    sizes.push_back(b.getIndexAttr(1));
    SmallVector<ReassociationIndices> re;
    for (int64_t i = 0; i + 1 < st.getRank(); ++i)
      re.push_back({i});
    re.push_back({st.getRank() - 1, st.getRank()});
    ins[1] = tensor::ExpandShapeOp::create(
        b, l.loc, RankedTensorType::get(shape, st.getElementType()), ss, re,
        sizes);
  }
  Value r = l.elementwise(
      t, ins,
      bcast ? ArrayRef<std::pair<Value, int64_t>>{}
            : ArrayRef<std::pair<Value, int64_t>>(selfDims(x)),
      [&](OpBuilder &nb, ValueRange a) {
        Location loc = l.loc;
        Value mean = arith::DivFOp::create(nb, loc, a[1], n);
        Value inv = math::RsqrtOp::create(
            nb, loc, arith::AddFOp::create(nb, loc, mean, eps));
        Value w = l.ext(nb, a[2]);
        if (offset)
          w = arith::AddFOp::create(nb, loc, l.cst(nb, 1.0), w);
        Value v = arith::MulFOp::create(
            nb, loc, arith::MulFOp::create(nb, loc, l.ext(nb, a[0]), inv), w);
        // The gated RMSNorm's output gate, on the normalised row.
        if (gateAfter)
          v = arith::MulFOp::create(
              nb, loc, v,
              l.gateAct(nb, *op.getGateActivation(), l.ext(nb, a[3])));
        return l.trunc(nb, v, e);
      },
      bcast ? ArrayRef<bool>{} : ArrayRef<bool>{false, true});
  op.getResult().replaceAllUsesWith(r);
  return success();
}

/// gated.short_conv as one loop nest over (n, ch, t): the K taps of the
/// causal conv read b ⊙ x at t − (K − 1) + k (zero before the start), the
/// bias and the output gate c applied before the single store. x and b are
/// read in place (tensor.extract), so b ⊙ x is never materialised, nor a
/// padded copy.
LogicalResult lower(gated::ShortConvOp op, OpBuilder &b) {
  Lowerer l(b, op.getLoc());
  auto t = dyn_cast<RankedTensorType>(op.getType());
  auto wt = dyn_cast<RankedTensorType>(op.getWeight().getType());
  if (!t || !wt || t.getRank() != 3 ||
      (op.getBias() && !isa<RankedTensorType>(op.getBias().getType())))
    return op.emitOpError() << "needs ranked tensors to lower";
  if (t.isDynamicDim(1))
    return op.emitOpError() << "needs a static channel count to lower";
  Location loc = l.loc;
  Type e = t.getElementType();
  Value x = op.getX(), bg = op.getB(), c = op.getC();
  // b and c are read at x's indices: equal sizes (no broadcast).
  for (Value v : {bg, c})
    for (int64_t i : {0, 2})
      common::checkEqualDim(b, loc, v, i, OpFoldResult(l.dim(x, i)));
  int64_t k = wt.getDimSize(2);
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  SmallVector<Value> ins{c};
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(3, ctx)};
  for (int64_t j = 0; j < k; ++j) {
    ins.push_back(op.getWeight());
    maps.push_back(AffineMap::get(
        3, 0,
        {d1, getAffineConstantExpr(0, ctx), getAffineConstantExpr(j, ctx)},
        ctx));
  }
  if (op.getBias()) {
    ins.push_back(op.getBias());
    maps.push_back(AffineMap::get(3, 0, {d1}, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(3, ctx));
  SmallVector<Value> dyn;
  for (int64_t i : {0, 2})
    if (t.isDynamicDim(i))
      dyn.push_back(l.dim(x, i));
  Value init = tensor::EmptyOp::create(b, loc, t.getShape(), e, dyn);
  bool hasBias = (bool)op.getBias();
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{t}, ins, ValueRange{init}, maps, l.parallel(3),
      [&](OpBuilder &nb, Location, ValueRange a) {
        Value n = linalg::IndexOp::create(nb, loc, 0);
        Value ch = linalg::IndexOp::create(nb, loc, 1);
        Value tt = linalg::IndexOp::create(nb, loc, 2);
        Value zero = arith::ConstantIndexOp::create(nb, loc, 0);
        Value acc = hasBias ? l.ext(nb, a[1 + k]) : l.cst(nb, 0.0);
        for (int64_t j = 0; j < k; ++j) {
          // s = t − (K − 1) + j; taps before the sequence start read 0.
          Value s = arith::AddIOp::create(
              nb, loc, tt, arith::ConstantIndexOp::create(nb, loc, j - k + 1));
          Value in = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::sge,
                                           s, zero);
          Value si = arith::SelectOp::create(nb, loc, in, s, zero);
          Value xv = l.ext(
              nb, tensor::ExtractOp::create(nb, loc, x, ValueRange{n, ch, si}));
          Value bv = l.ext(nb, tensor::ExtractOp::create(
                                   nb, loc, bg, ValueRange{n, ch, si}));
          Value p = arith::SelectOp::create(
              nb, loc, in, arith::MulFOp::create(nb, loc, bv, xv),
              l.cst(nb, 0.0));
          acc = math::FmaOp::create(nb, loc, l.ext(nb, a[1 + j]), p, acc);
        }
        Value r = arith::MulFOp::create(nb, loc, l.ext(nb, a[0]), acc);
        linalg::YieldOp::create(nb, loc, l.trunc(nb, r, e));
      });
  op.getResult().replaceAllUsesWith(g.getResult(0));
  return success();
}

LogicalResult lower(gated::LayerNormOp op, OpBuilder &b) {
  Lowerer l(b, op.getLoc());
  auto t = dyn_cast<RankedTensorType>(op.getType());
  if (!t || t.getRank() < 1)
    return op.emitOpError() << "needs a ranked tensor to lower";
  Type e = t.getElementType();
  Value n = lastDimF32(l, op.getX());
  // The mean of rows whose offset is large against their spread must not
  // carry the rounding of one f32 sum (a constant row of 1e20 has to
  // normalise to the bias, as in onnxruntime; a plain Σx/n left x − mean ≈
  // ±1e13 and the output off by ±1). With a static, non-empty last dim the
  // sum is shifted by the row's first element, mean = x₀ + Σ(x − x₀)/n,
  // exact for a constant row and no extra pass; otherwise (x₀ may not
  // exist) a second pass corrects it, mean += Σ(x − mean)/n.
  auto xt = cast<RankedTensorType>(op.getX().getType());
  int64_t last = xt.getDimSize(xt.getRank() - 1);
  bool shift = last > 0;
  Value sum = reduceLast(
      l, op.getX(), {},
      [&](OpBuilder &nb, Value v, Value c) {
        return c ? (Value)arith::SubFOp::create(nb, l.loc, v, c) : v;
      },
      shift);
  auto mt = cast<RankedTensorType>(sum.getType());
  Value mean;
  if (shift) {
    mean = shiftedMean(l, op.getX(), sum, n);
  } else {
    auto meanOf = [&](Value s, Value base) {
      SmallVector<Value> ins{s};
      if (base)
        ins.push_back(base);
      return l.elementwise(
          mt, ins, selfDims(sum), [&](OpBuilder &nb, ValueRange a) -> Value {
            Value m = arith::DivFOp::create(nb, l.loc, a[0], n);
            return base ? (Value)arith::AddFOp::create(nb, l.loc, a[1], m) : m;
          });
    };
    mean = meanOf(sum, {});
    Value resid =
        reduceLast(l, op.getX(), mean, [&](OpBuilder &nb, Value v, Value m) {
          return (Value)arith::SubFOp::create(nb, l.loc, v, m);
        });
    mean = meanOf(resid, mean);
  }
  Value var =
      reduceLast(l, op.getX(), mean, [&](OpBuilder &nb, Value v, Value m) {
        Value d = arith::SubFOp::create(nb, l.loc, v, m);
        return (Value)arith::MulFOp::create(nb, l.loc, d, d);
      });
  Value eps = l.cst(op.getEpsilon().convertToDouble());
  SmallVector<Value> ins{op.getX(), mean, var, op.getWeight()};
  if (op.getBias())
    ins.push_back(op.getBias());
  Value r = l.elementwise(
      t, ins, selfDims(op.getX()),
      [&](OpBuilder &nb, ValueRange a) {
        Location loc = l.loc;
        Value d = arith::SubFOp::create(nb, loc, l.ext(nb, a[0]), a[1]);
        Value inv = math::RsqrtOp::create(
            nb, loc,
            arith::AddFOp::create(
                nb, loc, arith::DivFOp::create(nb, loc, a[2], n), eps));
        Value v = arith::MulFOp::create(
            nb, loc, arith::MulFOp::create(nb, loc, d, inv), l.ext(nb, a[3]));
        if (a.size() > 4)
          v = arith::AddFOp::create(nb, loc, v, l.ext(nb, a[4]));
        return l.trunc(nb, v, e);
      },
      {false, true, true});
  op.getResult().replaceAllUsesWith(r);
  return success();
}

LogicalResult lower(gated::GluOp op, OpBuilder &b) {
  Lowerer l(b, op.getLoc());
  auto t = dyn_cast<RankedTensorType>(op.getType());
  auto xt = dyn_cast<RankedTensorType>(op.getX().getType());
  if (!t || !xt)
    return op.emitOpError() << "needs ranked tensors to lower";
  for (Value bias : {op.getWBias(), op.getVBias()})
    if (bias && !isa<RankedTensorType>(bias.getType()))
      return op.emitOpError() << "needs ranked biases to lower";
  int64_t r = xt.getRank(); // loops: batch dims (r-1), F, then D
  SmallVector<int64_t> shape(t.getShape());
  SmallVector<std::pair<Value, int64_t>> dims = selfDims(op.getX());
  dims.back() = {op.getW(), 1};
  Value a0 = l.filled(shape, dims, 0.0), b0 = l.filled(shape, dims, 0.0);
  MLIRContext *ctx = b.getContext();
  int64_t n = r + 1;
  SmallVector<AffineExpr> xe, oe;
  for (int64_t i = 0; i + 1 < r; ++i)
    xe.push_back(getAffineDimExpr(i, ctx)),
        oe.push_back(getAffineDimExpr(i, ctx));
  AffineExpr f = getAffineDimExpr(r - 1, ctx), d = getAffineDimExpr(r, ctx);
  xe.push_back(d);
  oe.push_back(f);
  AffineMap xm = AffineMap::get(n, 0, xe, ctx);
  AffineMap wm = AffineMap::get(n, 0, {d, f}, ctx);
  AffineMap om = AffineMap::get(n, 0, oe, ctx);
  SmallVector<IteratorType> it = l.parallel(r);
  it.push_back(IteratorType::reduction);
  auto mm = linalg::GenericOp::create(
      b, l.loc, TypeRange{a0.getType(), b0.getType()},
      ValueRange{op.getX(), op.getW(), op.getV()}, ValueRange{a0, b0},
      {xm, wm, wm, om, om}, it, [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value x = l.ext(nb, a[0]);
        Value pa = arith::AddFOp::create(
            nb, loc, a[3], arith::MulFOp::create(nb, loc, x, l.ext(nb, a[1])));
        Value pb = arith::AddFOp::create(
            nb, loc, a[4], arith::MulFOp::create(nb, loc, x, l.ext(nb, a[2])));
        linalg::YieldOp::create(nb, loc, ValueRange{pa, pb});
      });
  Type e = t.getElementType();
  // The biases [F] are added in the act·mul epilogue.
  SmallVector<Value> ins{mm.getResult(0), mm.getResult(1)};
  for (Value bias : {op.getWBias(), op.getVBias()})
    if (bias)
      ins.push_back(bias);
  bool wb = (bool)op.getWBias(), vb = (bool)op.getVBias();
  Value res = l.elementwise(
      t, ins, selfDims(mm.getResult(0)), [&](OpBuilder &nb, ValueRange a) {
        Value g = a[0], u = a[1];
        if (wb)
          g = arith::AddFOp::create(nb, l.loc, g, l.ext(nb, a[2]));
        if (vb)
          u = arith::AddFOp::create(nb, l.loc, u, l.ext(nb, a[2 + wb]));
        Value v = arith::MulFOp::create(nb, l.loc,
                                        l.gluAct(nb, op.getActivation(), g), u);
        return l.trunc(nb, v, e);
      });
  op.getResult().replaceAllUsesWith(res);
  return success();
}

/// gated.expert_glu: first the check that every expert index is in [-E, E)
/// (one AND-reduction, the run's error naming the node; a data check, so
/// --defer-data-checks may move it to the end of the run), then one
/// linalg.generic over (r, f, d) that reads x[r, d] and the row's expert's
/// w and v in place (tensor.extract at the index, negative ones counted
/// from the back, clamped into [0, E), so
/// no access is out of bounds before the check fires), two f32 sums, and
/// act·mul element-wise.
LogicalResult lower(gated::ExpertGluOp op, OpBuilder &b) {
  Lowerer l(b, op.getLoc());
  Location loc = op.getLoc();
  auto t = dyn_cast<RankedTensorType>(op.getType());
  auto et = dyn_cast<RankedTensorType>(op.getExpert().getType());
  auto wt = dyn_cast<RankedTensorType>(op.getW().getType());
  if (!t || !et || !wt)
    return op.emitOpError() << "needs ranked tensors to lower";
  using P = arith::CmpIPredicate;
  MLIRContext *ctx = b.getContext();
  Value experts = l.dim(op.getW(), 0);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value last = arith::SubIOp::create(b, loc, experts,
                                     arith::ConstantIndexOp::create(b, loc, 1));
  Value minusExperts = arith::SubIOp::create(b, loc, zero, experts);
  {
    int64_t er = et.getRank();
    auto flagType = RankedTensorType::get({}, b.getI1Type());
    Value init = tensor::EmptyOp::create(b, loc, flagType, ValueRange{});
    init =
        linalg::FillOp::create(
            b, loc,
            ValueRange{arith::ConstantOp::create(b, loc, b.getBoolAttr(true))},
            ValueRange{init})
            .getResult(0);
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{flagType}, ValueRange{op.getExpert()},
        ValueRange{init},
        {b.getMultiDimIdentityMap(er), AffineMap::get(er, 0, {}, ctx)},
        SmallVector<IteratorType>(er, IteratorType::reduction),
        [&](OpBuilder &nb, Location nl, ValueRange a) {
          Value e = arith::IndexCastOp::create(nb, nl, nb.getIndexType(), a[0]);
          Value ok = arith::AndIOp::create(
              nb, nl, arith::CmpIOp::create(nb, nl, P::sge, e, minusExperts),
              arith::CmpIOp::create(nb, nl, P::slt, e, experts));
          linalg::YieldOp::create(
              nb, nl, ValueRange{arith::AndIOp::create(nb, nl, a[1], ok)});
        });
    Value all = tensor::ExtractOp::create(b, loc, g.getResult(0), ValueRange{});
    auto check = cf::AssertOp::create(
        b, loc, all,
        "gatec: an expert index out of range [-E, E) of the experts' weights "
        "(dim 0) in " +
            describeOp(loc));
    check->setAttr(conversion::kDataCheckAttr, b.getUnitAttr());
  }
  SmallVector<int64_t> shape(t.getShape());
  SmallVector<std::pair<Value, int64_t>> dims = {{op.getX(), 0},
                                                 {op.getW(), 1}};
  Value a0 = l.filled(shape, dims, 0.0), b0 = l.filled(shape, dims, 0.0);
  AffineExpr r = getAffineDimExpr(0, ctx), f = getAffineDimExpr(1, ctx),
             d = getAffineDimExpr(2, ctx);
  AffineMap xm = AffineMap::get(3, 0, {r, d}, ctx);
  AffineMap em = et.getRank() == 1 ? AffineMap::get(3, 0, {r}, ctx)
                                   : AffineMap::get(3, 0, {}, ctx);
  AffineMap om = AffineMap::get(3, 0, {r, f}, ctx);
  Value w = op.getW(), v = op.getV();
  // The row's expert: negative indices count from the back, as in
  // Gather/GatherND; clamped into [0, E).
  auto expertAt = [&](OpBuilder &nb, Location nl, Value i) -> Value {
    Value e = arith::IndexCastOp::create(nb, nl, nb.getIndexType(), i);
    e = arith::SelectOp::create(nb, nl,
                                arith::CmpIOp::create(nb, nl, P::slt, e, zero),
                                arith::AddIOp::create(nb, nl, e, experts), e);
    e = arith::MaxSIOp::create(nb, nl, e, zero);
    return arith::MinSIOp::create(nb, nl, e, last);
  };
  auto mm = linalg::GenericOp::create(
      b, loc, TypeRange{a0.getType(), b0.getType()},
      ValueRange{op.getX(), op.getExpert()}, ValueRange{a0, b0},
      {xm, em, om, om},
      {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value e = expertAt(nb, nl, a[1]);
        Value fi = linalg::IndexOp::create(nb, nl, 1);
        Value di = linalg::IndexOp::create(nb, nl, 2);
        Value x = l.ext(nb, a[0]);
        Value wv = tensor::ExtractOp::create(nb, nl, w, ValueRange{e, fi, di});
        Value vv = tensor::ExtractOp::create(nb, nl, v, ValueRange{e, fi, di});
        Value pa = arith::AddFOp::create(
            nb, nl, a[2], arith::MulFOp::create(nb, nl, x, l.ext(nb, wv)));
        Value pb = arith::AddFOp::create(
            nb, nl, a[3], arith::MulFOp::create(nb, nl, x, l.ext(nb, vv)));
        linalg::YieldOp::create(nb, nl, ValueRange{pa, pb});
      });
  // The epilogue over (r, f): biases of the row's expert, the clamps,
  // act(a)·(b + up_offset).
  Type elt = t.getElementType();
  Value wb = op.getWBias(), vb = op.getVBias();
  float alpha = op.getAlpha().convertToFloat();
  float offset = op.getUpOffset().convertToFloat();
  std::optional<float> limit;
  if (auto lim = op.getLimit())
    limit = lim->convertToFloat();
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < 2; ++i)
    if (t.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, mm.getResult(0), i));
  Value init = tensor::EmptyOp::create(b, loc, t.getShape(), elt, dyn);
  AffineMap rf = AffineMap::get(2, 0, {r, f}, ctx);
  AffineMap er = et.getRank() == 1 ? AffineMap::get(2, 0, {r}, ctx)
                                   : AffineMap::get(2, 0, {}, ctx);
  auto epi = linalg::GenericOp::create(
      b, loc, TypeRange{t},
      ValueRange{mm.getResult(0), mm.getResult(1), op.getExpert()},
      ValueRange{init}, {rf, rf, er, rf}, l.parallel(2),
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value ga = a[0], gb = a[1];
        if (wb) {
          Value e = expertAt(nb, nl, a[2]);
          Value fi = linalg::IndexOp::create(nb, nl, 1);
          ga = arith::AddFOp::create(
              nb, nl, ga,
              l.ext(nb,
                    tensor::ExtractOp::create(nb, nl, wb, ValueRange{e, fi})));
          gb = arith::AddFOp::create(
              nb, nl, gb,
              l.ext(nb,
                    tensor::ExtractOp::create(nb, nl, vb, ValueRange{e, fi})));
        }
        if (limit) {
          // min(a, L) as ONNX Clip with no min: -inf becomes -FLT_MAX.
          ga = arith::MaximumFOp::create(
              nb, nl, arith::MinimumFOp::create(nb, nl, ga, l.cst(nb, *limit)),
              l.cst(nb, -3.4028234663852886e38));
          gb = arith::MaximumFOp::create(
              nb, nl, arith::MinimumFOp::create(nb, nl, gb, l.cst(nb, *limit)),
              l.cst(nb, -*limit));
        }
        Value act;
        if (op.getActivation() == gated::GluActivation::silu && alpha != 1.0f)
          act = arith::MulFOp::create(
              nb, nl, ga,
              l.sigmoid(nb,
                        arith::MulFOp::create(nb, nl, ga, l.cst(nb, alpha))));
        else
          act = l.gluAct(nb, op.getActivation(), ga);
        if (offset != 0.0f)
          gb = arith::AddFOp::create(nb, nl, gb, l.cst(nb, offset));
        Value p = arith::MulFOp::create(nb, nl, act, gb);
        linalg::YieldOp::create(nb, nl, ValueRange{l.trunc(nb, p, elt)});
      });
  op.getResult().replaceAllUsesWith(epi.getResult(0));
  return success();
}

/// x [B, T, H, D] as [B, H, T, D], or back: a head transpose.
Value headTranspose(OpBuilder &b, Location loc, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  std::swap(sizes[1], sizes[2]);
  Value init = tensor::EmptyOp::create(b, loc, sizes, t.getElementType());
  return linalg::TransposeOp::create(b, loc, x, init,
                                     ArrayRef<int64_t>{0, 2, 1, 3})
      .getResult()[0];
}

LogicalResult lower(gated::AttentionOp op, OpBuilder &b) {
  Lowerer l(b, op.getLoc());
  for (Value x : op->getOperands())
    if (!isa<RankedTensorType>(x.getType()))
      return op.emitOpError() << "needs ranked tensors to lower";
  if (!isa<RankedTensorType>(op.getType()))
    return op.emitOpError() << "needs ranked tensors to lower";
  // The reference form works in [B, H, T, D]: operands held in [B, T, H, D]
  // (`bshd`) are transposed first, and the result back at the end.
  auto logical = [&](Value x, StringRef name) {
    return x && op.isBshd(name) ? headTranspose(b, l.loc, x) : x;
  };
  Value q = logical(op.getQuery(), "query"), k = logical(op.getKey(), "key"),
        v = logical(op.getValue(), "value"),
        gate = logical(op.getGate(), "gate");
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  auto vt = cast<RankedTensorType>(v.getType());
  auto rt = cast<RankedTensorType>(op.getType());
  if (op.isBshd("result"))
    rt = RankedTensorType::get({rt.getDimSize(0), rt.getDimSize(2),
                                rt.getDimSize(1), rt.getDimSize(3)},
                               rt.getElementType());
  int64_t hq = qt.getDimSize(1), hkv = kt.getDimSize(1);
  if (hq == kDyn || hkv == kDyn)
    return op.emitOpError() << "needs static head counts to lower (the KV "
                               "head of a query head is h / (Hq/Hkv))";
  int64_t rep = hq / hkv;
  MLIRContext *ctx = b.getContext();
  auto dim = [&](int i) { return getAffineDimExpr(i, ctx); };
  AffineExpr kvHead = rep == 1 ? dim(1) : dim(1).floorDiv(rep);
  // MatMul broadcasts the batch: a key/value batch of 1 is read at 0 (a
  // static 1 through the map, a dynamic one broadcast at run time to the
  // query's batch; other sizes fail the check).
  SmallVector<int64_t> qBatch{qt.getDimSize(0)};
  SmallVector<OpFoldResult> qBatchSize{
      qt.isDynamicDim(0) ? OpFoldResult(l.dim(q, 0))
                         : OpFoldResult(b.getIndexAttr(qt.getDimSize(0)))};
  k = common::broadcastDimsAtRunTime(b, l.loc, k, {0, -1, -1, -1}, qBatch,
                                     qBatchSize);
  v = common::broadcastDimsAtRunTime(b, l.loc, v, {0, -1, -1, -1}, qBatch,
                                     qBatchSize);
  auto batchOf = [&](RankedTensorType t) {
    return t.getDimSize(0) == 1 && qt.getDimSize(0) != 1
               ? getAffineConstantExpr(0, ctx)
               : dim(0);
  };

  // Scores [B, Hq, T, S] in f32: s = scale · q·kᵀ.
  SmallVector<int64_t> sShape{qt.getDimSize(0), hq, qt.getDimSize(2),
                              kt.getDimSize(2)};
  SmallVector<std::pair<Value, int64_t>> sDims{{q, 0}, {q, 1}, {q, 2}, {k, 2}};
  Value s0 = l.filled(sShape, sDims, 0.0);
  auto scores = linalg::GenericOp::create(
      b, l.loc, TypeRange{s0.getType()}, ValueRange{q, k}, ValueRange{s0},
      {AffineMap::get(5, 0, {dim(0), dim(1), dim(2), dim(4)}, ctx),
       AffineMap::get(5, 0, {batchOf(kt), kvHead, dim(3), dim(4)}, ctx),
       AffineMap::get(5, 0, {dim(0), dim(1), dim(2), dim(3)}, ctx)},
      {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
       IteratorType::parallel, IteratorType::reduction},
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value p =
            arith::MulFOp::create(nb, loc, l.ext(nb, a[0]), l.ext(nb, a[1]));
        linalg::YieldOp::create(
            nb, loc, ValueRange{arith::AddFOp::create(nb, loc, a[2], p)});
      });
  // Scale and masks.
  double scale = op.getScale().convertToDouble();
  bool causal = (bool)op.getCausal();
  std::optional<int64_t> window = op.leftWindowSize();
  std::optional<double> softcap = op.softcapValue();
  Value mask = op.getMask();
  auto sType = cast<RankedTensorType>(scores.getResult(0).getType());
  SmallVector<Value> ins{scores.getResult(0)};
  if (mask)
    ins.push_back(mask);
  Value ninf = l.cst(-INFINITY);
  Value masked =
      l.elementwise(sType, ins, sDims, [&](OpBuilder &nb, ValueRange a) {
        Location loc = l.loc;
        Value s = arith::MulFOp::create(nb, loc, a[0], l.cst(nb, scale));
        if (softcap)
          s = arith::MulFOp::create(
              nb, loc, l.cst(nb, *softcap),
              math::TanhOp::create(
                  nb, loc,
                  arith::DivFOp::create(nb, loc, s, l.cst(nb, *softcap))));
        if (causal) {
          Value t = linalg::IndexOp::create(nb, loc, 2),
                j = linalg::IndexOp::create(nb, loc, 3);
          Value future =
              arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ugt, j, t);
          s = arith::SelectOp::create(nb, loc, future, ninf, s);
        }
        if (window) {
          // j < t - L as j + L < t (no unsigned wrap below 0).
          Value t = linalg::IndexOp::create(nb, loc, 2),
                j = linalg::IndexOp::create(nb, loc, 3);
          Value jl = arith::AddIOp::create(
              nb, loc, j, arith::ConstantIndexOp::create(nb, loc, *window));
          Value past =
              arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ult, jl, t);
          s = arith::SelectOp::create(nb, loc, past, ninf, s);
        }
        if (a.size() > 1) {
          if (a[1].getType().isInteger(1))
            s = arith::SelectOp::create(nb, loc, a[1], s, ninf);
          else
            s = arith::AddFOp::create(nb, loc, s, l.ext(nb, a[1]));
        }
        return s;
      });
  // Row max and sum of exp(s − max); a row of -inf has max -inf, sum 0.
  SmallVector<int64_t> rShape{sShape[0], sShape[1], sShape[2]};
  SmallVector<std::pair<Value, int64_t>> rDims{{q, 0}, {q, 1}, {q, 2}};
  AffineMap id4 = b.getMultiDimIdentityMap(4);
  AffineMap row = AffineMap::get(4, 0, {dim(0), dim(1), dim(2)}, ctx);
  SmallVector<IteratorType> red{IteratorType::parallel, IteratorType::parallel,
                                IteratorType::parallel,
                                IteratorType::reduction};
  Value m0 = l.filled(rShape, rDims, -INFINITY);
  Value sinks = op.getSinks();
  AffineMap headOf = AffineMap::get(3, 0, {dim(1)}, ctx);
  AffineMap id3 = b.getMultiDimIdentityMap(3);
  SmallVector<IteratorType> par3(3, IteratorType::parallel);
  if (sinks) // the row max starts at the head's sink logit
    m0 = linalg::GenericOp::create(
             b, l.loc, TypeRange{m0.getType()}, ValueRange{sinks},
             ValueRange{m0}, {headOf, id3}, par3,
             [&](OpBuilder &nb, Location loc, ValueRange a) {
               linalg::YieldOp::create(nb, loc, ValueRange{l.ext(nb, a[0])});
             })
             .getResult(0);
  Value mx =
      linalg::GenericOp::create(
          b, l.loc, TypeRange{m0.getType()}, ValueRange{masked}, ValueRange{m0},
          {id4, row}, red,
          [&](OpBuilder &nb, Location loc, ValueRange a) {
            linalg::YieldOp::create(
                nb, loc,
                ValueRange{arith::MaximumFOp::create(nb, loc, a[0], a[1])});
          })
          .getResult(0);
  auto shifted = [&](OpBuilder &nb, Value s, Value m) -> Value {
    Location loc = l.loc;
    Value isInf =
        arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OEQ, m, ninf);
    Value base = arith::SelectOp::create(nb, loc, isInf, l.cst(nb, 0.0), m);
    return math::ExpOp::create(nb, loc,
                               arith::SubFOp::create(nb, loc, s, base));
  };
  Value z0 = l.filled(rShape, rDims, 0.0);
  if (sinks) // the sum starts at exp(sink - max)
    z0 = linalg::GenericOp::create(
             b, l.loc, TypeRange{z0.getType()}, ValueRange{sinks, mx},
             ValueRange{z0}, {headOf, id3, id3}, par3,
             [&](OpBuilder &nb, Location loc, ValueRange a) {
               linalg::YieldOp::create(
                   nb, loc,
                   ValueRange{math::ExpOp::create(
                       nb, loc,
                       arith::SubFOp::create(nb, loc, l.ext(nb, a[0]), a[1]))});
             })
             .getResult(0);
  Value sum = linalg::GenericOp::create(
                  b, l.loc, TypeRange{z0.getType()}, ValueRange{masked, mx},
                  ValueRange{z0}, {id4, row, row}, red,
                  [&](OpBuilder &nb, Location loc, ValueRange a) {
                    linalg::YieldOp::create(
                        nb, loc,
                        ValueRange{arith::AddFOp::create(
                            nb, loc, a[2], shifted(nb, a[0], a[1]))});
                  })
                  .getResult(0);
  // y[b,h,t,e] = Σ_j p[b,h,t,j] · v[b,h/r,j,e], p = e/sum (0 for sum 0,
  // NaN for a NaN sum).
  SmallVector<int64_t> yShape{sShape[0], hq, sShape[2], vt.getDimSize(3)};
  SmallVector<std::pair<Value, int64_t>> yDims{{q, 0}, {q, 1}, {q, 2}, {v, 3}};
  Value y0 = l.filled(yShape, yDims, 0.0);
  auto pv = linalg::GenericOp::create(
      b, l.loc, TypeRange{y0.getType()}, ValueRange{masked, mx, sum, v},
      ValueRange{y0},
      {AffineMap::get(5, 0, {dim(0), dim(1), dim(2), dim(4)}, ctx),
       AffineMap::get(5, 0, {dim(0), dim(1), dim(2)}, ctx),
       AffineMap::get(5, 0, {dim(0), dim(1), dim(2)}, ctx),
       AffineMap::get(5, 0, {batchOf(vt), kvHead, dim(4), dim(3)}, ctx),
       AffineMap::get(5, 0, {dim(0), dim(1), dim(2), dim(3)}, ctx)},
      {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
       IteratorType::parallel, IteratorType::reduction},
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value e = shifted(nb, a[0], a[1]);
        // sum = 0 only for a fully masked row: zeros; a NaN sum (a NaN
        // score) propagates.
        Value none = arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OEQ,
                                           a[2], l.cst(nb, 0.0));
        Value p =
            arith::SelectOp::create(nb, loc, none, l.cst(nb, 0.0),
                                    arith::DivFOp::create(nb, loc, e, a[2]));
        Value acc = arith::AddFOp::create(
            nb, loc, a[4], arith::MulFOp::create(nb, loc, p, l.ext(nb, a[3])));
        linalg::YieldOp::create(nb, loc, ValueRange{acc});
      });
  // Epilogue: the gate, then the element type.
  Type et = rt.getElementType();
  SmallVector<Value> eins{pv.getResult(0)};
  if (gate)
    eins.push_back(gate);
  // The gate may be larger than the attention (ONNX Mul broadcasts both).
  Value res = l.elementwise(rt, eins, {}, [&](OpBuilder &nb, ValueRange a) {
    Value y = a[0];
    if (a.size() > 1) {
      Value g = l.gateAct(nb, *op.getGateActivation(), l.ext(nb, a[1]));
      y = *op.getGateMode() == gated::GateMode::multiply
              ? (Value)arith::MulFOp::create(nb, l.loc, y, g)
              : (Value)arith::AddFOp::create(nb, l.loc, y, g);
    }
    return l.trunc(nb, y, et);
  });
  if (op.isBshd("result"))
    res = headTranspose(b, l.loc, res);
  if (res.getType() != op.getType())
    res = tensor::CastOp::create(b, l.loc, op.getType(), res);
  op.getResult().replaceAllUsesWith(res);
  return success();
}

/// Scalar helpers of the router's row loop.
struct RouterRow {
  OpBuilder &b;
  Location loc;
  Value logits;
  SmallVector<Value> row; // the row's indices (the dims before the experts)

  Value f32(Value v) {
    return v.getType().isF32()
               ? v
               : (Value)arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  }
  /// logits[row, e] in f32.
  Value at(Value e) {
    SmallVector<Value> ix(row);
    ix.push_back(e);
    return f32(tensor::ExtractOp::create(b, loc, logits, ix));
  }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value isNan(Value x) { return cmp(arith::CmpFPredicate::UNO, x, x); }
  Value zeroIdx() { return arith::ConstantIndexOp::create(b, loc, 0); }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value orI(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value notI(Value x) {
    return arith::XOrIOp::create(
        b, loc, x, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  }
  /// (x, i) comes before (y, j) in TopK's order: the larger value first
  /// (NaN the largest, as torch.topk), equal values by the lower index.
  Value before(Value x, Value i, Value y, Value j) {
    Value nx = isNan(x), ny = isNan(y);
    Value gt = orI(cmp(arith::CmpFPredicate::OGT, x, y), andI(nx, notI(ny)));
    Value eq = orI(cmp(arith::CmpFPredicate::OEQ, x, y), andI(nx, ny));
    Value lower =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, j);
    return orI(gt, andI(eq, lower));
  }
  /// A loop over [0, n) carrying `init`; body(iv, args) yields the next.
  ValueRange loop(Value n, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto f = scf::ForOp::create(
        b, loc, zero, n, one, init,
        [&](OpBuilder &nb, Location, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(b, loc, body(iv, args));
        });
    return f.getResults();
  }
};

/// gated.router as one scf.forall over the rows (the dims before the
/// experts) whose iteration computes its row with scalar loops over the E
/// experts in f32: the maximum m, Σ exp(l − m) when the weights are the
/// softmax over all experts, then k scans each selecting the first expert
/// after the previous pick in TopK's order (no buffer of picks: O(k·E),
/// for the small E and k of routers), then weight j = exp(l_j − m) over
/// the softmax's or the selected experts' Σ exp(l − m). Renormalised
/// softmax_then_topk and topk_then_softmax both divide by the latter.
LogicalResult lower(gated::RouterOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  auto lt = dyn_cast<RankedTensorType>(op.getLogits().getType());
  auto wt = dyn_cast<RankedTensorType>(op.getWeights().getType());
  auto it = dyn_cast<RankedTensorType>(op.getIndices().getType());
  if (!lt || !wt || !it || lt.getRank() < 1)
    return op.emitOpError() << "needs ranked tensors to lower";
  Value logits = op.getLogits();
  int64_t r = lt.getRank(), k = op.getK();
  Value experts = tensor::DimOp::create(b, loc, logits, r - 1);
  Value kIdx = arith::ConstantIndexOp::create(b, loc, k);
  if (lt.isDynamicDim(r - 1))
    cf::AssertOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, kIdx, experts),
        "gatec: fewer experts than the router's k = " + std::to_string(k) +
            " in " + describeOp(loc));
  Type we = wt.getElementType();
  SmallVector<int64_t> shape(lt.getShape());
  shape.back() = k;
  SmallVector<Value> dyn;
  SmallVector<OpFoldResult> rows;
  for (int64_t d = 0; d + 1 < r; ++d) {
    if (lt.isDynamicDim(d))
      dyn.push_back(tensor::DimOp::create(b, loc, logits, d));
    rows.push_back(lt.isDynamicDim(d) ? OpFoldResult(dyn.back())
                                      : b.getIndexAttr(lt.getDimSize(d)));
  }
  Value w0 = tensor::EmptyOp::create(b, loc, shape, we, dyn);
  Value i0 = tensor::EmptyOp::create(b, loc, shape, b.getI64Type(), dyn);
  bool rank1 = rows.empty();
  if (rank1)
    rows.push_back(b.getIndexAttr(1));
  auto forall =
      scf::ForallOp::create(b, loc, rows, ValueRange{w0, i0}, std::nullopt);
  OpBuilder fb = OpBuilder::atBlockTerminator(forall.getBody());
  RouterRow row{fb, loc, logits, {}};
  if (!rank1)
    llvm::append_range(row.row, forall.getInductionVars());
  SmallVector<OpFoldResult> offsets, sizes(r, fb.getIndexAttr(1)),
      strides(r, fb.getIndexAttr(1));
  for (Value iv : row.row)
    offsets.push_back(iv);
  offsets.push_back(fb.getIndexAttr(0));
  sizes.back() = fb.getIndexAttr(k);
  auto slice = [&](Value shared, Type e) -> Value {
    return tensor::ExtractSliceOp::create(fb, loc,
                                          RankedTensorType::get({k}, e), shared,
                                          offsets, sizes, strides);
  };
  Value ws = slice(forall.getRegionIterArgs()[0], we);
  Value is = slice(forall.getRegionIterArgs()[1], fb.getI64Type());
  auto cst = [&](double v) -> Value {
    return arith::ConstantOp::create(fb, loc, fb.getF32FloatAttr(v));
  };
  auto expm = [&](Value x, Value m) -> Value {
    return math::ExpOp::create(fb, loc, arith::SubFOp::create(fb, loc, x, m));
  };
  // m = max_e l_e (NaN propagates); Σ exp(l − m) over all experts.
  Value m =
      row.loop(experts, {cst(-INFINITY)},
               [&](Value e, ValueRange a) -> SmallVector<Value> {
                 return {arith::MaximumFOp::create(fb, loc, a[0], row.at(e))};
               })[0];
  bool overAll = op.getOrder() == gated::RouterOrder::softmax_then_topk &&
                 op.getNormalisation() == gated::RouterNormalisation::none;
  Value total;
  if (overAll)
    total = row.loop(
        experts, {cst(0.0)}, [&](Value e, ValueRange a) -> SmallVector<Value> {
          return {arith::AddFOp::create(fb, loc, a[0], expm(row.at(e), m))};
        })[0];
  // Pick j: the first expert after pick j - 1 (read back from the indices)
  // in TopK's order. The loops that write carry only the row's slices, so
  // that on the GPU they run on one thread of the row's block.
  Value zero = row.zeroIdx(),
        none = arith::ConstantIndexOp::create(fb, loc, -1);
  auto pick = [&](Value slice, Value j) -> Value {
    Value e = tensor::ExtractOp::create(fb, loc, slice, j);
    return arith::IndexCastOp::create(fb, loc, fb.getIndexType(), e);
  };
  is = row.loop(kIdx, {is}, [&](Value j, ValueRange a) -> SmallVector<Value> {
    Value first =
        arith::CmpIOp::create(fb, loc, arith::CmpIPredicate::eq, j, zero);
    Value prev = arith::SelectOp::create(
        fb, loc, first, zero,
        arith::SubIOp::create(fb, loc, j,
                              arith::ConstantIndexOp::create(fb, loc, 1)));
    // At j = 0 the slice holds no pick yet: pi reads expert 0, unused.
    Value pi = arith::SelectOp::create(fb, loc, first, zero, pick(a[0], prev));
    Value pv = row.at(pi);
    ValueRange best =
        row.loop(experts, {cst(0.0), none},
                 [&](Value e, ValueRange c) -> SmallVector<Value> {
                   Value x = row.at(e);
                   Value eligible = row.orI(first, row.before(pv, pi, x, e));
                   Value unset = arith::CmpIOp::create(
                       fb, loc, arith::CmpIPredicate::slt, c[1], zero);
                   Value take = row.andI(
                       eligible, row.orI(unset, row.before(x, e, c[0], c[1])));
                   return {arith::SelectOp::create(fb, loc, take, x, c[0]),
                           arith::SelectOp::create(fb, loc, take, e, c[1])};
                 });
    Value idx = arith::IndexCastOp::create(fb, loc, fb.getI64Type(), best[1]);
    return {tensor::InsertOp::create(fb, loc, idx, a[0], j)};
  })[0];
  Value denom =
      overAll ? total
              : row.loop(
                    kIdx, {cst(0.0)},
                    [&](Value j, ValueRange a) -> SmallVector<Value> {
                      Value x = row.at(pick(is, j));
                      return {arith::AddFOp::create(fb, loc, a[0], expm(x, m))};
                    })[0];
  ws = row.loop(kIdx, {ws}, [&](Value j, ValueRange a) -> SmallVector<Value> {
    Value w =
        arith::DivFOp::create(fb, loc, expm(row.at(pick(is, j)), m), denom);
    if (w.getType() != we)
      w = arith::TruncFOp::create(fb, loc, we, w);
    return {tensor::InsertOp::create(fb, loc, w, a[0], j)};
  })[0];
  fb.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      fb, loc, ws, forall.getRegionIterArgs()[0], offsets, sizes, strides);
  tensor::ParallelInsertSliceOp::create(
      fb, loc, is, forall.getRegionIterArgs()[1], offsets, sizes, strides);
  Value weights = forall.getResult(0), indices = forall.getResult(1);
  if (weights.getType() != wt)
    weights = tensor::CastOp::create(b, loc, wt, weights);
  if (indices.getType() != it)
    indices = tensor::CastOp::create(b, loc, it, indices);
  op.getWeights().replaceAllUsesWith(weights);
  op.getIndices().replaceAllUsesWith(indices);
  return success();
}

struct ConvertGatedToLinalgPass
    : conversion::impl::ConvertGatedToLinalgBase<ConvertGatedToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (keepAttention && isa<gated::AttentionOp>(op))
        return;
      if (isa<gated::GatedDialect>(op->getDialect()))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      LogicalResult r =
          llvm::TypeSwitch<Operation *, LogicalResult>(op)
              .Case<gated::AttentionOp, gated::GateOp, gated::GluOp,
                    gated::ExpertGluOp, gated::ResidualOp, gated::RMSNormOp,
                    gated::LayerNormOp, gated::RouterOp, gated::ShortConvOp>(
                  [&](auto o) { return lower(o, b); })
              .Default([](Operation *o) {
                return o->emitOpError() << "has no lowering to linalg";
              });
      if (failed(r))
        return signalPassFailure();
      op->erase();
    }
  }
};
} // namespace
