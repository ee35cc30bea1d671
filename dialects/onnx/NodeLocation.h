//===- NodeLocation.h - the ONNX node an op comes from ----------*- C++ -*-===//
//
// Every onnx op carries the location of its ONNX node:
//   fused<"MatMul, opset 17">["layer3/attn/MatMul_1"("model.onnx":0:0)]
// (metadata: op type and opset; name: the node's name; file: the model).
// An initializer's location has the op type "initializer". This is the one
// place that reads and writes such locations: the diagnostics, the run-time
// checks' messages and the weight accounting all go through it.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_DIALECTS_ONNX_NODELOCATION_H
#define GATEC_DIALECTS_ONNX_NODELOCATION_H

#include "mlir/IR/Location.h"
#include "llvm/ADT/SetVector.h"
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

/// "node 'name'", "file:line:col" or "an unnamed op": where an op is, in
/// the message of a run-time check (compiled into the model).
std::string describeOp(mlir::Location loc);

/// Adds the names of the initializers recorded in `loc` to `names`.
void initializersIn(mlir::Location loc,
                    llvm::SetVector<llvm::StringRef> &names);

} // namespace gatec

#endif
