//===- GateReport.h - the list of gates a model has -------------*- C++ -*-===//
//
// `gatec MODEL --report=gates`: every gate of the gated phase with its
// location, placement (G1-G5, FFN, residual), granularity, activation,
// parameter count and bias / initial value, as the seed's "list every gate
// ... with its placement, granularity and initial value" asks.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_COMPILER_GATEREPORT_H
#define GATEC_COMPILER_GATEREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace gatec {
/// Prints the gate report of a module in (or after) the gated phase.
void printGateReport(mlir::ModuleOp module, llvm::raw_ostream &os);
} // namespace gatec

#endif
