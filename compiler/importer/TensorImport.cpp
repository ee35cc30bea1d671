//===- TensorImport.cpp - ONNX TensorProto to MLIR attributes -------------===//
//
// Handles every initializer encoding of the ONNX IR spec (onnx.proto,
// TensorProto): raw_data, the typed repeated fields (float_data, int32_data,
// int64_data, double_data, uint64_data) and external data (data_location =
// EXTERNAL with location/offset/length relative to the model's directory).
//
//===----------------------------------------------------------------------===//
#include "compiler/importer/ImporterInternal.h"

#include "passes/common/MappedPages.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <cerrno>
#include <cstring>
#include <iterator>

using namespace mlir;
using ::onnx::TensorProto;

namespace gatec::importer {

Type elementTypeOf(MLIRContext *ctx, int32_t dt) {
  Builder b(ctx);
  switch (dt) {
  case TensorProto::FLOAT:
    return b.getF32Type();
  case TensorProto::DOUBLE:
    return b.getF64Type();
  case TensorProto::FLOAT16:
    return b.getF16Type();
  case TensorProto::BFLOAT16:
    return b.getBF16Type();
  case TensorProto::INT8:
    return b.getIntegerType(8);
  case TensorProto::INT16:
    return b.getIntegerType(16);
  case TensorProto::INT32:
    return b.getIntegerType(32);
  case TensorProto::INT64:
    return b.getIntegerType(64);
  case TensorProto::UINT8:
    return b.getIntegerType(8, false);
  case TensorProto::UINT16:
    return b.getIntegerType(16, false);
  case TensorProto::UINT32:
    return b.getIntegerType(32, false);
  case TensorProto::UINT64:
    return b.getIntegerType(64, false);
  case TensorProto::BOOL:
    return b.getI1Type();
  default:
    return {};
  }
}

std::string dataTypeName(int32_t dt) {
  if (TensorProto::DataType_IsValid(dt))
    return TensorProto::DataType_Name((TensorProto::DataType)dt);
  // Types newer than Debian's ONNX 1.12 proto (onnx.proto of 1.22).
  static const char *newer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",
      "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0", "UINT2",          "INT2"};
  if (dt >= 17 && dt < 17 + (int32_t)std::size(newer))
    return newer[dt - 17];
  return "data type " + std::to_string(dt);
}

TensorImporter::~TensorImporter() = default;

const llvm::MemoryBuffer *TensorImporter::mapExternal(StringRef location,
                                                      std::string &error) {
  auto it = external.find(location);
  if (it != external.end())
    return it->second.get();
  // As onnxruntime: the location is relative, and the file it names, once
  // symbolic links are resolved, lies inside the model's directory.
  auto outside = [&]() {
    error = "external data location '" + location.str() +
            "' must be a relative path inside the model's directory";
    return nullptr;
  };
  if (location.empty() || llvm::sys::path::is_absolute(location) ||
      llvm::sys::path::has_root_name(location))
    return outside();
  for (StringRef part : llvm::make_range(llvm::sys::path::begin(location),
                                         llvm::sys::path::end(location)))
    if (part == "..")
      return outside();
  SmallString<256> path(modelDir);
  llvm::sys::path::append(path, location);
  SmallString<256> realDir, realFile;
  if (std::error_code ec = llvm::sys::fs::real_path(path, realFile)) {
    error = "cannot read external data file '" + path.str().str() +
            "': " + ec.message();
    return nullptr;
  }
  if (std::error_code ec = llvm::sys::fs::real_path(modelDir, realDir)) {
    error = "cannot resolve the model's directory '" + modelDir +
            "': " + ec.message();
    return nullptr;
  }
  StringRef rel(realFile);
  if (!rel.consume_front(realDir) ||
      !(rel.empty() || llvm::sys::path::is_separator(rel.front()))) {
    error = "external data location '" + location.str() + "' resolves to '" +
            realFile.str().str() + "', outside the model's directory '" +
            realDir.str().str() + "' (through a symbolic link)";
    return nullptr;
  }
  if (!llvm::sys::fs::is_regular_file(realFile)) {
    error =
        "external data file '" + path.str().str() + "' is not a regular file";
    return nullptr;
  }
  auto buf = llvm::MemoryBuffer::getFile(realFile, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    error = "cannot read external data file '" + path.str().str() +
            "': " + buf.getError().message();
    return nullptr;
  }
  // A mapped file: passes that have read a weight may drop its pages.
  std::shared_ptr<llvm::MemoryBuffer> shared;
  if ((*buf)->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap) {
    gatec::common::registerFileMapping((*buf)->getBufferStart(),
                                       (*buf)->getBufferSize());
    shared.reset(buf->release(), [](llvm::MemoryBuffer *b) {
      gatec::common::unregisterFileMapping(b->getBufferStart());
      delete b;
    });
  } else {
    shared = std::move(*buf);
  }
  external[location] = shared;
  return shared.get();
}

