//===- Matchers.h - helpers shared by the raising patterns ------*- C++ -*-===//
#ifndef GATEC_PASSES_GATED_MATCHERS_H
#define GATEC_PASSES_GATED_MATCHERS_H

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "mlir/IR/PatternMatch.h"
#include <optional>

namespace gatec::raise {

/// The op of type OpTy defining v, or null.
template <typename OpTy> OpTy def(mlir::Value v) {
  return v ? v.getDefiningOp<OpTy>() : OpTy();
}

/// The value of a one-element constant (any rank, float or integer).
std::optional<double> scalarConstant(mlir::Value v);

/// True if v is a constant tensor (onnx.Constant).
bool isConstant(mlir::Value v);

/// v without the onnx.Cast ops that do not change its type.
mlir::Value stripNoopCasts(mlir::Value v);

/// True if `axes` is a constant naming only the last axis of a rank-`rank`
/// tensor.
bool isLastAxis(mlir::Value axes, int64_t rank);

/// The factors of a product tree of onnx.Mul ops rooted at v (v itself when
/// it is no Mul). Inner Muls with other users are kept as factors; the Muls
/// flattened are recorded in `muls`.
void collectFactors(mlir::Value v, llvm::SmallVectorImpl<mlir::Value> &factors,
                    llvm::SmallVectorImpl<mlir::Operation *> *muls = nullptr);

/// A location fusing those of `ops` (their nodes and initializers).
mlir::Location fuseLocs(mlir::MLIRContext *ctx,
                        llvm::ArrayRef<mlir::Operation *> ops);

/// Adds to `ops` the defining ops of all values between `root` and the
/// stop values (the matched subgraph), including constants they use.
void collectMatched(mlir::Value root, llvm::ArrayRef<mlir::Value> stops,
                    llvm::SmallVectorImpl<mlir::Operation *> &ops);

/// An onnx op created with inferred result types.
mlir::Value createOnnx(mlir::PatternRewriter &rewriter, mlir::Location loc,
                       llvm::StringRef opType, mlir::ValueRange operands,
                       llvm::ArrayRef<mlir::NamedAttribute> attrs = {});

/// onnx.Transpose of v with `perm`, composing with a Transpose defining v
/// (and returning its input when the composition is the identity).
mlir::Value transpose(mlir::PatternRewriter &rewriter, mlir::Location loc,
                      mlir::Value v, llvm::ArrayRef<int64_t> perm);

/// onnx.Reshape of v to `shape` (ONNX semantics: 0 copies, -1 infers).
mlir::Value reshape(mlir::PatternRewriter &rewriter, mlir::Location loc,
                    mlir::Value v, llvm::ArrayRef<int64_t> shape);

/// The permutation of an onnx.Transpose (explicit or the default reversal).
llvm::SmallVector<int64_t> permutationOf(onnx::TransposeOp op);

/// act(z) as Sigmoid(z), 0.5 + 0.5·Sigmoid(z) or z·Sigmoid(z), seeing
/// through reshapes of z or of the activation: returns z and sets `act`, or
/// null.
mlir::Value gateLogits(mlir::Value v, gated::GateActivation &act);

/// Whether a raised op verifies, without reporting its verifier's error: a
/// candidate that does not verify is a match that failed, not a diagnostic.
bool verifiesQuietly(mlir::Operation *op);

/// Whether a and b provably have the same shape at run time: each dim equal
/// and static, or dynamic in both and traced to the same dim
/// (onnx::sameDim). An element-wise op over them then broadcasts nothing,
/// so a raised op may read them at the same indices.
bool provablySameShape(mlir::Value a, mlir::Value b);

/// Static shape of v, or empty if unranked.
llvm::SmallVector<int64_t> shapeOf(mlir::Value v);

} // namespace gatec::raise

#endif
