//===- Diagnostics.h - ONNX-located error messages --------------*- C++ -*-===//
//
// gatec prints diagnostics at an ONNX node's location
// (dialects/onnx/NodeLocation.h) as
//   model.onnx: node 'layer3/attn/MatMul_1' (MatMul, opset 17): <message>
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_COMPILER_DIAGNOSTICS_H
#define GATEC_COMPILER_DIAGNOSTICS_H

#include "dialects/onnx/NodeLocation.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include <string>

namespace gatec {

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
