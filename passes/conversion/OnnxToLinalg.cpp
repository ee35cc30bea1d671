//===- OnnxToLinalg.cpp - --convert-onnx-to-linalg ------------------------===//
//
// Lowers the onnx ops that remain after raising (the `gated` phase) to
// linalg / tensor / arith / math on tensors, with ONNX semantics.
//
// Every op is lowered against the *original* IR: operands are looked up in a
// map from onnx values to their lowered values, while constant operands
// (axes, starts, shapes) are read from the onnx ops, which stay in place
// until the whole function is lowered. Only then are the uses replaced and
// the onnx ops erased.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/Broadcast.h"
#include "passes/conversion/Passes.h"

#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/OnnxDialect.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>
#include <map>

namespace gatec::conversion {
#define GEN_PASS_DEF_CONVERTONNXTOLINALG
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

using namespace mlir;
using namespace gatec;

namespace {
using utils::IteratorType;
using Body = function_ref<Value(ImplicitLocOpBuilder &, ValueRange)>;

//===----------------------------------------------------------------------===//
// Scalar maths (inside linalg bodies)
//===----------------------------------------------------------------------===//

bool isFloat(Type t) { return isa<FloatType>(t); }

/// Unsigned integers (ui8 ... ui64) are kept in tensor types, as ONNX types
/// them, but arith computes on signless integers: scalars cross over with
/// unrealized casts (which fold away in pairs and are no-ops in LLVM), and
/// the ops that depend on signedness pick their unsigned form.
bool isUnsignedInt(Type t) {
  auto i = dyn_cast<IntegerType>(t);
  return i && i.isUnsigned();
}
Type signless(Type t) {
  if (isUnsignedInt(t))
    return IntegerType::get(t.getContext(), t.getIntOrFloatBitWidth());
  return t;
}
Value castScalar(ImplicitLocOpBuilder &b, Value v, Type to) {
  if (v.getType() == to)
    return v;
  return UnrealizedConversionCastOp::create(b, TypeRange{to}, ValueRange{v})
      .getResult(0);
}
Value toSignless(ImplicitLocOpBuilder &b, Value v) {
  return castScalar(b, v, signless(v.getType()));
}

/// The type a float reduction or contraction accumulates in: f32 for
/// narrower floats, the element type otherwise.
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

/// An arith.constant of a scalar attribute of any int/float type.
Value constant(ImplicitLocOpBuilder &b, TypedAttr a) {
  if (auto i = dyn_cast<IntegerAttr>(a); i && isUnsignedInt(i.getType()))
    return castScalar(
        b,
        arith::ConstantOp::create(
            b, b.getIntegerAttr(signless(i.getType()), i.getValue())),
        i.getType());
  return arith::ConstantOp::create(b, a);
}

/// The identity of max (-inf or the smallest integer) / of min.
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

/// ONNX Cast of one scalar between float, (un)signed integer and bool
/// types: float to integer truncates toward zero, anything to bool is
/// `x != 0`, bool to a number is 0 or 1, integers widen by the source's
/// signedness.
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

/// Applies `f` in f32 (or f64) to a float scalar, converting narrower types
/// there and back.
Value inWideFloat(ImplicitLocOpBuilder &b, Value x,
                  function_ref<Value(Value)> f) {
  Type t = x.getType();
  Type w = accType(t);
  return convert(b, f(convert(b, x, w)), t);
}

Value sigmoid(ImplicitLocOpBuilder &b, Value x) {
  Value one = scalar(b, x.getType(), 1.0);
  Value e = math::ExpOp::create(b, arith::NegFOp::create(b, x));
  return arith::DivFOp::create(b, one, arith::AddFOp::create(b, one, e));
}

Value gelu(ImplicitLocOpBuilder &b, Value x, bool tanhApprox) {
  Type t = x.getType();
  auto c = [&](double v) { return scalar(b, t, v); };
  Value inner;
  if (tanhApprox) {
    Value x3 = arith::MulFOp::create(b, x, arith::MulFOp::create(b, x, x));
    Value s =
        arith::AddFOp::create(b, x, arith::MulFOp::create(b, c(0.044715), x3));
    inner = math::TanhOp::create(
        b, arith::MulFOp::create(b, c(std::sqrt(2.0 / M_PI)), s));
  } else {
    inner = math::ErfOp::create(
        b, arith::MulFOp::create(b, x, c(1.0 / std::sqrt(2.0))));
  }
  Value h = arith::MulFOp::create(b, c(0.5), x);
  return arith::MulFOp::create(b, h, arith::AddFOp::create(b, c(1.0), inner));
}

/// The maths of a unary op on a float scalar (already widened to f32/f64),
/// or null if `op` is not a float unary op.
Value floatUnary(Operation *op, ImplicitLocOpBuilder &b, Value x) {
  Type t = x.getType();
  auto c = [&](double v) { return scalar(b, t, v); };
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](onnx::SqrtOp) { return math::SqrtOp::create(b, x); })
      .Case([&](onnx::ReciprocalOp) {
        return arith::DivFOp::create(b, c(1.0), x);
      })
      .Case([&](onnx::NegOp) { return arith::NegFOp::create(b, x); })
      .Case([&](onnx::AbsOp) { return math::AbsFOp::create(b, x); })
      .Case([&](onnx::ExpOp) { return math::ExpOp::create(b, x); })
      .Case([&](onnx::LogOp) { return math::LogOp::create(b, x); })
      .Case([&](onnx::SigmoidOp) { return sigmoid(b, x); })
      .Case([&](onnx::TanhOp) { return math::TanhOp::create(b, x); })
      .Case(
          [&](onnx::ReluOp) { return arith::MaximumFOp::create(b, x, c(0.0)); })
      .Case([&](onnx::ErfOp) { return math::ErfOp::create(b, x); })
      .Case([&](onnx::CosOp) { return math::CosOp::create(b, x); })
      .Case([&](onnx::SinOp) { return math::SinOp::create(b, x); })
      .Case([&](onnx::FloorOp) { return math::FloorOp::create(b, x); })
      .Case([&](onnx::CeilOp) { return math::CeilOp::create(b, x); })
      .Case([&](onnx::SoftplusOp) {
        // log(1 + e^x), = x where e^x overflows the sum's precision.
        Value big =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, c(20.0));
        Value sp = math::Log1pOp::create(b, math::ExpOp::create(b, x));
        return arith::SelectOp::create(b, big, x, sp);
      })
      .Case([&](onnx::GeluOp g) {
        return gelu(b, x, g.getApproximate() == "tanh");
      })
      .Case([&](onnx::LeakyReluOp g) {
        Value neg =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x, c(0.0));
        Value ax =
            arith::MulFOp::create(b, c(g.getAlpha().convertToDouble()), x);
        return arith::SelectOp::create(b, neg, ax, x);
      })
      .Case([&](onnx::SignOp) {
        // 1, -1, or x itself (0, -0 and NaN).
        Value pos =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, c(0.0));
        Value neg =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x, c(0.0));
        return arith::SelectOp::create(
            b, pos, c(1.0), arith::SelectOp::create(b, neg, c(-1.0), x));
      })
      .Case([&](onnx::HardSigmoidOp g) {
        Value v = arith::AddFOp::create(
            b, arith::MulFOp::create(b, c(g.getAlpha().convertToDouble()), x),
            c(g.getBeta().convertToDouble()));
        return arith::MinimumFOp::create(
            b, arith::MaximumFOp::create(b, v, c(0.0)), c(1.0));
      })
      .Default([](Operation *) { return Value(); });
}

/// The maths of a unary op on an integer scalar, or null.
Value intUnary(Operation *op, ImplicitLocOpBuilder &b, Value x0) {
  Type t = x0.getType();
  bool u = isUnsignedInt(t);
  Value x = toSignless(b, x0);
  Value zero = scalar(b, x.getType(), 0);
  Value r =
      TypeSwitch<Operation *, Value>(op)
          .Case([&](onnx::NegOp) { return arith::SubIOp::create(b, zero, x); })
          .Case([&](onnx::AbsOp) -> Value {
            if (u)
              return x;
            return math::AbsIOp::create(b, x);
          })
          .Case([&](onnx::ReluOp) -> Value {
            if (u)
              return x;
            return arith::MaxSIOp::create(b, x, zero);
          })
          .Case([&](onnx::SignOp) -> Value {
            Type e = x.getType();
            Value pos = arith::CmpIOp::create(
                b, u ? arith::CmpIPredicate::ne : arith::CmpIPredicate::sgt, x,
                zero);
            Value neg =
                arith::CmpIOp::create(b, arith::CmpIPredicate::slt, x, zero);
            Value s = arith::SelectOp::create(b, pos, scalar(b, e, 1), zero);
            if (u)
              return s;
            return arith::SelectOp::create(b, neg, scalar(b, e, -1), s);
          })
          .Default([](Operation *) { return Value(); });
  return r ? castScalar(b, r, t) : r;
}

/// max / min of two scalars of one float, signed or unsigned type.
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

/// Add/Sub/Mul/Div/Max/Min/Sum of two scalars of one type; integer Div
/// truncates toward zero (C semantics, as onnxruntime), unsigned integers
/// divide, compare and wrap unsigned.
Value binary(Operation *op, ImplicitLocOpBuilder &b, Value x0, Value y0) {
  Type t = x0.getType();
  if (isa<onnx::MaxOp>(op))
    return maxOf(b, x0, y0);
  if (isa<onnx::MinOp>(op))
    return minOf(b, x0, y0);
  bool f = isFloat(t), u = isUnsignedInt(t);
  Value x = toSignless(b, x0), y = toSignless(b, y0);
  Value r = TypeSwitch<Operation *, Value>(op)
                .Case<onnx::AddOp, onnx::SumOp>([&](Operation *) -> Value {
                  if (f)
                    return arith::AddFOp::create(b, x, y);
                  return arith::AddIOp::create(b, x, y);
                })
                .Case([&](onnx::SubOp) -> Value {
                  if (f)
                    return arith::SubFOp::create(b, x, y);
                  return arith::SubIOp::create(b, x, y);
                })
                .Case([&](onnx::MulOp) -> Value {
                  if (f)
                    return arith::MulFOp::create(b, x, y);
                  return arith::MulIOp::create(b, x, y);
                })
                .Case([&](onnx::DivOp) -> Value {
                  if (f)
                    return arith::DivFOp::create(b, x, y);
                  if (u)
                    return arith::DivUIOp::create(b, x, y);
                  return arith::DivSIOp::create(b, x, y);
                })
                .Default([](Operation *) { return Value(); });
  return r ? castScalar(b, r, t) : r;
}

/// ONNX Pow: the result has the base's type. Float bases compute in f32
/// (or f64); integer bases compute in f64 and truncate, as onnxruntime
/// (std::pow), exact while the power fits in 53 bits.
Value power(ImplicitLocOpBuilder &b, Value x, Value y) {
  Type t = x.getType();
  if (isFloat(t))
    return inWideFloat(b, x, [&](Value xw) -> Value {
      return math::PowFOp::create(b, xw, convert(b, y, xw.getType()));
    });
  Value r = math::PowFOp::create(b, convert(b, x, b.getF64Type()),
                                 convert(b, y, b.getF64Type()));
  return convert(b, r, t);
}

/// Equal/Less/LessOrEqual/Greater/GreaterOrEqual of two scalars.
Value compare(Operation *op, ImplicitLocOpBuilder &b, Value x, Value y) {
  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  auto [fp, ip] = TypeSwitch<Operation *, std::pair<FP, IP>>(op)
                      .Case([](onnx::EqualOp) {
                        return std::pair{FP::OEQ, IP::eq};
                      })
                      .Case([](onnx::LessOp) {
                        return std::pair{FP::OLT, IP::slt};
                      })
                      .Case([](onnx::LessOrEqualOp) {
                        return std::pair{FP::OLE, IP::sle};
                      })
                      .Case([](onnx::GreaterOp) {
                        return std::pair{FP::OGT, IP::sgt};
                      })
                      .Default([](Operation *) {
                        return std::pair{FP::OGE, IP::sge};
                      });
  if (isFloat(x.getType()))
    return arith::CmpFOp::create(b, fp, x, y);
  bool u = x.getType().isInteger(1) || isUnsignedInt(x.getType());
  x = toSignless(b, x), y = toSignless(b, y);
  if (u && ip != IP::eq) // bools and unsigned integers compare unsigned
    ip = ip == IP::slt   ? IP::ult
         : ip == IP::sle ? IP::ule
         : ip == IP::sgt ? IP::ugt
                         : IP::uge;
  return arith::CmpIOp::create(b, ip, x, y);
}

//===----------------------------------------------------------------------===//
// Lowerer: the state of lowering one onnx op
//===----------------------------------------------------------------------===//

/// Builds the lowering of one onnx op at its position: the lowered operands
/// (null for onnx.NoValue), the lowered results, and helpers for sizes,
/// tensors and linalg.generic ops.
struct Lowerer {
  Operation *op;
  ImplicitLocOpBuilder b;
  SmallVector<Value> in;
  SmallVector<Value> out;

  explicit Lowerer(Operation *op) : op(op), b(op->getLoc(), op) {}

  LogicalResult fail(const Twine &why) {
    return op->emitOpError() << "cannot be lowered: " << why;
  }
  LogicalResult done(Value v) {
    out.push_back(v);
    return success();
  }
  RankedTensorType resultType(unsigned i = 0) {
    return dyn_cast<RankedTensorType>(op->getResult(i).getType());
  }
  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  static int64_t rankOf(Value v) { return typeOf(v).getRank(); }

