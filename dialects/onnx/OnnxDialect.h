//===- OnnxDialect.h - the onnx import dialect ------------------*- C++ -*-===//
#ifndef GATEC_DIALECTS_ONNX_ONNXDIALECT_H
#define GATEC_DIALECTS_ONNX_ONNXDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/onnx/OnnxDialect.h.inc"
#include "dialects/onnx/OnnxInterfaces.h.inc"

namespace gatec::onnx {
/// Verifies that an op's declared result types are compatible with those its
/// ShapeInferenceOpInterface computes (used by every onnx op's verifier).
llvm::LogicalResult verifyInferredResultTypes(mlir::Operation *op);

/// Computes the inferred result types and replaces each declared result type
/// by the more precise of the two. Returns failure (with an error emitted) if
/// inference fails or the types are incompatible; sets `changed`.
llvm::LogicalResult refineResultTypes(mlir::Operation *op, bool &changed);
} // namespace gatec::onnx

#define GET_OP_CLASSES
#include "dialects/onnx/OnnxOps.h.inc"

#endif
