//===- BroadcastMap.h - numpy broadcasting as an indexing map ---*- C++ -*-===//
#ifndef GATEC_PASSES_CONVERSION_BROADCASTMAP_H
#define GATEC_PASSES_CONVERSION_BROADCASTMAP_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinTypes.h"

namespace gatec::conversion {

/// The indexing map that reads an operand of type `t` broadcast (numpy /
/// ONNX rules) to `outShape`: missing leading dims are dropped, size-1 dims
/// read index 0, other dims follow the loop of the same output dim.
inline mlir::AffineMap broadcastMap(mlir::MLIRContext *ctx, mlir::ShapedType t,
                                    llvm::ArrayRef<int64_t> outShape) {
  int64_t rank = outShape.size(), r = t.getRank();
  llvm::SmallVector<mlir::AffineExpr> exprs;
  for (int64_t i = 0; i < r; ++i) {
    int64_t d = rank - r + i;
    if (t.getDimSize(i) == 1 && outShape[d] != 1)
      exprs.push_back(mlir::getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(mlir::getAffineDimExpr(d, ctx));
  }
  return mlir::AffineMap::get(rank, 0, exprs, ctx);
}

} // namespace gatec::conversion

#endif