  // Index arithmetic on OpFoldResults, folded when both sides are known.
  OpFoldResult idx(int64_t v) { return b.getIndexAttr(v); }
  Value val(OpFoldResult f) {
    return getValueOrCreateConstantIndexOp(b, b.getLoc(), f);
  }
  template <typename OpT>
  OpFoldResult fold(OpFoldResult x, OpFoldResult y,
                    int64_t (*f)(int64_t, int64_t)) {
    auto cx = getConstantIntValue(x), cy = getConstantIntValue(y);
    if (cx && cy)
      return idx(f(*cx, *cy));
    return OpFoldResult(OpT::create(b, val(x), val(y)).getResult());
  }
  OpFoldResult add(OpFoldResult x, OpFoldResult y) {
    if (isConstantIntValue(y, 0))
      return x;
    if (isConstantIntValue(x, 0))
      return y;
    return fold<arith::AddIOp>(x, y,
                               [](int64_t p, int64_t q) { return p + q; });
  }
  OpFoldResult sub(OpFoldResult x, OpFoldResult y) {
    if (isConstantIntValue(y, 0))
      return x;
    return fold<arith::SubIOp>(x, y,
                               [](int64_t p, int64_t q) { return p - q; });
  }
  OpFoldResult mul(OpFoldResult x, OpFoldResult y) {
    if (isConstantIntValue(y, 1))
      return x;
    if (isConstantIntValue(x, 1))
      return y;
    return fold<arith::MulIOp>(x, y,
                               [](int64_t p, int64_t q) { return p * q; });
  }
  OpFoldResult ceilDiv(OpFoldResult x, OpFoldResult y) {
    if (isConstantIntValue(y, 1))
      return x;
    return fold<arith::CeilDivSIOp>(x, y, [](int64_t p, int64_t q) {
      return p / q + ((p % q != 0) && ((p < 0) == (q < 0)));
    });
  }
  OpFoldResult divTrunc(OpFoldResult x, OpFoldResult y) {
    if (isConstantIntValue(y, 1))
      return x;
    return fold<arith::DivSIOp>(
        x, y, [](int64_t p, int64_t q) { return q ? p / q : 0; });
  }
  OpFoldResult min(OpFoldResult x, OpFoldResult y) {
    return fold<arith::MinSIOp>(
        x, y, [](int64_t p, int64_t q) { return std::min(p, q); });
  }
  OpFoldResult max(OpFoldResult x, OpFoldResult y) {
    return fold<arith::MaxSIOp>(
        x, y, [](int64_t p, int64_t q) { return std::max(p, q); });
  }

  /// `x` unless it is 1, then `y`: the broadcast of two sizes that are
  /// equal or one of them 1.
  OpFoldResult unlessOne(OpFoldResult x, OpFoldResult y) {
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

  /// Size of dimension i of a ranked tensor.
  OpFoldResult dim(Value t, int64_t i) {
    int64_t s = typeOf(t).getDimSize(i);
    if (s != ShapedType::kDynamic)
      return idx(s);
    return OpFoldResult(tensor::DimOp::create(b, t, i).getResult());
  }
  SmallVector<OpFoldResult> dims(Value t) {
    SmallVector<OpFoldResult> r;
    for (int64_t i = 0, n = rankOf(t); i < n; ++i)
      r.push_back(dim(t, i));
    return r;
  }
  OpFoldResult numel(Value t) {
    OpFoldResult n = idx(1);
    for (OpFoldResult d : dims(t))
      n = mul(n, d);
    return n;
  }
  /// Sizes of `t`, static dimensions taken from the type.
  SmallVector<OpFoldResult> sizesOf(RankedTensorType t,
                                    ArrayRef<OpFoldResult> computed) {
    SmallVector<OpFoldResult> r(computed);
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (!t.isDynamicDim(i))
        r[i] = idx(t.getDimSize(i));
    return r;
  }

  /// Element `i` of an integer tensor (rank 0 or 1) as a scalar / an index.
  Value element(Value t, int64_t i) {
    SmallVector<Value> at;
    if (rankOf(t) == 1)
      at.push_back(arith::ConstantIndexOp::create(b, i));
    return tensor::ExtractOp::create(b, t, at);
  }
  OpFoldResult elementIndex(Value t, int64_t i) {
    Value e = element(t, i);
    return OpFoldResult(
        arith::IndexCastOp::create(b, b.getIndexType(), e).getResult());
  }

  /// tensor.empty of type `t`; its dynamic sizes from `sizes`.
  Value empty(RankedTensorType t, ArrayRef<OpFoldResult> sizes) {
    SmallVector<Value> dyn;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.isDynamicDim(i))
        dyn.push_back(val(sizes[i]));
    return tensor::EmptyOp::create(b, t, dyn);
  }
  Value filled(RankedTensorType t, ArrayRef<OpFoldResult> sizes, TypedAttr v) {
    Value c = constant(b, v);
    return linalg::FillOp::create(b, ValueRange{c}, ValueRange{empty(t, sizes)})
        .getResult(0);
  }
  Value castTo(Value v, Type t) {
    if (v.getType() == t)
      return v;
    return tensor::CastOp::create(b, t, v);
  }

  /// A parallel linalg.generic producing `outType` (sizes from `sizes`)
  /// from `ins` read through `maps`.
  Value generic(RankedTensorType outType, ArrayRef<OpFoldResult> sizes,
                ValueRange ins, ArrayRef<AffineMap> maps, Body body) {
    int64_t r = outType.getRank();
    SmallVector<AffineMap> all(maps);
    all.push_back(b.getMultiDimIdentityMap(r));
    SmallVector<IteratorType> it(r, IteratorType::parallel);
    auto g = linalg::GenericOp::create(
        b, TypeRange{outType}, ins, ValueRange{empty(outType, sizes)}, all, it,
        [&](OpBuilder &nb, Location loc, ValueRange a) {
          ImplicitLocOpBuilder ib(loc, nb);
          linalg::YieldOp::create(ib, body(ib, a.drop_back()));
        });
    return g.getResult(0);
  }

  /// The map reading `t` broadcast (numpy rules) to `outShape`: missing
  /// leading dims are dropped, size-1 dims read index 0. A dynamic dim is
  /// read as having the output's size: see broadcastOperand.
  AffineMap broadcastMap(ShapedType t, ArrayRef<int64_t> outShape) {
    return conversion::broadcastMap(b.getContext(), t, outShape);
  }

  /// Sizes of the broadcast of `ins` to `out` (ONNX multidirectional).
  SmallVector<OpFoldResult> broadcastSizes(RankedTensorType out,
                                           ValueRange ins) {
    return conversion::broadcastSizes(b, b.getLoc(), out, ins);
  }

  /// `v` ready to be read through broadcastMap against an output of type
  /// `out` and sizes `sizes`: dynamic dims that may be 1 while the output's
  /// is not are broadcast at run time (and checked).
  Value broadcastOperand(Value v, RankedTensorType out,
                         ArrayRef<OpFoldResult> sizes) {
    return conversion::broadcastAtRunTime(b, b.getLoc(), v, out.getShape(),
                                          sizes);
  }

  /// An element-wise op over `ins`, broadcast to `outType`.
  Value elementwise(RankedTensorType outType, ValueRange ins, Body body) {
    SmallVector<OpFoldResult> sizes = broadcastSizes(outType, ins);
    SmallVector<Value> operands;
    SmallVector<AffineMap> maps;
    for (Value v : ins) {
      operands.push_back(broadcastOperand(v, outType, sizes));
      maps.push_back(broadcastMap(typeOf(v), outType.getShape()));
    }
    return generic(outType, sizes, operands, maps, body);
  }

  /// The map of a tensor that has the dims of a rank-`rank` iteration
  /// space without `dropped` ones.
  AffineMap dropMap(int64_t rank, ArrayRef<int64_t> dropped) {
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i < rank; ++i)
      if (!llvm::is_contained(dropped, i))
        exprs.push_back(b.getAffineDimExpr(i));
    return AffineMap::get(rank, 0, exprs, b.getContext());
  }

  /// Reduces `x` over `axes` into a tensor (those dims dropped) of type
  /// `acc`, starting from `init`: acc = step(acc, x, rows...), where each
  /// of `rows` has the reduced tensor's shape.
  Value
  reduce(Value x, ArrayRef<int64_t> axes, Type acc, TypedAttr init,
         ValueRange rows,
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

  /// The number of elements of `x` over `axes`, as a scalar of float type t.
  Value countOf(Value x, ArrayRef<int64_t> axes, Type t) {
    OpFoldResult n = idx(1);
    for (int64_t a : axes)
      n = mul(n, dim(x, a));
    if (auto c = getConstantIntValue(n))
      return scalar(b, t, (double)*c);
    Value i = arith::IndexCastOp::create(b, b.getI64Type(), val(n));
    return convert(b, i, t);
  }

  /// Inserts the size-1 dims of `to` (marked in `unit`) into `v`.
  Value insertUnitDims(Value v, RankedTensorType to, ArrayRef<bool> unit) {
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

  /// Removes the dims of `v` marked in `drop` (size 1 at run time).
  Value dropUnitDims(Value v, RankedTensorType to, ArrayRef<bool> drop) {
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

  /// `v` reshaped to the static type `to`: one collapse or expand where
  /// the dims regroup, otherwise through 1-D.
  Value reshapeStatic(Value v, RankedTensorType to) {
    auto st = typeOf(v);
    if (st == to)
      return v;
    if (auto g = getReassociationIndicesForReshape(st, to)) {
      if (st.getRank() > to.getRank())
        return tensor::CollapseShapeOp::create(b, to, v, *g);
      if (st.getRank() < to.getRank())
        return tensor::ExpandShapeOp::create(b, to, v, *g);
    }
    auto flat =
        RankedTensorType::get({st.getNumElements()}, st.getElementType());
    return regroup(regroup(v, flat), to);
  }
  /// Between rank 1 and any rank (static shapes): one group of all dims.
  Value regroup(Value v, RankedTensorType to) {
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

  /// tensor.reshape of `v` to `to` with the given sizes.
  Value reshapeDynamic(Value v, RankedTensorType to,
                       ArrayRef<OpFoldResult> sizes) {
    SmallVector<Value> s;
    for (OpFoldResult f : sizes)
      s.push_back(val(f));
    Value shape = tensor::FromElementsOp::create(
        b, RankedTensorType::get({(int64_t)s.size()}, b.getIndexType()), s);
    return tensor::ReshapeOp::create(b, to, v, shape);
  }
};

/// `axis` of a rank-`rank` tensor counted from the front, or nullopt if it
/// is out of range.
std::optional<int64_t> normAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

/// The elements of an integer constant operand, normalised as axes of a
/// rank-`rank` tensor (negative axes count from the end).
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

/// An index constant.
Value cidx(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

/// Element `i` (an index value) of an integer tensor as an index.
Value indexAt(ImplicitLocOpBuilder &b, Value t, Value i) {
  return arith::IndexCastOp::create(b, b.getIndexType(),
                                    tensor::ExtractOp::create(b, t, i));
}

/// `a` (an index) counted from the front of a rank-`rank` tensor.
Value normAxisValue(ImplicitLocOpBuilder &b, Value a, int64_t rank) {
  Value neg =
      arith::CmpIOp::create(b, arith::CmpIPredicate::slt, a, cidx(b, 0));
  return arith::SelectOp::create(b, neg,
                                 arith::AddIOp::create(b, a, cidx(b, rank)), a);
}

/// For each dim of a rank-`rank` tensor, whether the 1-D axes tensor
/// `axes` (read at run time, negative axes from the end) names it.
SmallVector<Value> axisFlags(Lowerer &l, Value axes, int64_t rank) {
  ImplicitLocOpBuilder &b = l.b;
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

/// The sizes of the `n` dims of `dims` that are not flagged, in order
/// (the i-th result is the dim d that is the i-th not flagged).
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

/// `v` reshaped to `to` (same elements in the same order) with `sizes`
/// computed at run time, or statically where both shapes are static.
Value reshapeTo(Lowerer &l, Value v, RankedTensorType to,
                ArrayRef<OpFoldResult> sizes) {
  if (to.hasStaticShape() && l.typeOf(v).hasStaticShape())
    return l.reshapeStatic(v, to);
  auto dynT = RankedTensorType::get(
      SmallVector<int64_t>(to.getRank(), ShapedType::kDynamic),
      to.getElementType());
  return l.castTo(l.reshapeDynamic(v, dynT, l.sizesOf(dynT, sizes)), to);
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

LogicalResult lowerUnary(Operation *op, Lowerer &l) {
  RankedTensorType t = l.resultType();
  Type e = t.getElementType();
  bool f = isFloat(e);
  if (!f && !isa<onnx::NegOp, onnx::AbsOp, onnx::ReluOp, onnx::SignOp>(op))
    return l.fail("integer operands");
  return l.done(
      l.elementwise(t, {l.in[0]}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        if (!f)
          return intUnary(op, b, a[0]);
        return inWideFloat(b, a[0],
                           [&](Value x) { return floatUnary(op, b, x); });
      }));
}

LogicalResult lowerBinary(Operation *op, Lowerer &l) {
  RankedTensorType t = l.resultType();
  SmallVector<Value> ins(l.in);
  return l.done(
      l.elementwise(t, ins, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        if (isa<onnx::PowOp>(op))
          return power(b, a[0], a[1]);
        Value acc = a[0];
        for (Value v : a.drop_front())
          acc = binary(op, b, acc, v);
        return acc;
      }));
}

LogicalResult lowerCompare(Operation *op, Lowerer &l) {
  return l.done(l.elementwise(l.resultType(), {l.in[0], l.in[1]},
                              [&](ImplicitLocOpBuilder &b, ValueRange a) {
                                return compare(op, b, a[0], a[1]);
                              }));
}

LogicalResult lowerLogical(Operation *op, Lowerer &l) {
  SmallVector<Value> ins(l.in);
  return l.done(l.elementwise(
      l.resultType(), ins, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        return TypeSwitch<Operation *, Value>(op)
            .Case([&](onnx::AndOp) {
              return arith::AndIOp::create(b, a[0], a[1]);
            })
            .Case(
                [&](onnx::OrOp) { return arith::OrIOp::create(b, a[0], a[1]); })
            .Default([&](Operation *) {
              return arith::XOrIOp::create(b, a[0],
                                           scalar(b, b.getI1Type(), 1));
            });
      }));
}

LogicalResult lower(onnx::WhereOp op, Lowerer &l) {
  return l.done(l.elementwise(l.resultType(), {l.in[0], l.in[1], l.in[2]},
                              [&](ImplicitLocOpBuilder &b, ValueRange a) {
                                return arith::SelectOp::create(b, a[0], a[1],
                                                               a[2]);
                              }));
}

LogicalResult lowerCast(Lowerer &l) {
  RankedTensorType t = l.resultType();
  Type to = t.getElementType();
  if (!to.isIntOrFloat() || !l.typeOf(l.in[0]).getElementType().isIntOrFloat())
    return l.fail("only casts between float, integer and bool types");
  return l.done(
      l.elementwise(t, {l.in[0]}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        return convert(b, a[0], to);
      }));
}

LogicalResult lower(onnx::CastOp, Lowerer &l) { return lowerCast(l); }
LogicalResult lower(onnx::CastLikeOp, Lowerer &l) { return lowerCast(l); }

LogicalResult lower(onnx::IsInfOp op, Lowerer &l) {
  bool pos = op.getDetectPositive() != 0, neg = op.getDetectNegative() != 0;
  return l.done(l.elementwise(
      l.resultType(), {l.in[0]}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value x = a[0];
        auto ft = cast<FloatType>(x.getType());
        auto inf = [&](bool negative) {
          return arith::ConstantOp::create(
              b, b.getFloatAttr(
                     ft, APFloat::getInf(ft.getFloatSemantics(), negative)));
        };
        Value r = scalar(b, b.getI1Type(), 0);
        if (pos)
          r = arith::OrIOp::create(
              b, r,
              arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x,
                                    inf(false)));
        if (neg)
          r = arith::OrIOp::create(
              b, r,
              arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x,
                                    inf(true)));
        return r;
      }));
}

