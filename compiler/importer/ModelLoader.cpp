//===- ModelLoader.cpp - reading .onnx and .onnxtxt files -----------------===//
#include "compiler/importer/ImporterInternal.h"

#include "onnx/defs/parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include <google/protobuf/io/coded_stream.h>

namespace gatec::importer {

bool loadModel(llvm::StringRef path, ::onnx::ModelProto &model,
               std::string &error) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/true);
  if (!buf) {
    error = "cannot read the model: " + buf.getError().message();
    return false;
  }
  llvm::StringRef bytes = (*buf)->getBuffer();
  if (path.ends_with(".onnxtxt") || path.ends_with(".txt")) {
    // The text format of onnx/defs/parser.h (onnx.ai/onnx/repo-docs/Syntax).
    ::onnx::Status st = ::onnx::OnnxParser::Parse(model, bytes.data());
    if (!st.IsOK()) {
      error = "cannot parse the ONNX text format: " + st.ErrorMessage();
      return false;
    }
    return true;
  }
  if (bytes.size() > (size_t)INT32_MAX) {
    error = "the protobuf is larger than 2 GiB; store the weights as "
            "external data";
    return false;
  }
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const uint8_t *>(bytes.data()), (int)bytes.size());
  in.SetTotalBytesLimit(INT32_MAX);
  if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    error = "not a valid ONNX protobuf (malformed or truncated file)";
    return false;
  }
  if (!model.has_graph()) {
    error = "the model has no graph (not an ONNX model, or truncated)";
    return false;
  }
  return true;
}

} // namespace gatec::importer
