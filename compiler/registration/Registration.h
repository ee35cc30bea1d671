//===- Registration.h - gatec's dialects and passes -------------*- C++ -*-===//
#ifndef GATEC_COMPILER_REGISTRATION_H
#define GATEC_COMPILER_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace gatec {

/// Registers every dialect gatec's IR may contain (gatec's own, and the
/// upstream dialects, interfaces and LLVM IR translations of the lowering).
void registerGatecDialects(mlir::DialectRegistry &registry);

/// Registers every pass of the project and of upstream MLIR (for gatec-opt
/// and for the textual pass pipelines of the phases).
void registerGatecPasses();

} // namespace gatec

#endif