LogicalResult lower(onnx::IsNaNOp, Lowerer &l) {
  return l.done(l.elementwise(
      l.resultType(), {l.in[0]}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        return arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, a[0], a[0]);
      }));
}

/// Dropout in inference (training_mode absent or false): the identity, the
/// mask all true. In training mode only a ratio of 0 is deterministic.
LogicalResult lower(onnx::DropoutOp op, Lowerer &l) {
  bool training = false;
  if (l.in[2]) {
    auto t = onnx::getConstantInts(op.getTrainingMode());
    if (!t || t->size() != 1)
      return l.fail("a training_mode known only at run time (random "
                    "dropout is not supported)");
    training = (*t)[0] != 0;
  }
  if (training) {
    auto ratio = l.in[1] ? onnx::getConstantDoubles(op.getRatio())
                         : std::optional<SmallVector<double>>();
    if (!ratio || ratio->size() != 1 || (*ratio)[0] != 0.0)
      return l.fail("training mode (random dropout) without a constant "
                    "ratio of 0");
  }
  l.out.push_back(l.in[0]);
  if (l.op->getNumResults() > 1) {
    RankedTensorType mt = l.resultType(1);
    l.out.push_back(mt ? l.filled(mt, l.dims(l.in[0]), l.b.getBoolAttr(true))
                       : Value());
  }
  return success();
}

LogicalResult lower(onnx::ClipOp op, Lowerer &l) {
  RankedTensorType t = l.resultType();
  bool hasMin = (bool)l.in[1], hasMax = (bool)l.in[2];
  SmallVector<Value> ins{l.in[0]};
  if (hasMin)
    ins.push_back(l.in[1]);
  if (hasMax)
    ins.push_back(l.in[2]);
  return l.done(
      l.elementwise(t, ins, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value x = a[0];
        if (hasMin)
          x = maxOf(b, x, a[1]);
        if (hasMax)
          x = minOf(b, x, a.back());
        return x;
      }));
}

//===----------------------------------------------------------------------===//
// Contractions: MatMul, Einsum
//===----------------------------------------------------------------------===//

/// Exprs reading the `n` leading (batch) dims of `t` broadcast to the
/// result batch dims [0, nb) of `out`.
void batchExprs(Lowerer &l, RankedTensorType t, int64_t n, int64_t nb,
                RankedTensorType out, SmallVectorImpl<AffineExpr> &exprs) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = nb - n + i;
    if (t.getDimSize(i) == 1 && out.getDimSize(d) != 1)
      exprs.push_back(l.b.getAffineConstantExpr(0));
    else
      exprs.push_back(l.b.getAffineDimExpr(d));
  }
}

/// A contraction over the loops [0, nLoops), the first `out.getRank()`
/// parallel: out += Π ins, accumulated in accType(element type).
Value contract(Lowerer &l, RankedTensorType out, ArrayRef<OpFoldResult> sizes,
               ValueRange ins, ArrayRef<AffineMap> maps, int64_t nLoops,
               bool keepAcc = false) {
  Type e = out.getElementType(), acc = accType(e);
  auto accT = RankedTensorType::get(out.getShape(), acc);
  Value init = l.filled(accT, sizes, scalarAttr(l.b, acc, 0));
  SmallVector<AffineExpr> outExprs;
  for (int64_t i = 0; i < out.getRank(); ++i)
    outExprs.push_back(l.b.getAffineDimExpr(i));
  SmallVector<AffineMap> all(maps);
  all.push_back(AffineMap::get(nLoops, 0, outExprs, l.b.getContext()));
  SmallVector<IteratorType> it(nLoops, IteratorType::reduction);
  std::fill_n(it.begin(), out.getRank(), IteratorType::parallel);
  auto g = linalg::GenericOp::create(
      l.b, TypeRange{accT}, ins, ValueRange{init}, all, it,
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        ImplicitLocOpBuilder ib(loc, nb);
        auto in = [&](Value v) { return toSignless(ib, convert(ib, v, acc)); };
        Value p = in(a[0]);
        for (Value v : a.drop_front().drop_back())
          p = isFloat(acc) ? (Value)arith::MulFOp::create(ib, p, in(v))
                           : (Value)arith::MulIOp::create(ib, p, in(v));
        Value o = toSignless(ib, a.back());
        Value s = isFloat(acc) ? (Value)arith::AddFOp::create(ib, o, p)
                               : (Value)arith::AddIOp::create(ib, o, p);
        linalg::YieldOp::create(ib, castScalar(ib, s, acc));
      });
  Value r = g.getResult(0);
  if (acc == e || keepAcc)
    return r;
  return l.elementwise(out, {r}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
    return convert(b, a[0], e);
  });
}

LogicalResult lower(onnx::MatMulOp op, Lowerer &l) {
  Value a = l.in[0], bm = l.in[1];
  RankedTensorType at = l.typeOf(a), bt = l.typeOf(bm), rt = l.resultType();
  int64_t ra = at.getRank(), rb = bt.getRank(), r = rt.getRank();
  bool aVec = ra == 1, bVec = rb == 1;
  int64_t nb = r - (aVec ? 0 : 1) - (bVec ? 0 : 1);
  if (ra < 1 || rb < 1 || nb < 0)
    return l.fail("operands of rank 0");
  AffineExpr k = l.b.getAffineDimExpr(r);
  SmallVector<AffineExpr> ae, be;
  batchExprs(l, at, std::max<int64_t>(ra - 2, 0), nb, rt, ae);
  if (!aVec)
    ae.push_back(l.b.getAffineDimExpr(nb));
  ae.push_back(k);
  batchExprs(l, bt, std::max<int64_t>(rb - 2, 0), nb, rt, be);
  be.push_back(k);
  if (!bVec)
    be.push_back(l.b.getAffineDimExpr(r - 1));
  // Result sizes: the batch dims broadcast (ONNX multidirectional), then
  // the matrix dims.
  int64_t na = std::max<int64_t>(ra - 2, 0), nbb = std::max<int64_t>(rb - 2, 0);
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < nb; ++d) {
    SmallVector<std::pair<Value, int64_t>> dims;
    if (int64_t ia = d - (nb - na); ia >= 0)
      dims.push_back({a, ia});
    if (int64_t ib = d - (nb - nbb); ib >= 0)
      dims.push_back({bm, ib});
    sizes.push_back(rt.isDynamicDim(d)
                        ? conversion::broadcastSize(l.b, l.b.getLoc(), dims)
                        : l.idx(rt.getDimSize(d)));
  }
  if (!aVec)
    sizes.push_back(l.dim(a, ra - 2));
  if (!bVec)
    sizes.push_back(l.dim(bm, rb - 1));
  // Batch dims that may be 1 while the result's is not: broadcast at run
  // time (the matrix dims, -1, are not broadcast).
  auto batchOutDims = [&](int64_t rank, int64_t n) {
    SmallVector<int64_t> o(rank, -1);
    for (int64_t i = 0; i < n; ++i)
      o[i] = nb - n + i;
    return o;
  };
  a = conversion::broadcastDimsAtRunTime(
      l.b, l.b.getLoc(), a, batchOutDims(ra, na), rt.getShape(), sizes);
  bm = conversion::broadcastDimsAtRunTime(
      l.b, l.b.getLoc(), bm, batchOutDims(rb, nbb), rt.getShape(), sizes);
  MLIRContext *ctx = l.b.getContext();
  return l.done(contract(
      l, rt, l.sizesOf(rt, sizes), {a, bm},
      {AffineMap::get(r + 1, 0, ae, ctx), AffineMap::get(r + 1, 0, be, ctx)},
      r + 1));
}

/// Gemm: Y = alpha * A' B' + beta * C (A', B' transposed where asked, C
/// broadcast to [M, N]); the product accumulates in accType. Integer Gemms
/// with alpha or beta other than 1 scale in f64 and truncate (as numpy's
/// astype of the reference).
LogicalResult lower(onnx::GemmOp op, Lowerer &l) {
  Value a = l.in[0], bm = l.in[1], c = l.in[2];
  RankedTensorType rt = l.resultType();
  if (l.rankOf(a) != 2 || l.rankOf(bm) != 2 || rt.getRank() != 2)
    return l.fail("A, B or Y not of rank 2");
  bool ta = op.getTransA() != 0, tb = op.getTransB() != 0;
  MLIRContext *ctx = l.b.getContext();
  AffineExpr m = l.b.getAffineDimExpr(0), n = l.b.getAffineDimExpr(1),
             k = l.b.getAffineDimExpr(2);
  AffineMap am =
      AffineMap::get(3, 0, ta ? ArrayRef{k, m} : ArrayRef{m, k}, ctx);
  AffineMap bmap =
      AffineMap::get(3, 0, tb ? ArrayRef{n, k} : ArrayRef{k, n}, ctx);
  SmallVector<OpFoldResult> sizes{l.dim(a, ta ? 1 : 0), l.dim(bm, tb ? 0 : 1)};
  Value ab =
      contract(l, rt, l.sizesOf(rt, sizes), {a, bm}, {am, bmap}, 3, true);
  double alpha = op.getAlpha().convertToDouble(),
         beta = op.getBeta().convertToDouble();
  Type e = rt.getElementType(), acc = accType(e);
  bool f = isFloat(acc);
  Type sc = f ? acc : l.b.getF64Type(); // the type alpha and beta scale in
  bool scaled = alpha != 1.0 || (c && beta != 1.0);
  SmallVector<Value> ins{ab};
  if (c)
    ins.push_back(c);
  return l.done(
      l.elementwise(rt, ins, [&](ImplicitLocOpBuilder &b, ValueRange v) {
        if (!f && !scaled) // integers: exact
          return convert(b, c ? addOf(b, v[0], v[1]) : v[0], e);
        Value y = convert(b, v[0], sc);
        if (alpha != 1.0)
          y = arith::MulFOp::create(b, scalar(b, sc, alpha), y);
        if (c) {
          Value cv = convert(b, v[1], sc);
          if (beta != 1.0)
            cv = arith::MulFOp::create(b, scalar(b, sc, beta), cv);
          y = arith::AddFOp::create(b, y, cv);
        }
        return convert(b, y, e);
      }));
}

/// Conv over any number of spatial dims and any group: X zero-padded
/// (explicit pads, or the SAME_UPPER / SAME_LOWER pads computed from the
/// sizes, at run time when they are dynamic), then one contraction over the
/// loops (n, m, o1..on | c, k1..kn), accumulated in accType:
///   Y[n, m, o] += Xp[n, (m floordiv M/G) * C/G + c, o * s + k * d] W[m, c, k]
/// and the bias added after. group = 1 is the dense conv, group = channels
/// the depthwise one (C/G = 1). W must have a static shape.
LogicalResult lower(onnx::ConvOp op, Lowerer &l) {
  Value x = l.in[0], w = l.in[1], bias = l.in[2];
  RankedTensorType xt = l.typeOf(x), wt = l.typeOf(w), rt = l.resultType();
  int64_t n = xt.getRank() - 2, g = op.getGroup();
  if (!rt || n < 1 || wt.getRank() != n + 2)
    return l.fail("X and W must be [N, C, D...] and [M, C/group, k...]");
  if (!wt.hasStaticShape())
    return l.fail("W (the kernel) has a dynamic shape");
  int64_t m = wt.getDimSize(0), cg = wt.getDimSize(1), mg = m / g;
  auto ints = [&](std::optional<ArrayRef<int64_t>> a, int64_t size,
                  int64_t dflt) {
    return a ? SmallVector<int64_t>(*a) : SmallVector<int64_t>(size, dflt);
  };
  SmallVector<int64_t> strides = ints(op.getStrides(), n, 1),
                       dilations = ints(op.getDilations(), n, 1),
                       pads = ints(op.getPads(), 2 * n, 0);
  StringRef autoPad = op.getAutoPad();
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  ImplicitLocOpBuilder &b = l.b;
  SmallVector<OpFoldResult> lo(n + 2, l.idx(0)), hi(n + 2, l.idx(0));
  SmallVector<OpFoldResult> psizes{l.dim(x, 0), l.dim(x, 1)};
  SmallVector<OpFoldResult> osizes{l.dim(x, 0), l.idx(m)};
  bool padded = false;
  for (int64_t i = 0; i < n; ++i) {
    OpFoldResult d = l.dim(x, 2 + i);
    int64_t s = strides[i],
            span = (wt.getDimSize(2 + i) - 1) * dilations[i] + 1;
    if (same) {
      OpFoldResult o = l.ceilDiv(d, l.idx(s));
      OpFoldResult total = l.max(
          l.idx(0),
          l.sub(l.add(l.mul(l.sub(o, l.idx(1)), l.idx(s)), l.idx(span)), d));
      OpFoldResult half = l.divTrunc(total, l.idx(2));
      bool upper = autoPad == "SAME_UPPER";
      lo[2 + i] = upper ? half : l.sub(total, half);
      hi[2 + i] = upper ? l.sub(total, half) : half;
    } else if (autoPad != "VALID") {
      lo[2 + i] = l.idx(pads[i]);
      hi[2 + i] = l.idx(pads[n + i]);
    }
    padded |=
        !isConstantIntValue(lo[2 + i], 0) || !isConstantIntValue(hi[2 + i], 0);
    OpFoldResult p = l.add(l.add(d, lo[2 + i]), hi[2 + i]);
    psizes.push_back(p);
    osizes.push_back(
        l.add(l.divTrunc(l.sub(p, l.idx(span)), l.idx(s)), l.idx(1)));
  }
  Type e = rt.getElementType();
  if (padded) { // zeros with X inserted at the low pads
    SmallVector<int64_t> shape;
    for (OpFoldResult p : psizes)
      shape.push_back(getConstantIntValue(p).value_or(ShapedType::kDynamic));
    auto pt = RankedTensorType::get(shape, e);
    Value zeros = l.filled(pt, psizes, scalarAttr(b, e, 0));
    SmallVector<OpFoldResult> ones(n + 2, l.idx(1));
    x = tensor::InsertSliceOp::create(b, x, zeros, lo, l.dims(x), ones);
  }
  MLIRContext *ctx = b.getContext();
  int64_t loops = 2 * n + 3;
  auto d = [&](int64_t i) { return b.getAffineDimExpr(i); };
  AffineExpr c = d(n + 2);
  SmallVector<AffineExpr> xe{d(0), g == 1 ? c : d(1).floorDiv(mg) * cg + c};
  SmallVector<AffineExpr> we{d(1), c};
  for (int64_t i = 0; i < n; ++i) {
    xe.push_back(d(2 + i) * strides[i] + d(n + 3 + i) * dilations[i]);
    we.push_back(d(n + 3 + i));
  }
  Value y = contract(
      l, rt, l.sizesOf(rt, osizes), {x, w},
      {AffineMap::get(loops, 0, xe, ctx), AffineMap::get(loops, 0, we, ctx)},
      loops, /*keepAcc=*/bias != nullptr);
  if (!bias)
    return l.done(y);
  int64_t r = rt.getRank();
  Type acc = accType(e);
  return l.done(l.generic(
      rt, l.sizesOf(rt, osizes), {y, bias},
      {b.getMultiDimIdentityMap(r), AffineMap::get(r, 0, {d(1)}, ctx)},
      [&](ImplicitLocOpBuilder &ib, ValueRange a) {
        return convert(
            ib, arith::AddFOp::create(ib, a[0], convert(ib, a[1], acc)), e);
      }));
}

