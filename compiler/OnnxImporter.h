//===- OnnxImporter.h - ONNX model to the onnx dialect ----------*- C++ -*-===//
//
// Imports an ONNX model (binary .onnx protobuf or .onnxtxt text format) as
//   module { func.func @main_graph(<graph inputs>) -> (<graph outputs>) }
// of onnx ops, one per node, located at the node (see Diagnostics.h).
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_COMPILER_ONNXIMPORTER_H
#define GATEC_COMPILER_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace gatec {

/// The opsets of the default ONNX domain that gatec imports. Models of
/// opset 11 and 12 are accepted: the importer rewrites the older forms of
/// the ops it supports (Softmax-11's 2-D coercion, axes attributes) into
/// their opset-13+ form.
constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 28;

struct ImportOptions {
  /// Initializers with more elements than this are dense_resource blobs
  /// (not uniqued, bytes referenced in place); smaller ones are dense
  /// elements that fold.
  int64_t inlineElementLimit = 64;
  /// The most nodes that expanding the model's local functions may give (a
  /// call tree can grow exponentially: F_n calling F_{n-1} twice); more is
  /// an error.
  int64_t maxExpandedNodes = 500'000;
};

/// Imports the model at `path`. On error, emits a diagnostic located at the
/// model file or the offending node and returns null.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxModel(mlir::MLIRContext *ctx, llvm::StringRef path,
                const ImportOptions &opts = {});

} // namespace gatec

#endif
