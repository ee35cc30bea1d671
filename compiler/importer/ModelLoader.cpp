//===- ModelLoader.cpp - reading .onnx and .onnxtxt files -----------------===//
#include "compiler/importer/ImporterInternal.h"

#include "onnx/defs/parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <fcntl.h>
#include <unistd.h>

namespace gatec::importer {

bool loadModel(llvm::StringRef path, ::onnx::ModelProto &model,
               std::string &error) {
  if (path.ends_with(".onnxtxt") || path.ends_with(".txt")) {
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buf) {
      error = "cannot read the model: " + buf.getError().message();
      return false;
    }
    // The text format of onnx/defs/parser.h (onnx.ai/onnx/repo-docs/Syntax).
    ::onnx::Status st = ::onnx::OnnxParser::Parse(model, (*buf)->getBufferStart());
    if (!st.IsOK()) {
      error = "cannot parse the ONNX text format: " + st.ErrorMessage();
      return false;
    }
    return true;
  }
  // Stream the protobuf from the file: raw_data is copied once, into the
  // message, and the file is never held in memory besides.
  int fd = ::open(path.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read the model: " + std::string(strerror(errno));
    return false;
  }
  bool ok;
  {
    google::protobuf::io::FileInputStream raw(fd, 1 << 20);
    google::protobuf::io::CodedInputStream in(&raw);
    in.SetTotalBytesLimit(INT32_MAX);
    ok = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
    if (raw.GetErrno()) {
      error = "cannot read the model: " + std::string(strerror(raw.GetErrno()));
      ::close(fd);
      return false;
    }
  }
  ::close(fd);
  if (!ok) {
    error = "not a valid ONNX protobuf (malformed or truncated file, or "
            "larger than 2 GiB: store the weights as external data)";
    return false;
  }
  if (!model.has_graph()) {
    error = "the model has no graph (not an ONNX model, or truncated)";
    return false;
  }
  return true;
}

} // namespace gatec::importer