/// An einsum equation without ellipsis: one term per input, the output term.
struct Einsum {
  SmallVector<std::string> terms;
  std::string output;
};

/// An ellipsis stands for the leading dims a term's operand has beyond its
/// labels; they get labels of their own (unused characters), aligned from
/// the right across the operands. A label repeated in one term reads the
/// operand's diagonal.
FailureOr<Einsum> parseEinsum(StringRef equation, ArrayRef<int64_t> ranks,
                              std::string &why) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq.push_back(c);
  Einsum e;
  size_t arrow = eq.find("->");
  SmallVector<StringRef> parts;
  StringRef(eq).substr(0, arrow).split(parts, ',');
  if (parts.size() != ranks.size())
    return why = "einsum terms do not match the inputs", failure();
  std::string spare; // characters no term uses, for the ellipsis dims
  for (char c = '0'; c <= '9'; ++c)
    if (eq.find(c) == std::string::npos)
      spare.push_back(c);
  SmallVector<int64_t> nEll;
  int64_t ell = 0;
  for (auto [p, r] : llvm::zip(parts, ranks)) {
    size_t at = p.find("...");
    int64_t n = at == StringRef::npos ? 0 : r - ((int64_t)p.size() - 3);
    if (n < 0 || (at == StringRef::npos && (int64_t)p.size() != r))
      return why = "einsum term of another rank than its operand", failure();
    nEll.push_back(n);
    ell = std::max(ell, n);
  }
  if (ell > (int64_t)spare.size())
    return why = "einsum ellipsis of too many dims", failure();
  std::string ellLabels = spare.substr(0, ell);
  auto expand = [&](StringRef p, int64_t n) {
    size_t at = p.find("...");
    if (at == StringRef::npos)
      return p.str();
    return (p.substr(0, at) + StringRef(ellLabels).take_back(n) +
            p.substr(at + 3))
        .str();
  };
  std::map<char, int> count;
  for (auto [p, n] : llvm::zip(parts, nEll)) {
    e.terms.push_back(expand(p, n));
    for (char c : e.terms.back())
      ++count[c];
  }
  if (arrow != std::string::npos) {
    e.output = expand(StringRef(eq).substr(arrow + 2), ell);
  } else { // implicit form: the ellipsis, then labels seen once, sorted
    e.output = ellLabels;
    for (auto [c, n] : count)
      if (n == 1 && ellLabels.find(c) == std::string::npos)
        e.output.push_back(c);
  }
  for (char c : e.output)
    if (!count.count(c))
      return why = "einsum output label not in any input", failure();
  return e;
}

LogicalResult lower(onnx::EinsumOp op, Lowerer &l) {
  std::string why;
  SmallVector<int64_t> ranks;
  for (Value v : l.in)
    ranks.push_back(l.rankOf(v));
  FailureOr<Einsum> e = parseEinsum(op.getEquation(), ranks, why);
  if (failed(e))
    return l.fail(why);
  // Loops: the output labels in order, then the summed labels.
  std::string loops = e->output;
  for (const std::string &t : e->terms)
    for (char c : t)
      if (loops.find(c) == std::string::npos)
        loops.push_back(c);
  MLIRContext *ctx = l.b.getContext();
  SmallVector<AffineMap> maps;
  for (const std::string &t : e->terms) {
    SmallVector<AffineExpr> exprs;
    for (char c : t)
      exprs.push_back(l.b.getAffineDimExpr(loops.find(c)));
    maps.push_back(AffineMap::get(loops.size(), 0, exprs, ctx));
  }
  // A label's operands must agree on its size (no broadcasting of 1s).
  std::map<char, int64_t> known;
  for (auto [t, v] : llvm::zip(e->terms, l.in))
    for (auto [p, c] : llvm::enumerate(t)) {
      int64_t n = l.typeOf(v).getDimSize(p);
      if (n == ShapedType::kDynamic)
        continue;
      auto [it, fresh] = known.insert({c, n});
      if (!fresh && it->second != n)
        return l.fail("einsum operands of different sizes for one label "
                      "(broadcasting)");
    }
  SmallVector<OpFoldResult> sizes;
  for (char c : e->output)
    for (auto [t, v] : llvm::zip(e->terms, l.in))
      if (size_t p = t.find(c); p != std::string::npos) {
        sizes.push_back(l.dim(v, p));
        break;
      }
  RankedTensorType rt = l.resultType();
  SmallVector<Value> ins(l.in);
  return l.done(contract(l, rt, l.sizesOf(rt, sizes), ins, maps, loops.size()));
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

/// The axes a Reduce* op reduces: its constant `axes` input, or all axes.
/// Empty with noop_with_empty_axes means none.
template <typename OpT>
std::optional<SmallVector<int64_t>> reduceAxes(OpT op, Lowerer &l) {
  int64_t r = l.rankOf(l.in[0]);
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < r; ++i)
    all.push_back(i);
  if (!l.in[1])
    return op.getNoopWithEmptyAxes() ? SmallVector<int64_t>{} : all;
  auto axes = constantAxes(op.getAxes(), r);
  if (!axes && l.typeOf(l.in[1]).getShape() == ArrayRef<int64_t>{0})
    axes = SmallVector<int64_t>{}; // no axes, known from the type
  if (axes && axes->empty() && !op.getNoopWithEmptyAxes())
    return all;
  return axes;
}

/// One step of a Reduce* op: the accumulator combined with an element.
Value reduceStep(Operation *op, ImplicitLocOpBuilder &b, Value acc0, Value v0) {
  if (isa<onnx::ReduceMaxOp>(op))
    return maxOf(b, acc0, v0);
  if (isa<onnx::ReduceMinOp>(op))
    return minOf(b, acc0, v0);
  Type t = acc0.getType();
  bool f = isFloat(t);
  Value acc = toSignless(b, acc0), v = toSignless(b, v0);
  auto add = [&](Value x, Value y) -> Value {
    if (f)
      return arith::AddFOp::create(b, x, y);
    return arith::AddIOp::create(b, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    if (f)
      return arith::MulFOp::create(b, x, y);
    return arith::MulIOp::create(b, x, y);
  };
  Value r = TypeSwitch<Operation *, Value>(op)
                .Case([&](onnx::ReduceProdOp) { return mul(acc, v); })
                .Case([&](onnx::ReduceL2Op) { return add(acc, mul(v, v)); })
                .Default([&](Operation *) { return add(acc, v); });
  return castScalar(b, r, t);
}

/// The final value of a Reduce* op from its accumulator: the mean divides
/// by the count `n` (of the accumulator's type), L2 takes the root.
Value reduceFinish(Operation *op, ImplicitLocOpBuilder &b, Value v, Value n) {
  Type t = v.getType();
  if (isa<onnx::ReduceMeanOp>(op)) {
    if (isFloat(t))
      return arith::DivFOp::create(b, v, n);
    Value q = isUnsignedInt(t) ? (Value)arith::DivUIOp::create(
                                     b, toSignless(b, v), toSignless(b, n))
                               : (Value)arith::DivSIOp::create(b, v, n);
    return castScalar(b, q, t);
  }
  if (isa<onnx::ReduceL2Op>(op))
    return math::SqrtOp::create(b, v);
  return v;
}

TypedAttr reduceInit(Operation *op, Builder &b, Type acc) {
  if (isa<onnx::ReduceMaxOp>(op))
    return extremeAttr(b, acc, true);
  if (isa<onnx::ReduceMinOp>(op))
    return extremeAttr(b, acc, false);
  return scalarAttr(b, acc, isa<onnx::ReduceProdOp>(op) ? 1 : 0);
}

/// A Reduce* op whose axes come at run time. A flag per input dim says
/// whether the axes name it; the result with the reduced dims kept as 1s
/// is a generic over its elements whose body loops over the elements of
/// the reduced dims (extent: the input dim where flagged, 1 elsewhere, so
/// the input index is the output index plus the loop's). Without keepdims
/// that result is reshaped to the kept dims, whose number the result type
/// gives.
template <typename OpT> LogicalResult lowerReduceDynamic(OpT op, Lowerer &l) {
  Value x = l.in[0], axesT = l.in[1];
  RankedTensorType xt = l.typeOf(x), rt = l.resultType();
  int64_t r = xt.getRank();
  if (l.rankOf(axesT) != 1)
    return l.fail("axes that are not a 1-D tensor");
  bool keep = op.getKeepdims(), noop = op.getNoopWithEmptyAxes();
  if (keep ? rt.getRank() != r : rt.getRank() > r)
    return l.fail("a result rank that does not fit the input rank");
  Operation *o = op.getOperation();
  Type e = rt.getElementType(), acc = accType(e);
  if (isa<onnx::ReduceL2Op>(o) && !isFloat(acc))
    return l.fail("integer ReduceL2");
  ImplicitLocOpBuilder &b = l.b;
  Value zero = cidx(b, 0), one = cidx(b, 1), n = l.val(l.dim(axesT, 0));
  SmallVector<Value> flag = axisFlags(l, axesT, r);
  Value none = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, n, zero);
  if (!noop) // no axes: all of them
    for (Value &fd : flag)
      fd = arith::OrIOp::create(b, fd, none);
  SmallVector<Value> ext, inDims;
  SmallVector<OpFoldResult> outSizes;
  SmallVector<int64_t> keptShape;
  Value count = one;
  for (int64_t d = 0; d < r; ++d) {
    Value dd = l.val(l.dim(x, d));
    inDims.push_back(dd);
    ext.push_back(arith::SelectOp::create(b, flag[d], dd, one));
    outSizes.push_back(
        OpFoldResult(arith::SelectOp::create(b, flag[d], one, dd).getResult()));
    count = arith::MulIOp::create(b, count, ext[d]);
    keptShape.push_back(xt.getDimSize(d) == 1 ? 1 : ShapedType::kDynamic);
  }
  Value cnt;
  if (isa<onnx::ReduceMeanOp>(o))
    cnt = convert(b, arith::IndexCastOp::create(b, b.getI64Type(), count), acc);
  TypedAttr initAttr = reduceInit(o, b, acc);
  auto keptT = RankedTensorType::get(keptShape, e);
  Value red = l.generic(
      keptT, outSizes, {}, {}, [&](ImplicitLocOpBuilder &ib, ValueRange) {
        SmallVector<Value> oi;
        for (int64_t d = 0; d < r; ++d)
          oi.push_back(linalg::IndexOp::create(ib, d));
        auto loop = scf::ForOp::create(
            ib, zero, count, one, ValueRange{constant(ib, initAttr)},
            [&](OpBuilder &nb, Location loc, Value k, ValueRange accs) {
              ImplicitLocOpBuilder jb(loc, nb);
              SmallVector<Value> at(r);
              Value rem = k;
              for (int64_t d = r - 1; d >= 0; --d) {
                Value kd = arith::RemUIOp::create(jb, rem, ext[d]);
                rem = arith::DivUIOp::create(jb, rem, ext[d]);
                at[d] = arith::AddIOp::create(jb, oi[d], kd);
              }
              Value v = tensor::ExtractOp::create(jb, x, at);
              scf::YieldOp::create(
                  jb, reduceStep(o, jb, accs[0], convert(jb, v, acc)));
            });
        return convert(ib, reduceFinish(o, ib, loop.getResult(0), cnt), e);
      });
  if (keep)
    return l.done(l.castTo(red, rt));
  int64_t R = rt.getRank();
  if (R == 0) {
    SmallVector<Value> at(r, zero);
    Value v = tensor::ExtractOp::create(b, red, at);
    return l.done(tensor::FromElementsOp::create(b, rt, v));
  }
  return l.done(reshapeTo(l, red, rt, keptSizes(b, flag, inDims, R)));
}

template <typename OpT> LogicalResult lowerReduce(OpT op, Lowerer &l) {
  auto axes = reduceAxes(op, l);
  if (!axes)
    return lowerReduceDynamic(op, l);
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  Operation *o = op.getOperation();
  // No axes (noop_with_empty_axes): a reduction over none, as the ONNX
  // reference computes it: x itself, |x| for L2.
  if (axes->empty() && !isa<onnx::ReduceL2Op>(o))
    return l.done(x);
  Type e = rt.getElementType(), acc = accType(e);
  bool f = isFloat(acc), mean = isa<onnx::ReduceMeanOp>(o),
       l2 = isa<onnx::ReduceL2Op>(o);
  if (l2 && !f)
    return l.fail("integer ReduceL2");
  Value red =
      l.reduce(x, *axes, acc, reduceInit(o, l.b, acc), {},
               [&](ImplicitLocOpBuilder &b, Value a, Value v, ValueRange) {
                 return reduceStep(o, b, a, convert(b, v, acc));
               });
  // Mean divides by the count, L2 takes the root; back to the element type.
  Value n = mean ? l.countOf(x, *axes, acc) : Value();
  auto redT = l.typeOf(red).clone(e);
  red = l.elementwise(redT, {red}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
    return convert(b, reduceFinish(o, b, a[0], n), e);
  });
  if (!op.getKeepdims() || axes->empty())
    return l.done(l.castTo(red, rt));
  SmallVector<bool> unit(rt.getRank(), false);
  SmallVector<int64_t> shape(rt.getShape());
  for (int64_t a : *axes)
    unit[a] = true, shape[a] = 1;
  return l.done(l.castTo(l.insertUnitDims(red, rt.clone(shape), unit), rt));
}

