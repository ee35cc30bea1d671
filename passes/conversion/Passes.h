//===- Passes.h - lowering out of the gated dialect -------------*- C++ -*-===//
#ifndef GATEC_PASSES_CONVERSION_PASSES_H
#define GATEC_PASSES_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace gatec::conversion {
/// The discardable unit attribute of a run-time check of the data that
/// --defer-data-checks may move to the end of the run (see Passes.td).
constexpr llvm::StringLiteral kDataCheckAttr = "gatec.data_check";

#define GEN_PASS_DECL
#include "passes/conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

#endif
