//===- WeightSection.h - weights as raw bytes in an object --------*- C++
//-*-===//
#ifndef GATEC_COMPILER_TARGET_WEIGHTSECTION_H
#define GATEC_COMPILER_TARGET_WEIGHTSECTION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace gatec {

/// Moves the initializers of the large constant globals of `module` (in the
/// LLVM dialect; `minBytes` and more) out of the IR: their bytes are
/// streamed, 64-byte aligned, into DIR/weights.o, an x86-64 ELF relocatable
/// object with one section `.rodata.gatec_weights` and a hidden global
/// symbol for each at its offset (no assembler, no copy in memory); the
/// globals become external declarations. Returns the path of weights.o, or
/// "" when no global was moved. The blobs moved are released.
mlir::FailureOr<std::string> moveWeightsToObject(mlir::ModuleOp module,
                                                 llvm::StringRef dir,
                                                 int64_t minBytes = 4096);

} // namespace gatec

#endif
