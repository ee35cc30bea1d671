//===- WeightSection.h - weights as raw bytes in their own object -*- C++
//-*-===//
#ifndef GATEC_COMPILER_TARGET_WEIGHTSECTION_H
#define GATEC_COMPILER_TARGET_WEIGHTSECTION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace gatec {

/// Moves the initializers of the large constant globals of `module` (in the
/// LLVM dialect; `minBytes` and more) out of the IR: their bytes are
/// written, 64-byte aligned, to DIR/weights.bin, and DIR/weights.s includes
/// the file with one `.incbin` and defines each global (hidden, in .rodata)
/// at its offset, so the assembler copies the bytes into the object file at
/// copy speed; the
/// globals become external declarations. Returns the path of weights.s, or
/// "" when no global was moved. The blobs moved are released.
mlir::FailureOr<std::string> moveWeightsToAssembly(mlir::ModuleOp module,
                                                   llvm::StringRef dir,
                                                   int64_t minBytes = 4096);

} // namespace gatec

#endif
