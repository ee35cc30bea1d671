//===- Broadcast.h - ONNX multidirectional broadcasting ---------*- C++ -*-===//
//
// Element-wise ops broadcast their operands (numpy / ONNX rules). A static
// size-1 dim is read at index 0 through the indexing map. A dynamic dim may
// be 1 at run time while the output's is N, which no indexing map can say:
// such an operand is broadcast at run time (an scf.if that yields either the
// operand itself or a copy broadcast along that dim), and sizes that are
// neither equal nor 1 fail a cf.assert instead of reading out of bounds.
// Where the sizes are provably equal (static, or derived from the same
// sizes), nothing is added.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_COMMON_BROADCAST_H
#define GATEC_PASSES_COMMON_BROADCAST_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"

namespace gatec::common {

/// The indexing map that reads an operand of type `t` broadcast (numpy /
/// ONNX rules) to `outShape`: missing leading dims are dropped, size-1 dims
/// read index 0, other dims follow the loop of the same output dim (so a
/// dynamic dim must have the output's size: see broadcastAtRunTime).
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

/// Whether dim `i` of the tensor `v` provably has the size `size` at run
/// time: equal static sizes, sizes passed on unchanged from the same size
/// (destination-style results, tensor.empty/dim, casts, reshapes, slices),
/// or function-argument dims with the same ONNX dim_param (the runtime
/// checks that those are equal).
bool provablySameSize(mlir::Value v, int64_t i, mlir::OpFoldResult size);

/// The sizes of the ONNX multidirectional broadcast of `ins` to `out`: a
/// static dim as is; a dynamic one the size of the operands' dims that are
/// not statically 1, folded pairwise as (a == 1 ? b : a) where they are not
/// provably equal (sizes are equal or 1; this keeps a 0 against a 1).
llvm::SmallVector<mlir::OpFoldResult> broadcastSizes(mlir::OpBuilder &b,
                                                     mlir::Location loc,
                                                     mlir::RankedTensorType out,
                                                     mlir::ValueRange ins);

/// The broadcast of the sizes of `dims` (each a tensor and a dim of it):
/// their size unless statically 1; pairwise (a == 1 ? b : a) where they
/// are not provably equal.
mlir::OpFoldResult
broadcastSize(mlir::OpBuilder &b, mlir::Location loc,
              llvm::ArrayRef<std::pair<mlir::Value, int64_t>> dims);

/// As broadcastAtRunTime, where dim i of `in` is read along the output dim
/// `outDims[i]`, or not broadcast where that is negative (MatMul's matrix
/// dims).
mlir::Value broadcastDimsAtRunTime(mlir::OpBuilder &b, mlir::Location loc,
                                   mlir::Value in,
                                   llvm::ArrayRef<int64_t> outDims,
                                   llvm::ArrayRef<int64_t> outShape,
                                   llvm::ArrayRef<mlir::OpFoldResult> sizes);

/// `in` made readable through broadcastMap against an output of shape
/// `outShape` and sizes `sizes`: each dynamic dim of `in` not provably of
/// the output's size is checked (cf.assert: 1 or the output's size) and,
/// where it is 1 and the output's is not, broadcast at run time. Returns
/// `in` itself when nothing needs checking.
mlir::Value broadcastAtRunTime(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value in, llvm::ArrayRef<int64_t> outShape,
                               llvm::ArrayRef<mlir::OpFoldResult> sizes);

/// A kernel's run-time broadcast of dim `i` of `in` against `size`, for
/// kernels that read their operands in place (no copy): a cf.assert that
/// the dim is 1 or `size` (naming the op at `loc`), and the i1 "it is 1",
/// with which the kernel picks index 0 (a stride of 0) at run time.
mlir::Value checkBroadcastDim(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value in, int64_t i,
                              mlir::OpFoldResult size);

/// A cf.assert that dim `i` of `in` is `size` at run time (a contraction
/// dim, which does not broadcast), unless that is provable.
void checkEqualDim(mlir::OpBuilder &b, mlir::Location loc, mlir::Value in,
                   int64_t i, mlir::OpFoldResult size);

/// Removes the run-time broadcasts (checks and scf.ifs) under `root` whose
/// sizes have become provably equal: those built while an operand was
/// still an unlowered op (gated ops lower before onnx ops), which would
/// otherwise keep element-wise fusion from crossing the scf.if.
void foldProvableBroadcastChecks(mlir::Operation *root);

} // namespace gatec::common

#endif