/// Softmax / LogSoftmax over one axis, in f32 (or f64).
LogicalResult lowerSoftmax(int64_t onnxAxis, bool log, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank();
  auto ax = normAxis(onnxAxis, r);
  if (!ax)
    return l.fail("axis out of range");
  int64_t axis = *ax;
  Type e = rt.getElementType(), acc = accType(e);
  Value m = l.reduce(
      x, {axis}, acc, extremeAttr(l.b, acc, true), {},
      [&](ImplicitLocOpBuilder &b, Value a, Value v, ValueRange) -> Value {
        return arith::MaximumFOp::create(b, a, convert(b, v, acc));
      });
  Value s = l.reduce(
      x, {axis}, acc, scalarAttr(l.b, acc, 0), {m},
      [&](ImplicitLocOpBuilder &b, Value a, Value v, ValueRange rows) -> Value {
        Value d = arith::SubFOp::create(b, convert(b, v, acc), rows[0]);
        return arith::AddFOp::create(b, a, math::ExpOp::create(b, d));
      });
  AffineMap row = l.dropMap(r, {axis});
  return l.done(l.generic(
      rt, l.dims(x), {x, m, s}, {l.b.getMultiDimIdentityMap(r), row, row},
      [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value d = arith::SubFOp::create(b, convert(b, a[0], acc), a[1]);
        Value y = log ? (Value)arith::SubFOp::create(
                            b, d, math::LogOp::create(b, a[2]))
                      : (Value)arith::DivFOp::create(
                            b, math::ExpOp::create(b, d), a[2]);
        return convert(b, y, e);
      }));
}

/// The mean of `x` over `axes` (dropped), in `acc`; `n` is their count.
Value normMean(Lowerer &l, Value x, ArrayRef<int64_t> axes, Type acc, Value n) {
  Value sum = l.reduce(
      x, axes, acc, scalarAttr(l.b, acc, 0), {},
      [&](ImplicitLocOpBuilder &b, Value a, Value v, ValueRange) -> Value {
        return arith::AddFOp::create(b, a, convert(b, v, acc));
      });
  return l.elementwise(l.typeOf(sum), {sum},
                       [&](ImplicitLocOpBuilder &b, ValueRange a) {
                         return arith::DivFOp::create(b, a[0], n);
                       });
}

/// 1 / sqrt(mean((x - mean)^2) + eps) over `axes`; without `mean`, the
/// root mean square's reciprocal (RMSNormalization).
Value normInvStd(Lowerer &l, Value x, ArrayRef<int64_t> axes, Type acc, Value n,
                 Value mean, double eps) {
  SmallVector<Value> rows;
  if (mean)
    rows.push_back(mean);
  Value ss = l.reduce(
      x, axes, acc, scalarAttr(l.b, acc, 0), rows,
      [&](ImplicitLocOpBuilder &b, Value a, Value v, ValueRange m) -> Value {
        Value d = convert(b, v, acc);
        if (!m.empty())
          d = arith::SubFOp::create(b, d, m[0]);
        return arith::AddFOp::create(b, a, arith::MulFOp::create(b, d, d));
      });
  Value epsV = scalar(l.b, acc, eps);
  return l.elementwise(
      l.typeOf(ss), {ss}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value var = arith::DivFOp::create(b, a[0], n);
        return math::RsqrtOp::create(b, arith::AddFOp::create(b, var, epsV));
      });
}

/// y = (x - mean) * inv * scale + bias, scale and bias broadcast to x.
Value normApply(Lowerer &l, RankedTensorType rt, ArrayRef<int64_t> axes,
                Value x, Value inv, Value scale, Value mean, Value bias) {
  int64_t r = rt.getRank();
  Type e = rt.getElementType(), acc = accType(e);
  AffineMap row = l.dropMap(r, axes);
  SmallVector<OpFoldResult> sizes = l.dims(x);
  SmallVector<Value> ins{x, inv, l.broadcastOperand(scale, rt, sizes)};
  SmallVector<AffineMap> maps{l.b.getMultiDimIdentityMap(r), row,
                              l.broadcastMap(l.typeOf(scale), rt.getShape())};
  if (mean) {
    ins.push_back(mean);
    maps.push_back(row);
  }
  if (bias) {
    ins.push_back(l.broadcastOperand(bias, rt, sizes));
    maps.push_back(l.broadcastMap(l.typeOf(bias), rt.getShape()));
  }
  return l.generic(
      rt, sizes, ins, maps, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value v = convert(b, a[0], acc);
        if (mean)
          v = arith::SubFOp::create(b, v, a[3]);
        v = arith::MulFOp::create(b, arith::MulFOp::create(b, v, a[1]),
                                  convert(b, a[2], acc));
        if (bias)
          v = arith::AddFOp::create(b, v, convert(b, a.back(), acc));
        return convert(b, v, e);
      });
}

/// A normalisation statistic (reduced dims dropped) as the result `i`:
/// the reduced dims back as 1s, its element type; null where unused.
Value normStat(Lowerer &l, unsigned i, Value v, ArrayRef<int64_t> axes) {
  auto t = l.resultType(i);
  if (!t)
    return Value();
  Value c = l.elementwise(l.typeOf(v).clone(t.getElementType()), {v},
                          [&](ImplicitLocOpBuilder &b, ValueRange a) {
                            return convert(b, a[0], t.getElementType());
                          });
  SmallVector<bool> unit(t.getRank(), false);
  for (int64_t a : axes)
    unit[a] = true;
  return l.insertUnitDims(c, t, unit);
}

/// LayerNormalization (Y, and Mean / InvStdDev where used) or, with
/// `rms`, RMSNormalization, over the dims [axis, rank), in f32 (or f64).
LogicalResult lowerNorm(int64_t onnxAxis, double eps, bool rms, Lowerer &l) {
  Value x = l.in[0], scale = l.in[1], bias = rms ? Value() : l.in[2];
  RankedTensorType rt = l.resultType();
  auto axis = normAxis(onnxAxis, rt.getRank());
  if (!axis)
    return l.fail("axis out of range");
  auto axes = llvm::to_vector(llvm::seq<int64_t>(*axis, rt.getRank()));
  Type acc = accType(rt.getElementType());
  Value n = l.countOf(x, axes, acc);
  Value mean = rms ? Value() : normMean(l, x, axes, acc, n);
  Value inv = normInvStd(l, x, axes, acc, n, mean, eps);
  l.out.push_back(normApply(l, rt, axes, x, inv, scale, mean, bias));
  if (!rms && l.op->getNumResults() == 3) {
    l.out.push_back(normStat(l, 1, mean, axes));
    l.out.push_back(normStat(l, 2, inv, axes));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Shape computations: Shape, Size, ConstantOfShape, Range
//===----------------------------------------------------------------------===//

LogicalResult lower(onnx::ShapeOp op, Lowerer &l) {
  Value x = l.in[0];
  int64_t r = l.rankOf(x);
  auto norm = [&](int64_t v) {
    return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r);
  };
  int64_t start = norm((int64_t)op.getStart());
  int64_t end = norm(op.getEnd() ? (int64_t)*op.getEnd() : r);
  RankedTensorType rt = l.resultType();
  if (end <= start)
    return l.done(arith::ConstantOp::create(
        l.b, DenseElementsAttr::get(rt, ArrayRef<Attribute>{})));
  SmallVector<Value> elems;
  for (int64_t i = start; i < end; ++i) {
    OpFoldResult d = l.dim(x, i);
    if (auto c = getConstantIntValue(d))
      elems.push_back(scalar(l.b, l.b.getI64Type(), (double)*c));
    else
      elems.push_back(
          arith::IndexCastOp::create(l.b, l.b.getI64Type(), l.val(d)));
  }
  return l.done(tensor::FromElementsOp::create(l.b, rt, elems));
}

LogicalResult lower(onnx::SizeOp op, Lowerer &l) {
  Value n = arith::IndexCastOp::create(l.b, l.b.getI64Type(),
                                       l.val(l.numel(l.in[0])));
  return l.done(tensor::FromElementsOp::create(l.b, l.resultType(), n));
}

LogicalResult lower(onnx::ConstantOfShapeOp op, Lowerer &l) {
  RankedTensorType rt = l.resultType();
  TypedAttr v = scalarAttr(l.b, rt.getElementType(), 0);
  if (auto attr = op.getValueAttr()) {
    auto dense = dyn_cast<DenseElementsAttr>(attr);
    if (!dense || dense.getNumElements() != 1)
      return l.fail("value is not a one-element dense tensor");
    v = cast<TypedAttr>(*dense.value_begin<Attribute>());
    if (v.getType() != rt.getElementType())
      return l.fail("value of another element type than the result");
  }
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < rt.getRank(); ++i)
    sizes.push_back(rt.isDynamicDim(i) ? l.elementIndex(l.in[0], i)
                                       : l.idx(rt.getDimSize(i)));
  return l.done(l.filled(rt, sizes, v));
}

LogicalResult lower(onnx::RangeOp op, Lowerer &l) {
  RankedTensorType rt = l.resultType();
  Type e = rt.getElementType();
  ImplicitLocOpBuilder &b = l.b;
  Value start = l.element(l.in[0], 0), limit = l.element(l.in[1], 0),
        delta = l.element(l.in[2], 0);
  // n = max(ceil((limit - start) / delta), 0), the quotient in f64 as
  // onnxruntime computes it.
  Value n;
  if (isFloat(e)) {
    Type f64 = b.getF64Type();
    Value d = convert(b, arith::SubFOp::create(b, limit, start), f64);
    Value q = arith::DivFOp::create(b, d, convert(b, delta, f64));
    n = arith::FPToSIOp::create(b, b.getI64Type(), math::CeilOp::create(b, q));
  } else {
    Value q = arith::CeilDivSIOp::create(
        b, arith::SubIOp::create(b, limit, start), delta);
    n = convert(b, q, b.getI64Type());
  }
  n = arith::MaxSIOp::create(b, n, scalar(b, b.getI64Type(), 0));
  OpFoldResult size = OpFoldResult(
      arith::IndexCastOp::create(b, b.getIndexType(), n).getResult());
  return l.done(
      l.generic(rt, l.sizesOf(rt, {size}), {}, {},
                [&](ImplicitLocOpBuilder &ib, ValueRange) {
                  Value i = arith::IndexCastOp::create(
                      ib, ib.getI64Type(), linalg::IndexOp::create(ib, 0));
                  if (isFloat(e)) { // in f32 for narrower floats
                    Type w = accType(e);
                    Value iv = convert(ib, i, w);
                    Value d = convert(ib, delta, w);
                    return convert(
                        ib,
                        arith::AddFOp::create(ib, convert(ib, start, w),
                                              arith::MulFOp::create(ib, iv, d)),
                        e);
                  }
                  Value iv = convert(ib, i, e);
                  return (Value)arith::AddIOp::create(
                      ib, start, arith::MulIOp::create(ib, iv, delta));
                }));
}

//===----------------------------------------------------------------------===//
// Data movement: Reshape, Flatten, (Un)Squeeze, Transpose, Concat, Slice,
// Split, Expand, Gather, Tile, Trilu
//===----------------------------------------------------------------------===//

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

LogicalResult lower(onnx::ReshapeOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType st = l.typeOf(x), rt = l.resultType();
  if (st.hasStaticShape() && rt.hasStaticShape())
    return l.done(l.reshapeStatic(x, rt));
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
  return l.done(l.reshapeDynamic(x, rt, reshapeSizes(op, l)));
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
      return l.done(
          reshapeTo(l, x, rt, keptSizes(l.b, flag, inDims, rt.getRank())));
    }
    for (int64_t a : *axes)
      drop[a] = true;
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

LogicalResult lower(onnx::ConcatOp op, Lowerer &l) {
  RankedTensorType rt = l.resultType();
  auto axis = normAxis((int64_t)op.getAxis(), rt.getRank());
  if (!axis)
    return l.fail("axis out of range");
  SmallVector<Value> ins; // operands empty along the axis add nothing
  for (Value v : l.in)
    if (l.typeOf(v).getDimSize(*axis) != 0)
      ins.push_back(v);
  if (ins.empty())
    ins.push_back(l.in[0]);
  if (ins.size() == 1)
    return l.done(l.castTo(ins[0], rt));
  return l.done(l.castTo(tensor::ConcatOp::create(l.b, *axis, ins), rt));
}

/// [start, end) of a Slice with step `step` along a dim of size `d`, as an
/// offset and a size (steps > 0).
std::pair<OpFoldResult, OpFoldResult> sliceRange(Lowerer &l, OpFoldResult d,
                                                 int64_t start, int64_t end,
                                                 int64_t step) {
  auto norm = [&](int64_t v) {
    return v < 0 ? l.max(l.add(d, l.idx(v)), l.idx(0)) : l.min(l.idx(v), d);
  };
  OpFoldResult s = norm(start), e = norm(end);
  OpFoldResult n = l.ceilDiv(l.max(l.sub(e, s), l.idx(0)), l.idx(step));
  return {s, n};
}