namespace {
size_t byteWidth(Type e) {
  return e.isInteger(1) ? 1 : (e.getIntOrFloatBitWidth() + 7) / 8;
}

/// Bytes of the typed repeated fields, in the tensor's element layout.
bool typedFieldBytes(const TensorProto &t, Type e, int64_t n,
                     std::vector<char> &out, std::string &error) {
  size_t w = byteWidth(e);
  auto mismatch = [&](int64_t have) {
    error = "tensor '" + t.name() + "' has " + std::to_string(have) +
            " values for " + std::to_string(n) + " elements";
    return false;
  };
  // Check the number of values before allocating anything.
  int64_t have;
  switch (t.data_type()) {
  case TensorProto::FLOAT:
    have = t.float_data_size();
    break;
  case TensorProto::DOUBLE:
    have = t.double_data_size();
    break;
  case TensorProto::INT64:
    have = t.int64_data_size();
    break;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    have = t.uint64_data_size();
    break;
  default:
    have = t.int32_data_size();
    break;
  }
  if (have != n)
    return mismatch(have);
  out.resize(n * w);
  if (n == 0) // an empty tensor: no memcpy from the fields' null data()
    return true;
  switch (t.data_type()) {
  case TensorProto::FLOAT:
    if (t.float_data_size() != n)
      return mismatch(t.float_data_size());
    memcpy(out.data(), t.float_data().data(), n * 4);
    return true;
  case TensorProto::DOUBLE:
    if (t.double_data_size() != n)
      return mismatch(t.double_data_size());
    memcpy(out.data(), t.double_data().data(), n * 8);
    return true;
  case TensorProto::INT64:
    if (t.int64_data_size() != n)
      return mismatch(t.int64_data_size());
    memcpy(out.data(), t.int64_data().data(), n * 8);
    return true;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    if (t.uint64_data_size() != n)
      return mismatch(t.uint64_data_size());
    for (int64_t i = 0; i < n; ++i) {
      uint64_t v = t.uint64_data(i);
      memcpy(out.data() + i * w, &v, w);
    }
    return true;
  default:
    // int32_data holds INT32, INT16, INT8, UINT16, UINT8, BOOL, and the bit
    // patterns of FLOAT16 / BFLOAT16.
    if (t.int32_data_size() != n)
      return mismatch(t.int32_data_size());
    for (int64_t i = 0; i < n; ++i) {
      int32_t v = t.int32_data(i);
      memcpy(out.data() + i * w, &v, w);
    }
    return true;
  }
}
} // namespace

