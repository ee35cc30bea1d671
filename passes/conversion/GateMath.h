//===- GateMath.h - gate activations as arith/math ops ----------*- C++ -*-===//
#ifndef GATEC_PASSES_CONVERSION_GATEMATH_H
#define GATEC_PASSES_CONVERSION_GATEMATH_H

#include "dialects/gated/GatedDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace gatec::conversion {

/// σ(z) = 1 / (1 + exp(−z)), in the type of z (f32 in the lowerings).
inline mlir::Value sigmoid(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value z) {
  using namespace mlir;
  Value one = arith::ConstantOp::create(b, loc, FloatAttr::get(z.getType(), 1));
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, z));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
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
    Value half =
        arith::ConstantOp::create(b, loc, FloatAttr::get(z.getType(), 0.5));
    return arith::AddFOp::create(b, loc, half,
                                 arith::MulFOp::create(b, loc, half, s));
  }
  case gated::GateActivation::silu:
    return arith::MulFOp::create(b, loc, z, s);
  }
  return s;
}

} // namespace gatec::conversion

#endif
