//===- ImporterInternal.h - pieces of the ONNX importer ---------*- C++ -*-===//
#ifndef GATEC_COMPILER_IMPORTER_IMPORTERINTERNAL_H
#define GATEC_COMPILER_IMPORTER_IMPORTERINTERNAL_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "onnx/onnx_pb.h"
#include "llvm/ADT/StringMap.h"
#include <memory>
#include <string>

namespace llvm {
class MemoryBuffer;
}

namespace gatec::importer {

/// Reads a .onnx (binary protobuf) or .onnxtxt (ONNX text format) model.
/// On failure returns false with `error` set.
bool loadModel(llvm::StringRef path, ::onnx::ModelProto &model,
               std::string &error);

/// Replaces every call of a model-local function (model.functions) by the
/// function's body, recursively, in the main graph and in subgraphs.
/// Internal values are renamed "<call node name>/<value>", nodes likewise.
bool expandLocalFunctions(::onnx::ModelProto &model, std::string &error,
                          int64_t maxNodes);

/// MLIR element type of an ONNX TensorProto data type, or null.
mlir::Type elementTypeOf(mlir::MLIRContext *ctx, int32_t dataType);

/// Name of an ONNX data type (for messages).
std::string dataTypeName(int32_t dataType);

/// Converts TensorProtos to ElementsAttrs. Tensors with more than
/// `inlineLimit` elements become dense_resource blobs that own (raw_data,
/// moved out of the proto) or map (external data) their bytes; smaller ones
/// are dense elements. External data files are mapped once each.
class TensorImporter {
public:
  TensorImporter(mlir::MLIRContext *ctx, std::string modelDir,
                 int64_t inlineLimit)
      : ctx(ctx), modelDir(std::move(modelDir)), inlineLimit(inlineLimit) {}
  ~TensorImporter();

  /// On failure returns null with `error` set. May move raw_data out of t.
  mlir::ElementsAttr import(::onnx::TensorProto &t, std::string &error);

private:
  const llvm::MemoryBuffer *mapExternal(llvm::StringRef location,
                                        std::string &error);
  mlir::MLIRContext *ctx;
  std::string modelDir;
  int64_t inlineLimit;
  llvm::StringMap<std::shared_ptr<llvm::MemoryBuffer>> external;
};

} // namespace gatec::importer

#endif
