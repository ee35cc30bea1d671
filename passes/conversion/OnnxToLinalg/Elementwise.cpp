//===- Elementwise.cpp - element-wise onnx ops ----------------------------===//
//
// The element-wise onnx ops as linalg.generic ops over their operands
// broadcast (ONNX multidirectional rules): the unary maths, Add ... Sum and
// Pow, Mod, the comparisons, And / Or / Not, Where, Cast / CastLike, IsInf,
// IsNaN, Dropout, Clip and SwiGLU, with the scalar maths of their bodies.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "passes/common/Activations.h"
#include "passes/common/Broadcast.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

namespace gatec::conversion::onnx_to_linalg {

//===----------------------------------------------------------------------===//
// Scalar maths (inside linalg bodies)
//===----------------------------------------------------------------------===//

namespace {

/// Applies `f` in f32 (or f64) to a float scalar, converting narrower types
/// there and back.
Value inWideFloat(ImplicitLocOpBuilder &b, Value x,
                  function_ref<Value(Value)> f) {
  Type t = x.getType();
  Type w = accType(t);
  return convert(b, f(convert(b, x, w)), t);
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
      .Case([&](onnx::SigmoidOp) { return common::sigmoid(b, b.getLoc(), x); })
      .Case([&](onnx::TanhOp) { return math::TanhOp::create(b, x); })
      .Case(
          [&](onnx::ReluOp) { return arith::MaximumFOp::create(b, x, c(0.0)); })
      .Case([&](onnx::ErfOp) { return math::ErfOp::create(b, x); })
      .Case([&](onnx::CosOp) { return math::CosOp::create(b, x); })
      .Case([&](onnx::SinOp) { return math::SinOp::create(b, x); })
      .Case([&](onnx::FloorOp) { return math::FloorOp::create(b, x); })
      .Case([&](onnx::CeilOp) { return math::CeilOp::create(b, x); })
      .Case(
          [&](onnx::SoftplusOp) { return common::softplus(b, b.getLoc(), x); })
      .Case([&](onnx::GeluOp g) {
        return common::gelu(b, b.getLoc(), x, g.getApproximate() == "tanh");
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

} // namespace

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

/// Integer Div and Mod. ONNX leaves a division by zero undefined and x86
/// traps on it (SIGFPE), as on INT_MIN / -1 and INT_MIN % -1: a divisor
/// read at run time is checked (a run-time error naming the node if any
/// element is 0) and divided through a safe copy (0 and -1 replaced by 1, so
/// no element can trap whatever path the check takes); x / -1 is the
/// wrapping negation (INT_MIN / -1 = INT_MIN, as numpy), x % -1 is 0. A
/// constant divisor holding 0 is a compile error; one without 0 or -1
/// divides as it is (no check). Mod with fmod = 1 is C's remainder (the
/// sign of x), with fmod = 0 Python's (the sign of y: a remainder of the
/// other sign than y has y added); unsigned integers have one remainder.
static LogicalResult lowerIntDivMod(Lowerer &l, bool mod, bool fmod) {
  RankedTensorType t = l.resultType();
  Type e = t.getElementType();
  bool u = isUnsignedInt(e);
  bool minusOne = !u, zero = true;
  StringRef what = mod ? "modulo" : "division";
  if (auto c = onnx::getConstantInts(l.op->getOperand(1))) {
    if (llvm::is_contained(*c, 0))
      return l.fail("integer " + what + " by zero (a constant divisor of 0)");
    zero = false;
    minusOne = !u && llvm::is_contained(*c, -1);
  }
  if (zero)
    l.checkAll(
        l.in[1],
        [&](ImplicitLocOpBuilder &b, Value y) -> Value {
          y = toSignless(b, y);
          return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, y,
                                       scalar(b, y.getType(), 0));
        },
        "gatec: integer " + what + " by zero in " + describeOp(l.op->getLoc()) +
            (mod ? " (Mod)" : " (Div)"),
        /*dataCheck=*/true); // the divisor 0 is replaced by 1 below
  return l.done(l.elementwise(
      t, {l.in[0], l.in[1]}, [&](ImplicitLocOpBuilder &b, ValueRange a) {
        Value x = toSignless(b, a[0]), y = toSignless(b, a[1]);
        Type it = x.getType();
        using P = arith::CmpIPredicate;
        auto divide = [&](Value d) -> Value {
          if (mod)
            return u ? (Value)arith::RemUIOp::create(b, x, d)
                     : (Value)arith::RemSIOp::create(b, x, d);
          return u ? (Value)arith::DivUIOp::create(b, x, d)
                   : (Value)arith::DivSIOp::create(b, x, d);
        };
        Value q;
        Value neg1;
        if (!zero && !minusOne) {
          q = divide(y);
        } else {
          Value one = scalar(b, it, 1);
          Value bad =
              zero ? (Value)arith::CmpIOp::create(b, P::eq, y, scalar(b, it, 0))
                   : Value();
          if (minusOne) {
            neg1 = arith::CmpIOp::create(b, P::eq, y, scalar(b, it, -1));
            bad = bad ? (Value)arith::OrIOp::create(b, bad, neg1) : neg1;
          }
          // x % 1 = 0 is x % -1 too.
          q = divide(arith::SelectOp::create(b, bad, one, y));
          if (minusOne && !mod)
            q = arith::SelectOp::create(
                b, neg1, arith::SubIOp::create(b, scalar(b, it, 0), x), q);
        }
        if (mod && !fmod && !u) {
          // |q| < |y|: q + y does not overflow when their signs differ.
          Value z = scalar(b, it, 0);
          Value differ =
              arith::XOrIOp::create(b, arith::CmpIOp::create(b, P::slt, q, z),
                                    arith::CmpIOp::create(b, P::slt, y, z));
          Value fix = arith::AndIOp::create(
              b, arith::CmpIOp::create(b, P::ne, q, z), differ);
          q = arith::SelectOp::create(b, fix, arith::AddIOp::create(b, q, y),
                                      q);
        }
        return castScalar(b, q, e);
      }));
}

/// Float Mod in f32 (or f64): fmod = 1 is C's fmod (exact); fmod = 0
/// (Mod-28) is Python's and numpy's, the sign of y: a remainder of the
/// other sign than y has y added, a zero one takes y's sign (x = -3, y =
/// inf gives inf; NaN where fmod gives NaN: x infinite, y 0 or NaN).
static Value floatMod(ImplicitLocOpBuilder &b, Value x, Value y, bool fmod) {
  return inWideFloat(b, x, [&](Value xw) -> Value {
    Value yw = convert(b, y, xw.getType());
    Value r = arith::RemFOp::create(b, xw, yw);
    if (fmod)
      return r;
    using P = arith::CmpFPredicate;
    Value z = scalar(b, xw.getType(), 0);
    Value differ =
        arith::XOrIOp::create(b, arith::CmpFOp::create(b, P::OLT, r, z),
                              arith::CmpFOp::create(b, P::OLT, yw, z));
    Value fix = arith::AndIOp::create(b, arith::CmpFOp::create(b, P::ONE, r, z),
                                      differ);
    r = arith::SelectOp::create(b, fix, arith::AddFOp::create(b, r, yw), r);
    Value isZero = arith::CmpFOp::create(b, P::OEQ, r, z);
    return arith::SelectOp::create(b, isZero,
                                   math::CopySignOp::create(b, r, yw), r);
  });
}

LogicalResult lower(onnx::ModOp op, Lowerer &l) {
  int64_t fmod = (int64_t)op.getFmod();
  if (fmod != 0 && fmod != 1)
    return l.fail("fmod = " + Twine(fmod) + " (0 or 1)");
  RankedTensorType t = l.resultType();
  if (!isFloat(t.getElementType()))
    return lowerIntDivMod(l, /*mod=*/true, fmod == 1);
  return l.done(l.elementwise(t, {l.in[0], l.in[1]},
                              [&](ImplicitLocOpBuilder &b, ValueRange a) {
                                return floatMod(b, a[0], a[1], fmod == 1);
                              }));
}

LogicalResult lowerBinary(Operation *op, Lowerer &l) {
  RankedTensorType t = l.resultType();
  if (isa<onnx::DivOp>(op) && !isFloat(t.getElementType()))
    return lowerIntDivMod(l, /*mod=*/false, /*fmod=*/false);
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

namespace {

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

} // namespace

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
        // An absent bound is the type's lowest / largest value (the spec's
        // numeric_limits defaults): for floats ±inf become ±FLT_MAX.
        auto largest = [&](bool negative) -> Value {
          auto ft = cast<FloatType>(x.getType());
          return arith::ConstantOp::create(
              b, FloatAttr::get(ft, APFloat::getLargest(ft.getFloatSemantics(),
                                                        negative)));
        };
        bool isFloat = isa<FloatType>(x.getType());
        if (hasMin)
          x = maxOf(b, x, a[1]);
        else if (isFloat)
          x = maxOf(b, x, largest(true));
        if (hasMax)
          x = minOf(b, x, a.back());
        else if (isFloat)
          x = minOf(b, x, largest(false));
        return x;
      }));
}

