//===- ConstantBytes.h - the bytes of a constant tensor ----------*- C++
//-*-===//
#ifndef GATEC_PASSES_COMMON_CONSTANTBYTES_H
#define GATEC_PASSES_COMMON_CONSTANTBYTES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <optional>

namespace gatec::common {

/// The row-major bytes of a non-splat constant: a dense elements attribute
/// or a dense_resource blob that is still held (an elided one has none).
inline std::optional<llvm::ArrayRef<char>> constantBytes(mlir::Attribute attr) {
  if (auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(attr)) {
    if (dense.isSplat())
      return std::nullopt;
    return dense.getRawData();
  }
  if (auto res = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(attr))
    if (mlir::AsmResourceBlob *blob = res.getRawHandle().getBlob())
      return blob->getData();
  return std::nullopt;
}

} // namespace gatec::common

#endif