/// Slice with starts/ends/axes/steps read at run time, or negative steps:
/// per dim, the start and step of the entry whose axis names it (0 and 1
/// if none) and the end, clamped as the ONNX spec says; the result is a
/// generic reading x[start + i * step] along each dim.
LogicalResult lowerSliceGeneral(onnx::SliceOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  int64_t r = l.rankOf(x);
  RankedTensorType st = l.typeOf(l.in[1]);
  if (st.getRank() != 1 || st.isDynamicDim(0))
    return l.fail("starts of unknown length");
  int64_t n = st.getDimSize(0);
  ImplicitLocOpBuilder &b = l.b;
  using P = arith::CmpIPredicate;
  SmallVector<Value> dims, start, end, step;
  for (int64_t d = 0; d < r; ++d) {
    dims.push_back(l.val(l.dim(x, d)));
    start.push_back(cidx(b, 0));
    end.push_back(dims[d]);
    step.push_back(cidx(b, 1));
  }
  for (int64_t i = 0; i < n; ++i) {
    Value ci = cidx(b, i);
    Value a = l.in[3] ? normAxisValue(b, indexAt(b, l.in[3], ci), r) : ci;
    Value si = indexAt(b, l.in[1], ci), ei = indexAt(b, l.in[2], ci);
    Value pi = l.in[4] ? indexAt(b, l.in[4], ci) : cidx(b, 1);
    for (int64_t d = 0; d < r; ++d) {
      Value is = arith::CmpIOp::create(b, P::eq, a, cidx(b, d));
      start[d] = arith::SelectOp::create(b, is, si, start[d]);
      end[d] = arith::SelectOp::create(b, is, ei, end[d]);
      step[d] = arith::SelectOp::create(b, is, pi, step[d]);
    }
  }
  auto clamp = [&](Value v, Value lo, Value hi) {
    return arith::MinSIOp::create(b, arith::MaxSIOp::create(b, v, lo), hi);
  };
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < r; ++d) {
    Value D = dims[d], zero = cidx(b, 0);
    Value pos = arith::CmpIOp::create(b, P::sgt, step[d], zero);
    auto wrap = [&](Value v) {
      Value neg = arith::CmpIOp::create(b, P::slt, v, zero);
      return arith::SelectOp::create(b, neg, arith::AddIOp::create(b, v, D), v);
    };
    Value dm1 = arith::SubIOp::create(b, D, cidx(b, 1));
    Value s = wrap(start[d]), e = wrap(end[d]);
    s = arith::SelectOp::create(b, pos, clamp(s, zero, D), clamp(s, zero, dm1));
    e = arith::SelectOp::create(b, pos, clamp(e, zero, D),
                                clamp(e, cidx(b, -1), dm1));
    // count = ceil((e - s) / step), at least 0 (for both signs of step)
    Value q =
        arith::CeilDivSIOp::create(b, arith::SubIOp::create(b, e, s), step[d]);
    sizes.push_back(
        OpFoldResult(arith::MaxSIOp::create(b, q, zero).getResult()));
    start[d] = s;
  }
  return l.done(
      l.generic(rt, l.sizesOf(rt, sizes), {}, {},
                [&](ImplicitLocOpBuilder &ib, ValueRange) {
                  SmallVector<Value> at;
                  for (int64_t d = 0; d < r; ++d)
                    at.push_back(arith::AddIOp::create(
                        ib, start[d],
                        arith::MulIOp::create(
                            ib, linalg::IndexOp::create(ib, d), step[d])));
                  return tensor::ExtractOp::create(ib, x, at);
                }));
}

LogicalResult lower(onnx::SliceOp op, Lowerer &l) {
  Value x = l.in[0];
  int64_t r = l.rankOf(x);
  auto starts = onnx::getConstantInts(op.getStarts());
  auto ends = onnx::getConstantInts(op.getEnds());
  if (!starts || !ends || starts->size() != ends->size())
    return lowerSliceGeneral(op, l);
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  for (size_t i = 0; i < starts->size(); ++i)
    axes.push_back(i);
  if (l.in[3]) {
    auto a = constantAxes(op.getAxes(), r);
    if (!a || a->size() != starts->size())
      return lowerSliceGeneral(op, l);
    axes = *a;
  }
  if (l.in[4]) {
    auto s = onnx::getConstantInts(op.getSteps());
    if (!s || s->size() != starts->size())
      return lowerSliceGeneral(op, l);
    steps = *s;
  }
  SmallVector<OpFoldResult> offsets(r, l.idx(0)), sizes = l.dims(x),
                                                  strides(r, l.idx(1));
  for (auto [a, s, e, st] : llvm::zip(axes, *starts, *ends, steps)) {
    if (st <= 0)
      return lowerSliceGeneral(op, l);
    auto [off, n] = sliceRange(l, l.dim(x, a), s, e, st);
    if (isConstantIntValue(n, 0)) // empty: any offset in bounds
      off = l.idx(0);
    offsets[a] = off, sizes[a] = n, strides[a] = l.idx(st);
  }
  if (llvm::is_contained(l.resultType().getShape(), 0)) // nothing to read
    return l.done(l.empty(l.resultType(), sizes));
  Value v = tensor::ExtractSliceOp::create(l.b, x, offsets, sizes, strides);
  return l.done(l.castTo(v, l.resultType()));
}

LogicalResult lower(onnx::SplitOp op, Lowerer &l) {
  Value x = l.in[0];
  auto ax = normAxis((int64_t)op.getAxis(), l.rankOf(x));
  if (!ax)
    return l.fail("axis out of range");
  int64_t r = l.rankOf(x), axis = *ax, n = op->getNumResults();
  OpFoldResult d = l.dim(x, axis);
  SmallVector<OpFoldResult> parts;
  if (l.in[1]) {
    auto split = onnx::getConstantInts(op.getSplit());
    RankedTensorType st = l.typeOf(l.in[1]);
    if (split && (int64_t)split->size() != n)
      return l.fail("split sizes do not match the outputs");
    if (!split && (st.getRank() != 1 || st.getDimSize(0) != n))
      return l.fail("a run-time split of another length than the outputs");
    for (int64_t i = 0; i < n; ++i) // sizes read at run time if need be
      parts.push_back(split ? l.idx((*split)[i]) : l.elementIndex(l.in[1], i));
  } else { // equal parts of ceil(d / n), the last one smaller
    OpFoldResult chunk = l.ceilDiv(d, l.idx(n));
    for (int64_t i = 0; i < n; ++i)
      parts.push_back(i + 1 < n ? chunk : l.sub(d, l.mul(chunk, l.idx(n - 1))));
  }
  SmallVector<OpFoldResult> offsets(r, l.idx(0)), sizes = l.dims(x),
                                                  strides(r, l.idx(1));
  for (int64_t i = 0; i < n; ++i) {
    sizes[axis] = parts[i];
    SmallVector<OpFoldResult> at(offsets);
    if (isConstantIntValue(parts[i], 0)) // empty: any offset in bounds
      at[axis] = l.idx(0);
    RankedTensorType ri = l.resultType(i);
    Value v =
        llvm::is_contained(ri.getShape(), 0) // nothing to read
            ? l.empty(ri, sizes)
            : (Value)tensor::ExtractSliceOp::create(l.b, x, at, sizes, strides);
    l.out.push_back(l.castTo(v, ri));
    offsets[axis] = l.add(offsets[axis], parts[i]);
  }
  return success();
}

LogicalResult lower(onnx::ExpandOp op, Lowerer &l) {
  Value x = l.in[0], shape = l.in[1];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank(), rx = l.rankOf(x);
  RankedTensorType st = l.typeOf(shape);
  if (st.getRank() != 1 || st.isDynamicDim(0))
    return l.fail("a shape operand of unknown length");
  int64_t m = st.getDimSize(0);
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < r; ++d) {
    if (!rt.isDynamicDim(d)) {
      sizes.push_back(l.idx(rt.getDimSize(d)));
      continue;
    }
    // shape[d] unless it is 1, then x's dim: one of the two is 1 or they
    // are equal (a 0 against a 1 stays 0).
    OpFoldResult s = d >= r - m ? l.elementIndex(shape, d - (r - m)) : l.idx(1);
    if (d >= r - rx)
      s = l.unlessOne(s, l.dim(x, d - (r - rx)));
    sizes.push_back(s);
  }
  Value xb = l.broadcastOperand(x, rt, sizes);
  return l.done(
      l.generic(rt, sizes, {xb}, {l.broadcastMap(l.typeOf(x), rt.getShape())},
                [](ImplicitLocOpBuilder &, ValueRange a) { return a[0]; }));
}

/// An index read from a Gather's indices: negative ones count from the end.
Value gatherIndex(ImplicitLocOpBuilder &b, Value i, Value size) {
  i = arith::IndexCastOp::create(b, b.getIndexType(), i);
  Value neg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, i,
                                    arith::ConstantIndexOp::create(b, 0));
  return arith::SelectOp::create(b, neg, arith::AddIOp::create(b, i, size), i);
}

LogicalResult lower(onnx::GatherOp op, Lowerer &l) {
  Value data = l.in[0], indices = l.in[1];
  int64_t r = l.rankOf(data), q = l.rankOf(indices);
  auto ax = normAxis((int64_t)op.getAxis(), r);
  if (!ax)
    return l.fail("axis out of range");
  int64_t axis = *ax;
  RankedTensorType rt = l.resultType();
  Value axisDim = l.val(l.dim(data, axis));
  if (r == 1 && q == 0) { // one element of a vector (of a shape, mostly)
    Value i = gatherIndex(l.b, l.element(indices, 0), axisDim);
    Value v = tensor::ExtractOp::create(l.b, data, i);
    return l.done(tensor::FromElementsOp::create(l.b, rt, v));
  }
  SmallVector<OpFoldResult> sizes;
  for (int64_t j = 0; j < axis; ++j)
    sizes.push_back(l.dim(data, j));
  for (int64_t j = 0; j < q; ++j)
    sizes.push_back(l.dim(indices, j));
  for (int64_t j = axis + 1; j < r; ++j)
    sizes.push_back(l.dim(data, j));
  SmallVector<AffineExpr> ie;
  for (int64_t j = 0; j < q; ++j)
    ie.push_back(l.b.getAffineDimExpr(axis + j));
  AffineMap im = AffineMap::get(rt.getRank(), 0, ie, l.b.getContext());
  return l.done(l.generic(
      rt, sizes, {indices}, {im}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value i = gatherIndex(b, a[0], axisDim);
        SmallVector<Value> at;
        for (int64_t j = 0; j < axis; ++j)
          at.push_back(linalg::IndexOp::create(b, j));
        at.push_back(i);
        for (int64_t j = axis + 1; j < r; ++j)
          at.push_back(linalg::IndexOp::create(b, j - 1 + q));
        return tensor::ExtractOp::create(b, data, at);
      }));
}

LogicalResult lower(onnx::TileOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  SmallVector<OpFoldResult> sizes;
  SmallVector<Value> xDims;
  for (int64_t d = 0; d < rt.getRank(); ++d) {
    xDims.push_back(l.val(l.dim(x, d)));
    sizes.push_back(rt.isDynamicDim(d)
                        ? l.mul(l.dim(x, d), l.elementIndex(l.in[1], d))
                        : l.idx(rt.getDimSize(d)));
  }
  return l.done(
      l.generic(rt, sizes, {}, {}, [&](ImplicitLocOpBuilder &b, ValueRange) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rt.getRank(); ++d)
          at.push_back(arith::RemUIOp::create(b, linalg::IndexOp::create(b, d),
                                              xDims[d]));
        return tensor::ExtractOp::create(b, x, at);
      }));
}

LogicalResult lower(onnx::TriluOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank();
  if (r < 2)
    return l.fail("input of rank < 2");
  Value k = l.in[1] ? l.element(l.in[1], 0) : scalar(l.b, l.b.getI64Type(), 0);
  bool upper = op.getUpper();
  Type e = rt.getElementType();
  return l.done(
      l.elementwise(rt, {x}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        auto i64 = [&](int64_t d) {
          return arith::IndexCastOp::create(b, b.getI64Type(),
                                            linalg::IndexOp::create(b, d));
        };
        Value diff = arith::SubIOp::create(b, i64(r - 1), i64(r - 2));
        Value keep = arith::CmpIOp::create(
            b, upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle,
            diff, k);
        return arith::SelectOp::create(b, keep, a[0], scalar(b, e, 0));
      }));
}

/// RotaryEmbedding (opset 23): an element-wise generic over X ([B, H, S, D],
/// or [B, S, H * D] with num_heads). Element d < rotary_dim of a head pairs
/// with d +- rotary_dim/2 (halves) or d ^ 1 (interleaved), both rotated by
/// the angle of pair j: y = cos_j x_d -+ sin_j x_partner (minus for the
/// first of the pair); cos/sin are cache[position_ids[b, s], j], or
/// cache[b, s, j] without position_ids; d >= rotary_dim is copied. In f32
/// for narrower floats.
LogicalResult lower(onnx::RotaryEmbeddingOp op, Lowerer &l) {
  Value x = l.in[0], cosC = l.in[1], sinC = l.in[2], pos = l.in[3];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank();
  if (r != 3 && r != 4)
    return l.fail("an input of rank other than 3 or 4");
  int64_t heads = op.getNumHeads() ? (int64_t)*op.getNumHeads() : 0;
  if (r == 3 && heads <= 0)
    return l.fail("a 3-D input without num_heads");
  if (pos ? l.rankOf(pos) != 2 || l.rankOf(cosC) != 2 || l.rankOf(sinC) != 2
          : l.rankOf(cosC) != 3 || l.rankOf(sinC) != 3)
    return l.fail("caches or position_ids of unexpected ranks");
  ImplicitLocOpBuilder &b = l.b;
  using P = arith::CmpIPredicate;
  Value D = r == 4
                ? l.val(l.dim(x, 3))
                : arith::DivUIOp::create(b, l.val(l.dim(x, 2)), cidx(b, heads));
  int64_t rdim = (int64_t)op.getRotaryEmbeddingDim();
  Value rd = rdim > 0 ? cidx(b, rdim) : D;
  Value half = arith::DivUIOp::create(b, rd, cidx(b, 2));
  bool inter = op.getInterleaved() != 0;
  Type e = rt.getElementType(), acc = accType(e);
  return l.done(
      l.elementwise(rt, {x}, [&](ImplicitLocOpBuilder &ib, ValueRange a) {
        SmallVector<Value> at;
        for (int64_t i = 0; i < r; ++i)
          at.push_back(linalg::IndexOp::create(ib, i));
        Value bi = at[0], si = at[r == 4 ? 2 : 1], c = at[r - 1];
        // d within the head; the channel of its head's element 0
        Value d = r == 4 ? c : arith::RemUIOp::create(ib, c, D);
        Value base = arith::SubIOp::create(ib, c, d);
        Value rot = arith::CmpIOp::create(ib, P::ult, d, rd);
        Value first, j, partner;
        if (inter) {
          Value odd = arith::AndIOp::create(ib, d, cidx(ib, 1));
          first = arith::CmpIOp::create(ib, P::eq, odd, cidx(ib, 0));
          j = arith::DivUIOp::create(ib, d, cidx(ib, 2));
          partner = arith::XOrIOp::create(ib, d, cidx(ib, 1));
        } else {
          first = arith::CmpIOp::create(ib, P::ult, d, half);
          j = arith::SelectOp::create(ib, first, d,
                                      arith::SubIOp::create(ib, d, half));
          partner = arith::SelectOp::create(
              ib, first, arith::AddIOp::create(ib, d, half), j);
        }
        // Outside the rotated part: any in-bounds index, the value unused.
        j = arith::SelectOp::create(ib, rot, j, cidx(ib, 0));
        partner = arith::SelectOp::create(ib, rot, partner, d);
        SmallVector<Value> pat(at);
        pat[r - 1] = arith::AddIOp::create(ib, base, partner);
        Value xp = tensor::ExtractOp::create(ib, x, pat);
        auto cache = [&](Value t) -> Value {
          if (pos) {
            Value p = arith::IndexCastOp::create(
                ib, ib.getIndexType(),
                tensor::ExtractOp::create(ib, pos, ValueRange{bi, si}));
            return tensor::ExtractOp::create(ib, t, ValueRange{p, j});
          }
          return tensor::ExtractOp::create(ib, t, ValueRange{bi, si, j});
        };
        Value cv = convert(ib, cache(cosC), acc);
        Value sv = convert(ib, cache(sinC), acc);
        Value xv = convert(ib, a[0], acc);
        Value sx = arith::MulFOp::create(ib, sv, convert(ib, xp, acc));
        Value cx = arith::MulFOp::create(ib, cv, xv);
        Value y = arith::SelectOp::create(ib, first,
                                          arith::SubFOp::create(ib, cx, sx),
                                          arith::AddFOp::create(ib, cx, sx));
        return convert(ib, arith::SelectOp::create(ib, rot, y, xv), e);
      }));
}