/// SwiGLU-28: Y = A * sigmoid(alpha * A) * B in f32 (or f64). A and B have
/// one shape (no broadcasting): dims not provably equal are checked at run
/// time, as a broadcast would return values onnxruntime refuses. RaiseGlu
/// turns the form with two projections and alpha = 1 into gated.glu.
LogicalResult lower(onnx::SwiGLUOp op, Lowerer &l) {
  Value a = l.in[0], bv = l.in[1];
  int64_t r = l.rankOf(a);
  if (l.rankOf(bv) != r)
    return l.fail("A and B of different ranks");
  Value ok;
  for (int64_t i = 0; i < r; ++i) {
    OpFoldResult da = l.dim(a, i);
    if (common::provablySameSize(bv, i, da))
      continue;
    auto ca = getConstantIntValue(da), cb = getConstantIntValue(l.dim(bv, i));
    if (ca && cb && *ca != *cb)
      return l.fail("A and B of different shapes");
    Value eq = arith::CmpIOp::create(l.b, arith::CmpIPredicate::eq, l.val(da),
                                     l.val(l.dim(bv, i)));
    ok = ok ? (Value)arith::AndIOp::create(l.b, ok, eq) : eq;
  }
  if (ok)
    cf::AssertOp::create(l.b, ok,
                         "gatec: A and B of different shapes in " +
                             describeOp(op->getLoc()) + " (SwiGLU)");
  double alpha = op.getAlpha().convertToDouble();
  return l.done(l.elementwise(
      l.resultType(), {a, bv}, [&](ImplicitLocOpBuilder &b, ValueRange x) {
        Type e = x[0].getType(), w = accType(e);
        Value av = convert(b, x[0], w), bw = convert(b, x[1], w);
        Value g = common::sigmoid(
            b, b.getLoc(), arith::MulFOp::create(b, av, scalar(b, w, alpha)));
        Value y = arith::MulFOp::create(b, arith::MulFOp::create(b, av, g), bw);
        return convert(b, y, e);
      }));
}

} // namespace gatec::conversion::onnx_to_linalg
