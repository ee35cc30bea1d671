//===- Activations.h - the scalar maths of every activation -----*- C++ -*-===//
//
// The one place where the activations of gates, GLUs and ONNX ops are
// written as arith/math ops on a scalar: sigmoid, SiLU, GELU (erf and tanh
// forms), softplus, the G1-G5 gate activations and the GLU family. Every
// lowering and tiling pass builds them from here, in the type of their
// argument (f32 or f64 in the lowerings).
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_COMMON_ACTIVATIONS_H
#define GATEC_PASSES_COMMON_ACTIVATIONS_H

#include "dialects/gated/GatedDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include <cmath>

namespace gatec::common {

/// A float constant of z's type.
inline mlir::Value floatConstant(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Type t, double v) {
  // A splat for vector types (the activations also run on vectors).
  if (auto vt = mlir::dyn_cast<mlir::VectorType>(t))
    return mlir::arith::ConstantOp::create(
        b, loc,
        mlir::DenseElementsAttr::get(
            vt, mlir::FloatAttr::get(vt.getElementType(), v).getValue()));
  return mlir::arith::ConstantOp::create(b, loc, mlir::FloatAttr::get(t, v));
}

/// σ(z) = 1 / (1 + exp(−z)).
inline mlir::Value sigmoid(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value z) {
  using namespace mlir;
  Value one = floatConstant(b, loc, z.getType(), 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, z));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

/// SiLU (swish): z·σ(z).
inline mlir::Value silu(mlir::OpBuilder &b, mlir::Location loc, mlir::Value z) {
  return mlir::arith::MulFOp::create(b, loc, z, sigmoid(b, loc, z));
}

/// GELU: ½·z·(1 + erf(z/√2)), or with `tanhApprox` the tanh form
/// ½·z·(1 + tanh(√(2/π)·(z + 0.044715·z³))).
inline mlir::Value gelu(mlir::OpBuilder &b, mlir::Location loc, mlir::Value z,
                        bool tanhApprox) {
  using namespace mlir;
  Type t = z.getType();
  auto c = [&](double v) { return floatConstant(b, loc, t, v); };
  Value inner;
  if (tanhApprox) {
    Value z3 =
        arith::MulFOp::create(b, loc, z, arith::MulFOp::create(b, loc, z, z));
    Value s = arith::AddFOp::create(
        b, loc, z, arith::MulFOp::create(b, loc, c(0.044715), z3));
    inner = math::TanhOp::create(
        b, loc, arith::MulFOp::create(b, loc, c(std::sqrt(2.0 / M_PI)), s));
  } else {
    inner = math::ErfOp::create(
        b, loc, arith::MulFOp::create(b, loc, z, c(1.0 / std::sqrt(2.0))));
  }
  Value h = arith::MulFOp::create(b, loc, c(0.5), z);
  return arith::MulFOp::create(b, loc, h,
                               arith::AddFOp::create(b, loc, c(1.0), inner));
}

/// softplus(z) = log(1 + e^z), = z where e^z overflows the sum's precision.
inline mlir::Value softplus(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value z) {
  using namespace mlir;
  Value big = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, z,
                                    floatConstant(b, loc, z.getType(), 20.0));
  Value sp = math::Log1pOp::create(b, loc, math::ExpOp::create(b, loc, z));
  return arith::SelectOp::create(b, loc, big, z, sp);
}

/// The gate activation of G1-G5 (Qiu et al. 2025, section 3): sigmoid,
/// ns_sigmoid = 0.5 + 0.5·σ(z), silu = z·σ(z).
inline mlir::Value gateActivation(mlir::OpBuilder &b, mlir::Location loc,
                                  gated::GateActivation a, mlir::Value z) {
  using namespace mlir;
  Value s = sigmoid(b, loc, z);
  switch (a) {
  case gated::GateActivation::sigmoid:
    return s;
  case gated::GateActivation::ns_sigmoid: {
    Value half = floatConstant(b, loc, z.getType(), 0.5);
    return arith::AddFOp::create(b, loc, half,
                                 arith::MulFOp::create(b, loc, half, s));
  }
  case gated::GateActivation::silu:
    return arith::MulFOp::create(b, loc, z, s);
  }
  return s;
}

/// The activation of a GLU-family gate (act(xW) ⊙ xV): sigmoid (GLU),
/// identity (bilinear), relu (ReGLU), gelu / gelu_tanh (GEGLU), silu
/// (SwiGLU).
inline mlir::Value gluActivation(mlir::OpBuilder &b, mlir::Location loc,
                                 gated::GluActivation a, mlir::Value z) {
  using namespace mlir;
  switch (a) {
  case gated::GluActivation::sigmoid:
    return sigmoid(b, loc, z);
  case gated::GluActivation::identity:
    return z;
  case gated::GluActivation::relu:
    return arith::MaximumFOp::create(b, loc, z,
                                     floatConstant(b, loc, z.getType(), 0.0));
  case gated::GluActivation::gelu:
    return gelu(b, loc, z, /*tanhApprox=*/false);
  case gated::GluActivation::gelu_tanh:
    return gelu(b, loc, z, /*tanhApprox=*/true);
  case gated::GluActivation::silu:
    return silu(b, loc, z);
  }
  return z;
}

} // namespace gatec::common

#endif
