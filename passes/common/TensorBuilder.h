//===- TensorBuilder.h - linalg on tensors, one vocabulary ------*- C++ -*-===//
//
// The builder vocabulary every lowering and tiling pass writes linalg on
// tensors in: f32 and index constants, scalar casts to and from the f32
// compute type, tensor.dim / tensor.empty / linalg.fill, affine maps, and
// linalg.generic / linalg.map with one output whose body returns the value
// to yield. Passes derive their own builders from it (the flash-attention
// kernel's, the linear-attention loops', the gated lowerings') and add what
// only they need.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_COMMON_TENSORBUILDER_H
#define GATEC_PASSES_COMMON_TENSORBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"

namespace gatec::common {

/// A generic's body: the block's arguments (inputs, then the output) in,
/// the value to yield out.
using BodyFn =
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::ValueRange)>;

/// Builds linalg on tensors at `b`'s insertion point, at location `loc`.
/// Methods that take an `OpBuilder &nb` build inside a body (a generic's
/// region) with that body's builder.
struct TensorBuilder {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::MLIRContext *ctx;
  mlir::Type f32;

  TensorBuilder(mlir::OpBuilder &b, mlir::Location loc)
      : b(b), loc(loc), ctx(b.getContext()), f32(b.getF32Type()) {}

  /// An f32 constant.
  mlir::Value cst(mlir::OpBuilder &nb, double v) {
    return mlir::arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(v));
  }
  mlir::Value cst(double v) { return cst(b, v); }
  /// An index constant.
  mlir::Value index(int64_t v) {
    return mlir::arith::ConstantIndexOp::create(b, loc, v);
  }
  /// The size of dim i of the tensor t.
  mlir::Value dim(mlir::Value t, int64_t i) {
    return mlir::tensor::DimOp::create(b, loc, t, i);
  }

  /// A scalar to f32 (the compute type) / from f32 to the element type e.
  mlir::Value ext(mlir::OpBuilder &nb, mlir::Value v) {
    return v.getType() == f32 ? v
                              : mlir::arith::ExtFOp::create(nb, loc, f32, v);
  }
  mlir::Value trunc(mlir::OpBuilder &nb, mlir::Value v, mlir::Type e) {
    return v.getType() == e ? v : mlir::arith::TruncFOp::create(nb, loc, e, v);
  }

  /// Dim i of an affine map; a map of n dims onto exprs / onto the listed
  /// dims (-1: the constant 0).
  mlir::AffineExpr d(unsigned i) { return mlir::getAffineDimExpr(i, ctx); }
  mlir::AffineMap map(unsigned n, llvm::ArrayRef<mlir::AffineExpr> e) {
    return mlir::AffineMap::get(n, 0, e, ctx);
  }
  mlir::AffineMap dimMap(unsigned n, llvm::ArrayRef<int64_t> dims) {
    llvm::SmallVector<mlir::AffineExpr> e;
    for (int64_t i : dims)
      e.push_back(i < 0 ? mlir::getAffineConstantExpr(0, ctx) : d(i));
    return map(n, e);
  }
  /// n parallel iterators.
  llvm::SmallVector<mlir::utils::IteratorType> parallel(unsigned n) {
    return llvm::SmallVector<mlir::utils::IteratorType>(
        n, mlir::utils::IteratorType::parallel);
  }

  /// tensor.empty of `shape` with its dynamic sizes in order / of `sizes`.
  mlir::Value empty(llvm::ArrayRef<int64_t> shape, mlir::Type e,
                    mlir::ValueRange dyn = {}) {
    return mlir::tensor::EmptyOp::create(b, loc, shape, e, dyn);
  }
  mlir::Value empty(llvm::ArrayRef<mlir::OpFoldResult> sizes, mlir::Type e) {
    return mlir::tensor::EmptyOp::create(b, loc, sizes, e);
  }
  /// `init` filled with the f32 constant v.
  mlir::Value fill(mlir::Value init, double v) {
    mlir::Value c = cst(v);
    return mlir::linalg::FillOp::create(b, loc, mlir::ValueRange{c},
                                        mlir::ValueRange{init})
        .getResult(0);
  }

  /// linalg.generic with one output `init` (its map is the last of `maps`).
  mlir::Value generic(mlir::Value init, mlir::ValueRange ins,
                      llvm::ArrayRef<mlir::AffineMap> maps,
                      llvm::ArrayRef<mlir::utils::IteratorType> its,
                      BodyFn body) {
    return mlir::linalg::GenericOp::create(
               b, loc, mlir::TypeRange{init.getType()}, ins,
               mlir::ValueRange{init}, maps, its,
               [&](mlir::OpBuilder &nb, mlir::Location, mlir::ValueRange a) {
                 mlir::linalg::YieldOp::create(nb, loc,
                                               mlir::ValueRange{body(nb, a)});
               })
        .getResult(0);
  }
  /// linalg.map of `ins` into `init`.
  mlir::Value mapOp(mlir::Value init, mlir::ValueRange ins, BodyFn body) {
    return mlir::linalg::MapOp::create(
               b, loc, ins, init,
               [&](mlir::OpBuilder &nb, mlir::Location, mlir::ValueRange a) {
                 mlir::linalg::YieldOp::create(nb, loc,
                                               mlir::ValueRange{body(nb, a)});
               })
        ->getResult(0);
  }
};

} // namespace gatec::common

#endif
