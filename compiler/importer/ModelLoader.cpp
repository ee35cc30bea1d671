//===- ModelLoader.cpp - reading .onnx and .onnxtxt files -----------------===//
#include "compiler/importer/ImporterInternal.h"

#include "onnx/defs/parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include <algorithm>
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <stdexcept>
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
    // libonnx's parser recurses once per nested brace: bound the depth so
    // that a hostile file cannot overflow the stack.
    int depth = 0, maxDepth = 0;
    for (char c : (*buf)->getBuffer()) {
      if (c == '{' || c == '[' || c == '(' || c == '<')
        maxDepth = std::max(maxDepth, ++depth);
      else if (c == '}' || c == ']' || c == ')' || c == '>')
        --depth;
    }
    if (maxDepth > 200) {
      error = "cannot parse the ONNX text format: nesting deeper than 200";
      return false;
    }
    // The text format of onnx/defs/parser.h (onnx.ai/onnx/repo-docs/Syntax).
    // The parser throws on malformed numbers (std::stoll and friends); this
    // file is compiled with exceptions to turn those into messages.
    try {
      ::onnx::Status st =
          ::onnx::OnnxParser::Parse(model, (*buf)->getBufferStart());
      if (!st.IsOK()) {
        error = "cannot parse the ONNX text format: " + st.ErrorMessage();
        return false;
      }
    } catch (const std::exception &e) {
      error =
          std::string("cannot parse the ONNX text format: invalid literal (") +
          e.what() + ")";
      return false;
    } catch (...) {
      error = "cannot parse the ONNX text format";
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
