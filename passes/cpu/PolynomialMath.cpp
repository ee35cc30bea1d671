//===- PolynomialMath.cpp - --polynomial-math -----------------------------===//
//
// exp, expm1 and tanh as polynomial approximations in arith ops (MLIR's
// math transforms), so that the loops of softmax, SiLU/sigmoid gates and
// GELU-tanh vectorize instead of calling libm once per element.
//
//===----------------------------------------------------------------------===//
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::cpu {
#define GEN_PASS_DEF_POLYNOMIALMATH
#include "passes/cpu/Passes.h.inc"
} // namespace gatec::cpu

using namespace mlir;

namespace {
struct PolynomialMathPass
    : gatec::cpu::impl::PolynomialMathBase<PolynomialMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    auto chosen = [](StringRef name) {
      return name == math::ExpOp::getOperationName() ||
             name == math::ExpM1Op::getOperationName() ||
             name == math::TanhOp::getOperationName() ||
             name == math::ErfOp::getOperationName();
    };
    // f16/bf16 operands are computed in f32 first.
    populateMathF32ExpansionPatterns(patterns, chosen);
    populateMathPolynomialApproximationPatterns(patterns, chosen);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
