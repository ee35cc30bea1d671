//===- ConstantValues.h - reading constant operands -------------*- C++ -*-===//
//
// Helpers that read the values of constant onnx operands: whole integer
// tensors (a Reshape's shape, Unsqueeze's axes) and partially known shape
// vectors as PyTorch exports them (Concat of Unsqueeze(Gather(Shape(x), i))
// and constants), where each element is a known integer or unknown.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_DIALECTS_ONNX_CONSTANTVALUES_H
#define GATEC_DIALECTS_ONNX_CONSTANTVALUES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"
#include <optional>

namespace gatec::onnx {

/// The elements attribute of a constant value (onnx.Constant), or null.
mlir::ElementsAttr getConstantAttr(mlir::Value v);

/// All elements of an integer constant (any integer width), or nullopt.
std::optional<llvm::SmallVector<int64_t>> getConstantInts(mlir::Value v);

/// All elements of a floating-point or integer constant as double, or nullopt.
std::optional<llvm::SmallVector<double>> getConstantDoubles(mlir::Value v);

/// Elements of a 1-D (or scalar) int64 value where known; unknown elements are
/// std::nullopt. Sees through Concat, Unsqueeze/Squeeze/Reshape of scalars,
/// Cast, Shape (static dims) and Gather(Shape(x), const). Returns nullopt if
/// not even the number of elements is known.
std::optional<llvm::SmallVector<std::optional<int64_t>>>
getPartialInts(mlir::Value v);

/// One element of a shape vector: a known integer, or dimension `dim` of
/// the tensor `src` (as read by onnx.Shape), or unknown.
struct DimExpr {
  std::optional<int64_t> value;
  mlir::Value src;
  int64_t dim = -1;
};

/// Like getPartialInts, with the elements read from onnx.Shape of a dynamic
/// dimension kept as symbols (src, dim).
std::optional<llvm::SmallVector<DimExpr>> getShapeDims(mlir::Value v);

/// Whether dimension i of a and dimension j of b are provably the same size:
/// both are traced back, through ops that carry a dimension unchanged
/// (element-wise ops, MatMul, Transpose, Reshape copies, ...), to the same
/// dimension of the same tensor.
bool sameDim(mlir::Value a, int64_t i, mlir::Value b, int64_t j);

} // namespace gatec::onnx

#endif