ElementsAttr TensorImporter::import(TensorProto &t, std::string &error) {
  Type e = elementTypeOf(ctx, t.data_type());
  if (!e) {
    error = "tensor '" + t.name() + "' has unsupported data type " +
            dataTypeName(t.data_type());
    return {};
  }
  SmallVector<int64_t> shape;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) {
      error = "tensor '" + t.name() + "' has a negative dimension";
      return {};
    }
    if (d > 0 && n > (int64_t(1) << 40) / d) {
      error = "tensor '" + t.name() + "' is too large";
      return {};
    }
    shape.push_back(d);
    n *= d;
  }
  auto type = RankedTensorType::get(shape, e);
  size_t w = byteWidth(e);
  size_t bytes = n * w;

  // Locate the bytes: external file, raw_data, or typed fields.
  ArrayRef<char> data;
  std::shared_ptr<void> owner;
  std::vector<char> typed;
  if (t.data_location() == TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset" || kv.key() == "length") {
        char *end = nullptr;
        errno = 0;
        long long v = strtoll(kv.value().c_str(), &end, 10);
        if (kv.value().empty() || !end || *end || v < 0 || errno == ERANGE) {
          error = "tensor '" + t.name() + "' has an invalid external " +
                  kv.key() + " '" + kv.value() + "'";
          return {};
        }
        (kv.key() == "offset" ? offset : length) = v;
      }
    }
    if (location.empty()) {
      error = "tensor '" + t.name() + "' has external data without a location";
      return {};
    }
    // A NUL would end the path the file system sees early: another file.
    if (location.find('\0') != std::string::npos) {
      error = "tensor '" + t.name() +
              "' has an external data location with a NUL character";
      return {};
    }
    const llvm::MemoryBuffer *buf = mapExternal(location, error);
    if (!buf)
      return {};
    if (length < 0)
      length = bytes;
    // offset + length may overflow: compare with the room after offset.
    uint64_t fileSize = buf->getBufferSize();
    if ((uint64_t)length != bytes || (uint64_t)offset > fileSize ||
        (uint64_t)length > fileSize - (uint64_t)offset) {
      error = "tensor '" + t.name() + "' needs " + std::to_string(bytes) +
              " bytes at offset " + std::to_string(offset) + " of '" +
              location + "' (length " + std::to_string(length) +
              ", file size " + std::to_string(buf->getBufferSize()) + ")";
      return {};
    }
    data = ArrayRef<char>(buf->getBufferStart() + offset, bytes);
    owner = external[location];
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes) {
      error = "tensor '" + t.name() + "' has " +
              std::to_string(t.raw_data().size()) + " bytes of raw_data, " +
              "expected " + std::to_string(bytes);
      return {};
    }
    auto s = std::make_shared<std::string>();
    s->swap(*t.mutable_raw_data());
    data = ArrayRef<char>(s->data(), s->size());
    owner = s;
  } else {
    if (!typedFieldBytes(t, e, n, typed, error))
      return {};
    data = ArrayRef<char>(typed.data(), typed.size());
  }

  // Booleans are always inline: a DenseElementsAttr of i1 is bit-packed
  // (smaller than the blob) and LLVM cannot translate an i1 resource (the
  // dynamo exporter's triu masks of the chunked gated delta rule).
  if (n <= inlineLimit || e.isInteger(1)) {
    if (e.isInteger(1)) {
      SmallVector<bool> bits;
      for (int64_t i = 0; i < n; ++i)
        bits.push_back(data[i] != 0);
      return DenseElementsAttr::get(type, bits);
    }
    return DenseElementsAttr::getFromRawBuffer(type, data);
  }

  // A resource blob that references the bytes where they are (moved
  // raw_data, mapped file) when aligned, a copy otherwise.
  size_t align = std::max<size_t>(w, 1);
  AsmResourceBlob blob;
  if (owner && reinterpret_cast<uintptr_t>(data.data()) % align == 0) {
    blob = UnmanagedAsmResourceBlob::allocateWithAlign(
        data, align,
        [owner](void *, size_t, size_t) mutable { owner.reset(); });
  } else {
    blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(data, align);
  }
  std::string blobName = t.name().empty() ? "tensor" : t.name();
  return DenseResourceElementsAttr::get(type, blobName, std::move(blob));
}

} // namespace gatec::importer
