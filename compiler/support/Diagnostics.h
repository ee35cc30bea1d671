//===- Diagnostics.h - ONNX-located error messages --------------*- C++ -*-===//
//
// Every onnx op carries the location of its ONNX node:
//   fused<"MatMul, opset 17">["layer3/attn/MatMul_1"("model.onnx":0:0)]
// (metadata: op type and opset; name: the node's name; file: the model).
// gatec prints diagnostics at such a location as
//   model.onnx: node 'layer3/attn/MatMul_1' (MatMul, opset 17): <message>
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_COMPILER_DIAGNOSTICS_H
#define GATEC_COMPILER_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include <string>

namespace gatec {

/// The location of an ONNX node `name` of type `opType` in `file`. An
/// initializer has opType "initializer" and opset 0.
mlir::Location makeNodeLoc(mlir::MLIRContext *ctx, llvm::StringRef file,
                           llvm::StringRef name, llvm::StringRef opType,
                           int64_t opset);

/// "file: node 'name' (OpType, opset N)" for a node location, "file" for a
/// plain file location, or the printed location otherwise.
std::string describeLocation(mlir::Location loc);

/// "node 'name' (OpType, opset N)" without the file, or describeLocation.
std::string describeNode(mlir::Location loc);

/// Prints every diagnostic to stderr as "<where>: <severity>: <message>"
/// (severity omitted for errors), with attached notes indented.
class OnnxDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  explicit OnnxDiagnosticHandler(mlir::MLIRContext *ctx);
  /// Number of errors reported so far.
  unsigned numErrors() const { return errors; }

private:
  unsigned errors = 0;
};

} // namespace gatec

#endif