/// [B, S, H * D] as [B, H, S, D] (the heads of a 3-D Attention input).
Value splitHeads(Lowerer &l, Value x, int64_t heads) {
  RankedTensorType t = l.typeOf(x);
  int64_t hid = t.getDimSize(2);
  int64_t d = hid == ShapedType::kDynamic ? ShapedType::kDynamic : hid / heads;
  auto t4 = RankedTensorType::get({t.getDimSize(0), t.getDimSize(1), heads, d},
                                  t.getElementType());
  OpFoldResult dd = l.divTrunc(l.dim(x, 2), l.idx(heads));
  Value e = tensor::ExpandShapeOp::create(
      l.b, t4, x, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}},
      SmallVector<OpFoldResult>{l.dim(x, 0), l.dim(x, 1), l.idx(heads), dd});
  SmallVector<OpFoldResult> sizes{l.dim(e, 0), l.idx(heads), l.dim(e, 1), dd};
  auto tt = RankedTensorType::get({t.getDimSize(0), heads, t.getDimSize(1), d},
                                  t.getElementType());
  return linalg::TransposeOp::create(l.b, e, l.empty(tt, sizes),
                                     ArrayRef<int64_t>{0, 2, 1, 3})
      .getResult()[0];
}

/// ONNX Attention-23/24 in the forms raising leaves (KV cache, softcap,
/// qk_matmul_output, nonpad_kv_seqlen, ...), as the ONNX reference computes
/// it: K, V = concat(past, new) (the present outputs); scores = scale *
/// Q K^T in f32 (or f64), query head h reading KV head h / (Hq / Hkv);
/// softcap; + the mask (bool: -inf where false; padded with -inf where
/// shorter than the keys), the causal bias (-inf where j > past + i) and
/// the padding of nonpad_kv_seqlen; softmax over the keys; Y = P V.
LogicalResult lower(onnx::AttentionOp op, Lowerer &l) {
  Value q = l.in[0], k = l.in[1], v = l.in[2], mask = l.in[3];
  Value pastK = l.in[4], pastV = l.in[5], nonpad = l.in[6];
  ImplicitLocOpBuilder &b = l.b;
  bool packed = l.rankOf(q) == 3;
  if (packed != (l.rankOf(k) == 3) || packed != (l.rankOf(v) == 3) ||
      (!packed && l.rankOf(q) != 4))
    return l.fail("Q, K, V not all 3-D or all 4-D");
  if (packed) {
    if (!op.getQNumHeads() || !op.getKvNumHeads() || *op.getQNumHeads() <= 0 ||
        *op.getKvNumHeads() <= 0)
      return l.fail("3-D inputs without q_num_heads and kv_num_heads");
    q = splitHeads(l, q, *op.getQNumHeads());
    k = splitHeads(l, k, *op.getKvNumHeads());
    v = splitHeads(l, v, *op.getKvNumHeads());
  }
  if (pastK)
    k = tensor::ConcatOp::create(b, 2, ValueRange{pastK, k});
  if (pastV)
    v = tensor::ConcatOp::create(b, 2, ValueRange{pastV, v});
  RankedTensorType qt = l.typeOf(q), kt = l.typeOf(k), vt = l.typeOf(v);
  int64_t hq = qt.getDimSize(1), hkv = kt.getDimSize(1);
  if (hq == ShapedType::kDynamic || hkv == ShapedType::kDynamic ||
      vt.getDimSize(1) != hkv || hq % hkv)
    return l.fail("head counts unknown or not a multiple of the KV heads'");
  int64_t reps = hq / hkv;
  double scale;
  if (op.getScale()) {
    scale = op.getScale()->convertToDouble();
  } else {
    if (qt.isDynamicDim(3))
      return l.fail("no scale and a head size unknown at compile time");
    scale = 1.0 / std::sqrt((double)qt.getDimSize(3));
  }
  Type e = qt.getElementType(), acc = accType(e);
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
  // scores [B, Hq, Sq, Skv] over the loops (b, h, i, j, d)
  OpFoldResult skv = l.dim(k, 2);
  SmallVector<OpFoldResult> ssizes{l.dim(q, 0), l.idx(hq), l.dim(q, 2), skv};
  auto st = RankedTensorType::get(
      {qt.getDimSize(0), hq, qt.getDimSize(2), kt.getDimSize(2)}, acc);
  Value scores = contract(
      l, st, l.sizesOf(st, ssizes), {q, k},
      {AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx),
       AffineMap::get(5, 0, {d(0), d(1).floorDiv(reps), d(3), d(4)}, ctx)},
      5, true);
  double softcap = op.getSoftcap().convertToDouble();
  int64_t mode = (int64_t)op.getQkMatmulOutputMode();
  // Past length: the causal diagonal moves right by it.
  OpFoldResult past = pastK ? l.dim(pastK, 2) : l.idx(0);
  Value pastV_ = l.val(past);
  Value maskLen = mask ? l.val(l.dim(mask, l.rankOf(mask) - 1)) : Value();
  bool causal = op.getIsCausal() != 0;
  auto inf = [&](ImplicitLocOpBuilder &ib, bool negative) {
    return arith::ConstantOp::create(
        ib, ib.getFloatAttr(
                acc, APFloat::getInf(cast<FloatType>(acc).getFloatSemantics(),
                                     negative)));
  };
  // scale, then softcap (qk_matmul_output modes 0 and 1 return this)
  Value capped = l.elementwise(
      st, {scores}, [&](ImplicitLocOpBuilder &ib, ValueRange a) -> Value {
        Value x = arith::MulFOp::create(ib, a[0], scalar(ib, acc, scale));
        if (!(softcap > 0))
          return x;
        Value c = scalar(ib, acc, softcap);
        Value t = math::TanhOp::create(ib, arith::DivFOp::create(ib, x, c));
        return arith::MulFOp::create(ib, t, c);
      });
  Value biased =
      l.elementwise(st, {capped}, [&](ImplicitLocOpBuilder &ib, ValueRange a) {
        Value sc = a[0];
        SmallVector<Value> at;
        for (int64_t i = 0; i < 4; ++i)
          at.push_back(linalg::IndexOp::create(ib, i));
        Value ninf = inf(ib, true), zero = scalar(ib, acc, 0);
        Value bias = zero;
        if (mask) {
          RankedTensorType mt = l.typeOf(mask);
          int64_t mr = mt.getRank();
          SmallVector<Value> mi;
          for (int64_t m = 0; m < mr; ++m) {
            int64_t dd = 4 - mr + m;
            mi.push_back(mt.getDimSize(m) == 1 ? cidx(ib, 0) : at[dd]);
          }
          Value in = arith::CmpIOp::create(ib, arith::CmpIPredicate::ult, at[3],
                                           maskLen);
          mi.back() = arith::SelectOp::create(ib, in, at[3], cidx(ib, 0));
          Value mv = tensor::ExtractOp::create(ib, mask, mi);
          Value mb = mt.getElementType().isInteger(1)
                         ? (Value)arith::SelectOp::create(ib, mv, zero, ninf)
                         : convert(ib, mv, acc);
          bias = arith::SelectOp::create(ib, in, mb, ninf);
        }
        if (causal) {
          Value lim = arith::AddIOp::create(ib, at[2], pastV_);
          Value after =
              arith::CmpIOp::create(ib, arith::CmpIPredicate::ugt, at[3], lim);
          bias = arith::SelectOp::create(
              ib, after, arith::AddFOp::create(ib, bias, ninf), bias);
        }
        if (nonpad) {
          Value n = arith::IndexCastOp::create(
              ib, ib.getIndexType(),
              tensor::ExtractOp::create(ib, nonpad, ValueRange{at[0]}));
          Value padded =
              arith::CmpIOp::create(ib, arith::CmpIPredicate::sge, at[3], n);
          bias = arith::SelectOp::create(
              ib, padded, arith::AddFOp::create(ib, bias, ninf), bias);
        }
        return arith::AddFOp::create(ib, sc, bias);
      });
  // softmax over the keys
  Value mx = l.reduce(
      biased, {3}, acc, extremeAttr(b, acc, true), {},
      [&](ImplicitLocOpBuilder &ib, Value a, Value x, ValueRange) -> Value {
        return arith::MaximumFOp::create(ib, a, x);
      });
  Value sum = l.reduce(biased, {3}, acc, scalarAttr(b, acc, 0), {mx},
                       [&](ImplicitLocOpBuilder &ib, Value a, Value x,
                           ValueRange rows) -> Value {
                         Value ex = math::ExpOp::create(
                             ib, arith::SubFOp::create(ib, x, rows[0]));
                         return arith::AddFOp::create(ib, a, ex);
                       });
  AffineMap row = l.dropMap(4, {3});
  Value probs = l.generic(
      st, l.sizesOf(st, ssizes), {biased, mx, sum},
      {b.getMultiDimIdentityMap(4), row, row},
      [&](ImplicitLocOpBuilder &ib, ValueRange a) -> Value {
        Value ex =
            math::ExpOp::create(ib, arith::SubFOp::create(ib, a[0], a[1]));
        // A fully masked row (max -inf) attends to nothing: zeros, as
        // onnxruntime (the reference's 0/0 would give NaN).
        Value none = arith::CmpFOp::create(ib, arith::CmpFPredicate::OEQ, a[1],
                                           inf(ib, true));
        return arith::SelectOp::create(ib, none, scalar(ib, acc, 0),
                                       arith::DivFOp::create(ib, ex, a[2]));
      });
  // Y [B, Hq, Sq, Dv] over the loops (b, h, i, e, j)
  auto yt = RankedTensorType::get(
      {qt.getDimSize(0), hq, qt.getDimSize(2), vt.getDimSize(3)}, e);
  SmallVector<OpFoldResult> ysizes{l.dim(q, 0), l.idx(hq), l.dim(q, 2),
                                   l.dim(v, 3)};
  Value y = contract(
      l, yt, l.sizesOf(yt, ysizes), {probs, v},
      {AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx),
       AffineMap::get(5, 0, {d(0), d(1).floorDiv(reps), d(4), d(3)}, ctx)},
      5);
  if (packed) { // back to [B, Sq, Hq * Dv]
    auto tt = RankedTensorType::get(
        {qt.getDimSize(0), qt.getDimSize(2), hq, vt.getDimSize(3)}, e);
    SmallVector<OpFoldResult> tsizes{ysizes[0], ysizes[2], ysizes[1],
                                     ysizes[3]};
    y = linalg::TransposeOp::create(b, y, l.empty(tt, tsizes),
                                    ArrayRef<int64_t>{0, 2, 1, 3})
            .getResult()[0];
    y = tensor::CollapseShapeOp::create(
        b, y, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  }
  l.out.push_back(l.castTo(y, l.resultType(0)));
  l.out.push_back(l.resultType(1) ? l.castTo(k, l.resultType(1)) : Value());
  l.out.push_back(l.resultType(2) ? l.castTo(v, l.resultType(2)) : Value());
  if (RankedTensorType ot = l.resultType(3)) {
    Value qk = mode == 2 ? biased : mode == 3 ? probs : capped;
    l.out.push_back(
        l.castTo(l.elementwise(st.clone(ot.getElementType()), {qk},
                               [&](ImplicitLocOpBuilder &ib, ValueRange a) {
                                 return convert(ib, a[0], ot.getElementType());
                               }),
                 ot));
  } else {
    l.out.push_back(Value());
  }
  return success();
}

