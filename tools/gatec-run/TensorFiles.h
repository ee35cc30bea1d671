//===- TensorFiles.h - gatec-run's tensor formats -------------------------===//
//
// Reading and writing tensors as .npy files (format versions 1-3,
// little-endian, C order) and ONNX TensorProto .pb files; parsing inline
// tensors ("2x3xf32=1 2 3 4 5 6"); formatting and converting elements.
// Uses only the runtime's C++ layer (gatec/runtime.hpp) and ONNX's protobuf.
//===----------------------------------------------------------------------===//
#ifndef GATEC_RUN_TENSORFILES_H
#define GATEC_RUN_TENSORFILES_H

#include "gatec/runtime.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gatecrun {

/// Reads a .npy or .pb file (by extension; otherwise by content: the .npy
/// magic, else a TensorProto). Errors name the file.
gatec::Expected<gatec::Tensor> readTensorFile(const std::string &path);

/// Writes `t` as .npy or .pb (by extension; the TensorProto gets `name`).
gatec::Status writeTensorFile(const std::string &path, const gatec::Tensor &t,
                              const std::string &name);

/// Parses "2x3xf32" (or "f32" for a scalar, "0xf32" for an empty tensor).
bool parseTypeSpec(const std::string &spec, std::vector<int64_t> &shape,
                   gatec_dtype &dtype);

/// An inline tensor: `type` as parseTypeSpec, `values` separated by spaces
/// and/or commas; one value fills the whole tensor.
gatec::Expected<gatec::Tensor> parseInlineTensor(const std::string &type,
                                                 const std::string &values);

/// "[2, 3]".
std::string formatShape(const std::vector<int64_t> &shape);
/// Element i of a dense buffer as a double (f16/bf16 converted exactly).
double elementAsDouble(const void *data, gatec_dtype dtype, int64_t i);
/// Element i of a dense buffer as the shortest text that reads back the same
/// value of its dtype ("0.1", "-3", "true").
std::string formatElement(const void *data, gatec_dtype dtype, int64_t i);
/// "[1, 0, 2]": the multi-index of flat index i in a row-major shape.
std::string formatIndex(const std::vector<int64_t> &shape, int64_t i);

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t h);
uint16_t floatToBf16(float f);

} // namespace gatecrun

#endif