/// CumSum along an axis that may come at run time: each output element
/// sums its run of the axis ([0, i] forward, [i, n) reversed, without i
/// itself when exclusive) in accType, in a loop of the generic's body.
LogicalResult lower(onnx::CumSumOp op, Lowerer &l) {
  Value x = l.in[0];
  RankedTensorType rt = l.resultType();
  int64_t r = rt.getRank();
  if (r == 0)
    return l.fail("a scalar input");
  if (l.typeOf(l.in[1]).getNumElements() != 1)
    return l.fail("an axis that is not one element");
  ImplicitLocOpBuilder &b = l.b;
  Value a =
      arith::IndexCastOp::create(b, b.getIndexType(), l.element(l.in[1], 0));
  if (auto c = onnx::getConstantInts(op.getAxis()); c && !normAxis((*c)[0], r))
    return l.fail("axis out of range");
  Value zero = arith::ConstantIndexOp::create(b, 0),
        one = arith::ConstantIndexOp::create(b, 1);
  Value neg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, a, zero);
  a = arith::SelectOp::create(
      b, neg, arith::AddIOp::create(b, a, arith::ConstantIndexOp::create(b, r)),
      a);
  SmallVector<Value> isAxis;
  Value len = zero;
  for (int64_t d = 0; d < r; ++d) {
    isAxis.push_back(arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq, a, arith::ConstantIndexOp::create(b, d)));
    len = arith::SelectOp::create(b, isAxis[d], l.val(l.dim(x, d)), len);
  }
  bool excl = op.getExclusive() != 0, rev = op.getReverse() != 0;
  Type e = rt.getElementType(), acc = accType(e);
  return l.done(l.generic(
      rt, l.dims(x), {}, {}, [&](ImplicitLocOpBuilder &ib, ValueRange) {
        SmallVector<Value> oi;
        Value pos = zero;
        for (int64_t d = 0; d < r; ++d) {
          oi.push_back(linalg::IndexOp::create(ib, d));
          pos = arith::SelectOp::create(ib, isAxis[d], oi[d], pos);
        }
        Value next = arith::AddIOp::create(ib, pos, one);
        Value lo = rev ? (excl ? next : pos) : zero;
        Value hi = rev ? len : (excl ? pos : next);
        auto loop = scf::ForOp::create(
            ib, lo, hi, one, ValueRange{scalar(ib, acc, 0)},
            [&](OpBuilder &nb, Location loc, Value t, ValueRange s) {
              ImplicitLocOpBuilder jb(loc, nb);
              SmallVector<Value> at;
              for (int64_t d = 0; d < r; ++d)
                at.push_back(arith::SelectOp::create(jb, isAxis[d], t, oi[d]));
              Value v = tensor::ExtractOp::create(jb, x, at);
              scf::YieldOp::create(jb, addOf(jb, s[0], convert(jb, v, acc)));
            });
        return convert(ib, loop.getResult(0), e);
      }));
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult lowerConstant(onnx::ConstantOp op, Lowerer &l) {
  auto attr = dyn_cast<TypedAttr>(op.getValue());
  if (!attr)
    return l.fail("constant value is not a typed attribute");
  return l.done(arith::ConstantOp::create(l.b, attr));
}

/// Whether every operand and result is a ranked tensor (or none).
LogicalResult checkTypes(Lowerer &l) {
  auto ok = [&](Type t) {
    if (isa<NoneType>(t))
      return true;
    return isa<RankedTensorType>(t);
  };
  for (Type t : l.op->getOperandTypes())
    if (!ok(t))
      return l.fail("an unranked tensor");
  for (Type t : l.op->getResultTypes())
    if (!ok(t))
      return l.fail("an unranked tensor");
  return success();
}

LogicalResult dispatch(Operation *op, Lowerer &l) {
  using namespace onnx;
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ConstantOp o) { return lowerConstant(o, l); })
      .Case<SqrtOp, ReciprocalOp, NegOp, AbsOp, ExpOp, LogOp, SigmoidOp, TanhOp,
            ReluOp, ErfOp, CosOp, SinOp, FloorOp, CeilOp, SoftplusOp, GeluOp,
            LeakyReluOp, HardSigmoidOp, SignOp>(
          [&](Operation *o) { return lowerUnary(o, l); })
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, SumOp>(
          [&](Operation *o) { return lowerBinary(o, l); })
      .Case<EqualOp, LessOp, LessOrEqualOp, GreaterOp, GreaterOrEqualOp>(
          [&](Operation *o) { return lowerCompare(o, l); })
      .Case<AndOp, OrOp, NotOp>(
          [&](Operation *o) { return lowerLogical(o, l); })
      .Case([&](IdentityOp) { return l.done(l.in[0]); })
      .Case([&](SoftmaxOp o) {
        return lowerSoftmax((int64_t)o.getAxis(), false, l);
      })
      .Case([&](LogSoftmaxOp o) {
        return lowerSoftmax((int64_t)o.getAxis(), true, l);
      })
      .Case([&](LayerNormalizationOp o) {
        return lowerNorm((int64_t)o.getAxis(), o.getEpsilon().convertToDouble(),
                         false, l);
      })
      .Case([&](RMSNormalizationOp o) {
        return lowerNorm((int64_t)o.getAxis(), o.getEpsilon().convertToDouble(),
                         true, l);
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
            ReduceL2Op>([&](auto o) { return lowerReduce(o, l); })
      .Case<WhereOp, CastOp, CastLikeOp, IsInfOp, IsNaNOp, DropoutOp, ClipOp,
            MatMulOp, GemmOp, ConvOp, EinsumOp, CumSumOp, RotaryEmbeddingOp,
            AttentionOp, ShapeOp, SizeOp, ConstantOfShapeOp, RangeOp, ReshapeOp,
            FlattenOp, UnsqueezeOp, SqueezeOp, TransposeOp, ConcatOp, SliceOp,
            SplitOp, ExpandOp, GatherOp, TileOp, TriluOp>(
          [&](auto o) { return lower(o, l); })
      .Default([&](Operation *) { return l.fail("no lowering to linalg"); });
}

LogicalResult lowerScan(onnx::ScanOp op, Lowerer &l, IRMapping &map);

/// Lowers `op` with its operands looked up in `map`; maps its results. The
/// lowering goes before `op`, or at the end of `into` when given (the body
/// of a loop that a Scan became).
LogicalResult lowerOp(Operation *op, IRMapping &map, Block *into = nullptr) {
  if (isa<onnx::NoValueOp>(op)) // its users read a null operand
    return success();
  Lowerer l(op);
  if (into)
    l.b.setInsertionPointToEnd(into);
  if (op->getNumRegions() && !isa<onnx::ScanOp>(op))
    return l.fail("an op with regions");
  if (failed(checkTypes(l)))
    return failure();
  for (Value v : op->getOperands())
    l.in.push_back(isa<NoneType>(v.getType()) ? Value()
                                              : map.lookupOrDefault(v));
  if (auto scan = dyn_cast<onnx::ScanOp>(op)) {
    if (failed(lowerScan(scan, l, map)))
      return failure();
  } else if (failed(dispatch(op, l))) {
    return failure();
  }
  if (l.out.size() != op->getNumResults())
    return l.fail("produced the wrong number of results");
  for (auto [r, v] : llvm::zip(op->getResults(), l.out)) {
    if (!v)
      continue;
    if (v.getType() != r.getType()) {
      if (!tensor::CastOp::areCastCompatible(v.getType(), r.getType()))
        return l.fail("produced a value of another type");
      v = tensor::CastOp::create(l.b, r.getType(), v);
    }
    map.map(r, v);
  }
  return success();
}

/// Scan as an scf.for over the sequence (the first scan input's length
/// along its axis): the states and one tensor per scan output are the
/// loop's iteration arguments; each step extracts its slice of every scan
/// input (from the end for a reverse direction), lowers the body's onnx
/// ops in the loop body (values the body captures from the enclosing
/// graph are the lowered ones), and inserts each scan output's slice at
/// the step's position. Scan outputs must have static sizes apart from
/// their scan axis.
LogicalResult lowerScan(onnx::ScanOp op, Lowerer &l, IRMapping &map) {
  int64_t nIn = l.in.size(), nScan = op.getNumScanInputs();
  int64_t nState = nIn - nScan, nOut = op.getNumResults();
  if (nScan < 1 || nState < 0 || nOut < nState)
    return l.fail("num_scan_inputs does not fit the inputs");
  auto at = [](std::optional<ArrayRef<int64_t>> a, int64_t j) -> int64_t {
    return a && j < (int64_t)a->size() ? (*a)[j] : 0;
  };
  ImplicitLocOpBuilder &b = l.b;
  for (Value v : l.in)
    if (!v)
      return l.fail("a missing input");
  SmallVector<int64_t> inAxes, outAxes;
  for (int64_t j = 0; j < nScan; ++j) {
    auto a = normAxis(at(op.getScanInputAxes(), j), l.rankOf(l.in[nState + j]));
    if (!a)
      return l.fail("a scan input axis out of range");
    inAxes.push_back(*a);
  }
  OpFoldResult len = l.dim(l.in[nState], inAxes[0]);
  SmallVector<Value> inits(l.in.begin(), l.in.begin() + nState);
  SmallVector<RankedTensorType> stepTypes;
  for (int64_t j = 0; j < nOut - nState; ++j) {
    RankedTensorType t = l.resultType(nState + j);
    if (!t)
      return l.fail("an unranked scan output");
    auto a = normAxis(at(op.getScanOutputAxes(), j), t.getRank());
    if (!a)
      return l.fail("a scan output axis out of range");
    outAxes.push_back(*a);
    SmallVector<OpFoldResult> sizes;
    SmallVector<int64_t> step;
    for (int64_t i = 0; i < t.getRank(); ++i) {
      if (i == *a) {
        sizes.push_back(len);
        continue;
      }
      if (t.isDynamicDim(i))
        return l.fail("a scan output with a dynamic size besides its scan "
                      "axis");
      sizes.push_back(l.idx(t.getDimSize(i)));
      step.push_back(t.getDimSize(i));
    }
    stepTypes.push_back(RankedTensorType::get(step, t.getElementType()));
    inits.push_back(l.empty(t, sizes));
  }
  Block &body = op.getBody().front();
  auto yield = cast<onnx::YieldOp>(body.getTerminator());
  Value zero = arith::ConstantIndexOp::create(b, 0),
        one = arith::ConstantIndexOp::create(b, 1), n = l.val(len);
  Value last = arith::SubIOp::create(b, n, one);
  bool ok = true;
  auto loop = scf::ForOp::create(
      b, zero, n, one, inits,
      [&](OpBuilder &nb, Location loc, Value iv, ValueRange args) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value back = arith::SubIOp::create(ib, last, iv);
        auto pos = [&](std::optional<ArrayRef<int64_t>> dirs, int64_t j) {
          return at(dirs, j) ? back : iv;
        };
        auto cast = [&](Value v, Type t) {
          return v.getType() == t ? v : tensor::CastOp::create(ib, t, v);
        };
        for (int64_t i = 0; i < nState; ++i)
          map.map(body.getArgument(i),
                  cast(args[i], body.getArgument(i).getType()));
        for (int64_t j = 0; j < nScan; ++j) {
          Value src = l.in[nState + j];
          RankedTensorType st = l.typeOf(src);
          int64_t a = inAxes[j];
          SmallVector<OpFoldResult> offs(st.getRank(), ib.getIndexAttr(0)),
              sizes, strides(st.getRank(), ib.getIndexAttr(1));
          SmallVector<int64_t> shape;
          for (int64_t i = 0; i < st.getRank(); ++i) {
            if (i == a) {
              sizes.push_back(ib.getIndexAttr(1));
              continue;
            }
            sizes.push_back(
                st.isDynamicDim(i)
                    ? OpFoldResult(
                          tensor::DimOp::create(ib, src, i).getResult())
                    : ib.getIndexAttr(st.getDimSize(i)));
            shape.push_back(st.getDimSize(i));
          }
          offs[a] = pos(op.getScanInputDirections(), j);
          Value slice = tensor::ExtractSliceOp::create(
              ib, RankedTensorType::get(shape, st.getElementType()), src, offs,
              sizes, strides);
          Value arg = body.getArgument(nState + j);
          map.map(arg, cast(slice, arg.getType()));
        }
        for (Operation &o : body.without_terminator())
          if (ok && failed(lowerOp(&o, map, ib.getInsertionBlock())))
            ok = false;
        SmallVector<Value> results;
        for (auto [i, v] : llvm::enumerate(yield.getOperands())) {
          Value lv = map.lookupOrDefault(v);
          if (!ok || !lv || !isa<RankedTensorType>(lv.getType())) {
            ok = false;
            results.push_back(args[i]);
            continue;
          }
          if ((int64_t)i < nState) {
            // Copied into the iteration argument: the loop's state then
            // bufferizes in place (a yield equivalent to its argument).
            results.push_back(linalg::CopyOp::create(
                                  ib, ValueRange{cast(lv, args[i].getType())},
                                  ValueRange{args[i]})
                                  .getResult(0));
            continue;
          }
          int64_t j = i - nState, a = outAxes[j];
          RankedTensorType ot = l.typeOf(args[i]);
          SmallVector<OpFoldResult> offs(ot.getRank(), ib.getIndexAttr(0)),
              sizes, strides(ot.getRank(), ib.getIndexAttr(1));
          for (int64_t d = 0; d < ot.getRank(); ++d)
            sizes.push_back(d == a ? ib.getIndexAttr(1)
                                   : ib.getIndexAttr(ot.getDimSize(d)));
          offs[a] = pos(op.getScanOutputDirections(), j);
          if (!tensor::CastOp::areCastCompatible(lv.getType(), stepTypes[j])) {
            ok = false;
            results.push_back(args[i]);
            continue;
          }
          results.push_back(tensor::InsertSliceOp::create(
              ib, cast(lv, stepTypes[j]), args[i], offs, sizes, strides));
        }
        scf::YieldOp::create(ib, results);
      });
  if (!ok)
    return l.fail("its body could not be lowered");
  for (Value r : loop.getResults())
    l.out.push_back(r);
  return success();
}

/// Replaces the uses of the lowered onnx ops and erases them, users first.
LogicalResult replaceAndErase(ArrayRef<Operation *> ops, IRMapping &map) {
  for (Operation *op : ops)
    for (Value r : op->getResults())
      if (Value v = map.lookupOrNull(r))
        r.replaceAllUsesWith(v);
  for (Operation *op : llvm::reverse(ops)) {
    if (!op->use_empty())
      return op->emitOpError() << "cannot be lowered: a result without a "
                                  "lowering is still used";
    op->erase();
  }
  return success();
}

struct ConvertOnnxToLinalgPass
    : conversion::impl::ConvertOnnxToLinalgBase<ConvertOnnxToLinalgPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    ConvertOnnxToLinalgBase::getDependentDialects(registry);
    registry.insert<scf::SCFDialect>(); // loops of run-time axes
  }

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<onnx::OnnxDialect>(op->getDialect()))
        ops.push_back(op);
      // A Scan's body is lowered into the loop the Scan becomes.
      return isa<onnx::ScanOp>(op) ? WalkResult::skip() : WalkResult::advance();
    });
    IRMapping map;
    for (Operation *op : ops)
      if (failed(lowerOp(op, map)))
        return signalPassFailure();
    if (failed(replaceAndErase(ops, map)))
      return signalPassFailure();
    conversion::foldProvableBroadcastChecks(getOperation());
    eraseDeadOps();
  }

  /// Erases the pure ops left without uses: shape computations whose
  /// consumers were lowered without them (a Reshape that became an
  /// expand_shape of tensor.dim sizes no longer reads its Concat).
  void eraseDeadOps() {
    for (Block &block : getOperation().getBody())
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
        if (isOpTriviallyDead(&op))
          op.erase();
  }
};
} // namespace
